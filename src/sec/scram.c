/*
 * scram.c - SCRAM server exchange and credential derivation (see
 * scram.h), with OpenSSL's PBKDF2, HMAC and digests.  Proofs are compared
 * with CRYPTO_memcmp.
 */
#include "sec/scram.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

static const EVP_MD *scram_md(enum scram_mech m)
{
	return m == SCRAM_SHA_512 ? EVP_sha512() : EVP_sha256();
}

static int scram_len(enum scram_mech m)
{
	return m == SCRAM_SHA_512 ? 64 : 32;
}

enum scram_mech scram_mech_of(const char *name, size_t len)
{
	if (len == 13 && !strncmp(name, "SCRAM-SHA-256", 13))
		return SCRAM_SHA_256;
	if (len == 13 && !strncmp(name, "SCRAM-SHA-512", 13))
		return SCRAM_SHA_512;
	return 0;
}

const char *scram_mech_name(enum scram_mech m)
{
	return m == SCRAM_SHA_512 ? "SCRAM-SHA-512" : "SCRAM-SHA-256";
}

static void scram_hmac(enum scram_mech m, const uint8_t *key, int keylen, const void *data, size_t len, uint8_t *out)
{
	unsigned outlen = 0;

	HMAC(scram_md(m), key, keylen, data, len, out, &outlen);
}

int scram_cred_derive(enum scram_mech m, const char *password, const uint8_t *salt, int salt_len, int iterations,
		      struct scram_cred *out)
{
	uint8_t salted[SCRAM_KEY_MAX], client_key[SCRAM_KEY_MAX];
	unsigned n = 0;
	int len = scram_len(m);

	memset(out, 0, sizeof(*out));
	if (salt_len <= 0 || salt_len > (int)sizeof(out->salt))
		return -EINVAL;
	memcpy(out->salt, salt, (size_t)salt_len);
	out->salt_len = salt_len;
	out->iterations = iterations;
	if (PKCS5_PBKDF2_HMAC(password, (int)strlen(password), out->salt, out->salt_len, out->iterations, scram_md(m),
			      len, salted) != 1)
		return -EIO;
	scram_hmac(m, salted, len, "Client Key", 10, client_key);
	scram_hmac(m, salted, len, "Server Key", 10, out->server_key);
	if (EVP_Digest(client_key, (size_t)len, out->stored_key, &n, scram_md(m), NULL) != 1)
		return -EIO;
	return 0;
}

int scram_cred_make(enum scram_mech m, const char *password, int iterations, struct scram_cred *out)
{
	uint8_t salt[24];

	if (RAND_bytes(salt, sizeof(salt)) != 1)
		return -EIO;
	return scram_cred_derive(m, password, salt, sizeof(salt),
				 iterations < SCRAM_ITERATIONS_MIN ? SCRAM_ITERATIONS_MIN : iterations, out);
}

/* The value of attribute a ("a=value") in a comma-separated message, or NULL; *n its length. */
static const char *scram_attr(const char *msg, char a, size_t *n)
{
	for (const char *p = msg; p; p = strchr(p, ',')) {
		if (*p == ',')
			p++;
		if (p[0] == a && p[1] == '=') {
			*n = strcspn(p + 2, ",");
			return p + 2;
		}
	}
	return NULL;
}

/* saslname unescaping: =2C is ',', =3D is '='; false if malformed or too long. */
static bool scram_name(const char *p, size_t n, char *out, size_t outlen)
{
	size_t o = 0;

	for (size_t i = 0; i < n; i++) {
		char c = p[i];

		if (c == '=') {
			if (i + 2 >= n)
				return false;
			if (!strncmp(p + i, "=2C", 3))
				c = ',';
			else if (!strncmp(p + i, "=3D", 3))
				c = '=';
			else
				return false;
			i += 2;
		}
		if (o + 1 >= outlen)
			return false;
		out[o++] = c;
	}
	out[o] = 0;
	return o > 0;
}

static int scram_b64(const uint8_t *in, int len, char *out)
{
	return EVP_EncodeBlock((unsigned char *)out, in, len);
}

