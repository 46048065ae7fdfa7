/*
 * scram.h - the server and client sides of SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802,
 * RFC 7677) as Kafka runs it: two SASL tokens each way, credentials kept
 * as Kafka keeps them (salt, stored key, server key, iterations), never
 * the password.
 */
#ifndef GREGOR_SEC_SCRAM_H
#define GREGOR_SEC_SCRAM_H

#include <stddef.h>
#include <stdint.h>

#define SCRAM_KEY_MAX 64 /* SHA-512 */
#define SCRAM_ITERATIONS_MIN 4096
#define SCRAM_ITERATIONS_MAX 16384 /* AlterUserScramCredentials refuses more, as Kafka does */
#define SCRAM_SALT_MAX 128
/* Longest scram_cred_format() text, NUL included. */
#define SCRAM_CRED_TEXT_MAX 512

enum scram_mech { SCRAM_SHA_256 = 1, SCRAM_SHA_512 = 2 };

struct scram_cred {
	uint8_t salt[SCRAM_SALT_MAX];
	int salt_len;
	uint8_t stored_key[SCRAM_KEY_MAX];
	uint8_t server_key[SCRAM_KEY_MAX];
	int iterations;
};

/* "SCRAM-SHA-256" -> SCRAM_SHA_256, ...; 0 if not a SCRAM mechanism. */
enum scram_mech scram_mech_of(const char *name, size_t len);
const char *scram_mech_name(enum scram_mech m);

/* Derives a credential from a password with a random salt: 0 or -errno. */
int scram_cred_make(enum scram_mech m, const char *password, int iterations, struct scram_cred *out);
/* The same with a given salt (salt_len <= SCRAM_SALT_MAX): 0 or -errno. */
int scram_cred_derive(enum scram_mech m, const char *password, const uint8_t *salt, int salt_len, int iterations,
		      struct scram_cred *out);

/*
 * The credential from a salted password (PBKDF2 of the password, what
 * AlterUserScramCredentials carries; salted_len must be the digest's
 * length): the stored and server keys.  0, or -EINVAL for a bad length.
 */
int scram_cred_from_salted(enum scram_mech m, const uint8_t *salted, int salted_len, const uint8_t *salt, int salt_len,
			   int iterations, struct scram_cred *out);
/* The digest length of m: 32 or 64 bytes. */
int scram_key_len(enum scram_mech m);
/*
 * Kafka's text form of a credential, as in /config/users/<user>:
 * "salt=<b64>,stored_key=<b64>,server_key=<b64>,iterations=<n>".
 * scram_cred_format() writes it NUL-terminated (outlen >= SCRAM_CRED_TEXT_MAX);
 * scram_cred_parse() reads it back: 0, or -EINVAL if a part is missing,
 * not base64, of the wrong length or iterations below SCRAM_ITERATIONS_MIN.
 */
void scram_cred_format(enum scram_mech m, const struct scram_cred *cred, char *out, size_t outlen);
int scram_cred_parse(enum scram_mech m, const char *text, size_t len, struct scram_cred *out);

/* Looks up user's credential for m: 0, or -ENOENT. */
typedef int scram_lookup_fn(void *arg, enum scram_mech m, const char *user, struct scram_cred *out);

/* One exchange in progress on a connection. */
struct scram_session {
	enum scram_mech mech;
	int step; /* 0: expects client-first; 1: client-final; 2: done */
	char user[256];
	char nonce[128];        /* client nonce + server nonce */
	char first_bare[512];   /* client-first-message-bare */
	char server_first[512]; /* server-first-message */
	struct scram_cred cred;
};

/*
 * Takes the client's next message and writes the answer (NUL-terminated)
 * to out.  Returns 0 to go on (after client-first), 1 when the client is
 * authenticated (out: server-final), -EACCES on bad credentials or a
 * malformed message.
 */
int scram_step(struct scram_session *s, scram_lookup_fn *lookup, void *arg, const uint8_t *msg, size_t len, char *out,
	       size_t outlen);

/*
 * The client side (inter-broker connections): client-first, then
 * client-final from the server-first message, then the check of the
 * server-final signature, which proves the server knew the credential.
 */
struct scram_client {
	enum scram_mech mech;
	char nonce[64];
	char first_bare[512];
	uint8_t server_sig[SCRAM_KEY_MAX]; /* the signature server-final must carry */
};

/* Writes client-first-message "n,,n=<user>,r=<nonce>" (NUL-terminated) to out: 0 or -EINVAL. */
int scram_client_first(struct scram_client *cl, enum scram_mech m, const char *user, char *out, size_t outlen);
/*
 * Takes server-first-message msg, writes client-final-message (with the
 * proof of password) to out: 0, -EACCES for a malformed message, a nonce
 * not extending ours or iterations outside
 * SCRAM_ITERATIONS_MIN..SCRAM_ITERATIONS_MAX, -EIO or -EINVAL.
 */
int scram_client_final(struct scram_client *cl, const char *password, const uint8_t *msg, size_t len, char *out,
		       size_t outlen);
/* Checks server-final-message "v=<signature>": 0, or -EACCES. */
int scram_client_verify(const struct scram_client *cl, const uint8_t *msg, size_t len);

#endif
