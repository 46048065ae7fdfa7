/*
 * scram.h - the server side of SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802,
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

enum scram_mech { SCRAM_SHA_256 = 1, SCRAM_SHA_512 = 2 };

struct scram_cred {
	uint8_t salt[32];
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
/* The same with a given salt (salt_len <= 32): 0 or -errno. */
int scram_cred_derive(enum scram_mech m, const char *password, const uint8_t *salt, int salt_len, int iterations,
		      struct scram_cred *out);

/* Looks up user's credential for m: 0, or -ENOENT. */
typedef int scram_lookup_fn(void *arg, enum scram_mech m, const char *user, struct scram_cred *out);

/* One exchange in progress on a connection. */
struct scram_session {
	enum scram_mech mech;
	int step; /* 0: expects client-first; 1: client-final; 2: done */
	char user[256];
	char nonce[128];        /* client nonce + server nonce */
	char first_bare[512];   /* client-first-message-bare */
	char server_first[256]; /* server-first-message */
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

#endif