/* client-first-message: "n,," or "y,," [a=authzid], then n=user,r=nonce. */
static int scram_first(struct scram_session *s, scram_lookup_fn *lookup, void *arg, const char *msg, char *out,
		       size_t outlen)
{
	const char *bare, *v;
	uint8_t rnd[18];
	char snonce[32], salt[64];
	size_t n;

	if ((msg[0] != 'n' && msg[0] != 'y') || msg[1] != ',')
		return -EACCES;
	bare = strchr(msg + 2, ',');
	if (!bare || strlen(bare + 1) >= sizeof(s->first_bare))
		return -EACCES;
	snprintf(s->first_bare, sizeof(s->first_bare), "%s", bare + 1);
	v = scram_attr(s->first_bare, 'n', &n);
	if (!v || !scram_name(v, n, s->user, sizeof(s->user)))
		return -EACCES;
	v = scram_attr(s->first_bare, 'r', &n);
	if (!v || !n || n > 80 || RAND_bytes(rnd, sizeof(rnd)) != 1)
		return -EACCES;
	scram_b64(rnd, sizeof(rnd), snonce);
	snprintf(s->nonce, sizeof(s->nonce), "%.*s%s", (int)n, v, snonce);
	if (lookup(arg, s->mech, s->user, &s->cred))
		return -EACCES;
	scram_b64(s->cred.salt, s->cred.salt_len, salt);
	snprintf(s->server_first, sizeof(s->server_first), "r=%s,s=%s,i=%d", s->nonce, salt, s->cred.iterations);
	snprintf(out, outlen, "%s", s->server_first);
	s->step = 1;
	return 0;
}

/* client-final-message: c=...,r=nonce[,...],p=proof; answers v=signature. */
static int scram_final(struct scram_session *s, const char *msg, char *out, size_t outlen)
{
	const char *p = strstr(msg, ",p="), *r;
	uint8_t sig[SCRAM_KEY_MAX], key[SCRAM_KEY_MAX], stored[SCRAM_KEY_MAX], proof[SCRAM_KEY_MAX + 3];
	char auth[1200], v[100];
	int len = scram_len(s->mech), plen;
	unsigned n = 0;
	size_t rn;

	r = scram_attr(msg, 'r', &rn);
	/* the nonce must end with ours (librdkafka 2.0 repeats its own part before it; Kafka takes that) */
	if (!p || !r || rn < strlen(s->nonce) || strncmp(r + rn - strlen(s->nonce), s->nonce, strlen(s->nonce)) ||
	    strlen(p + 3) > 4 * sizeof(proof) / 3)
		return -EACCES;
	plen = EVP_DecodeBlock(proof, (const unsigned char *)p + 3, (int)strlen(p + 3));
	if (plen < len || plen > len + 2)
		return -EACCES;
	if ((size_t)snprintf(auth, sizeof(auth), "%s,%s,%.*s", s->first_bare, s->server_first, (int)(p - msg), msg) >=
	    sizeof(auth))
		return -EACCES;
	scram_hmac(s->mech, s->cred.stored_key, len, auth, strlen(auth), sig);
	for (int i = 0; i < len; i++)
		key[i] = proof[i] ^ sig[i];
	if (EVP_Digest(key, (size_t)len, stored, &n, scram_md(s->mech), NULL) != 1 ||
	    CRYPTO_memcmp(stored, s->cred.stored_key, (size_t)len))
		return -EACCES;
	scram_hmac(s->mech, s->cred.server_key, len, auth, strlen(auth), sig);
	scram_b64(sig, len, v);
	snprintf(out, outlen, "v=%s", v);
	s->step = 2;
	return 1;
}

int scram_step(struct scram_session *s, scram_lookup_fn *lookup, void *arg, const uint8_t *msg, size_t len, char *out,
	       size_t outlen)
{
	char text[1024];

	if (len >= sizeof(text) || memchr(msg, 0, len))
		return -EACCES;
	memcpy(text, msg, len);
	text[len] = 0;
	if (s->step == 0)
		return scram_first(s, lookup, arg, text, out, outlen);
	if (s->step == 1)
		return scram_final(s, text, out, outlen);
	return -EACCES;
}
