/*
 * scram.c - SCRAM server exchange and credential derivation (see
 * scram.h), with OpenSSL's PBKDF2, HMAC and digests.  Proofs are compared
 * with CRYPTO_memcmp.
 */
#include "sec/scram.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
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

int scram_key_len(enum scram_mech m)
{
	return scram_len(m);
}

int scram_cred_from_salted(enum scram_mech m, const uint8_t *salted, int salted_len, const uint8_t *salt, int salt_len,
			   int iterations, struct scram_cred *out)
{
	uint8_t client_key[SCRAM_KEY_MAX];
	unsigned n = 0;
	int len = scram_len(m);

	memset(out, 0, sizeof(*out));
	if (salt_len <= 0 || salt_len > (int)sizeof(out->salt) || salted_len != len)
		return -EINVAL;
	memcpy(out->salt, salt, (size_t)salt_len);
	out->salt_len = salt_len;
	out->iterations = iterations;
	scram_hmac(m, salted, len, "Client Key", 10, client_key);
	scram_hmac(m, salted, len, "Server Key", 10, out->server_key);
	if (EVP_Digest(client_key, (size_t)len, out->stored_key, &n, scram_md(m), NULL) != 1)
		return -EIO;
	return 0;
}

int scram_cred_derive(enum scram_mech m, const char *password, const uint8_t *salt, int salt_len, int iterations,
		      struct scram_cred *out)
{
	uint8_t salted[SCRAM_KEY_MAX];
	int len = scram_len(m);

	if (salt_len <= 0 || salt_len > (int)sizeof(out->salt))
		return -EINVAL;
	if (PKCS5_PBKDF2_HMAC(password, (int)strlen(password), salt, salt_len, iterations, scram_md(m), len, salted) !=
	    1)
		return -EIO;
	return scram_cred_from_salted(m, salted, len, salt, salt_len, iterations, out);
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

/* Decodes n base64 characters into out (room for max bytes): the length, or -1. */
static int scram_unb64(const char *in, size_t n, uint8_t *out, int max)
{
	uint8_t tmp[3 * SCRAM_SALT_MAX];
	int len, pad = 0;

	if (!n || n % 4 || n / 4 * 3 > sizeof(tmp))
		return -1;
	len = EVP_DecodeBlock(tmp, (const unsigned char *)in, (int)n);
	pad = (in[n - 1] == '=') + (in[n - 2] == '=');
	if (len < 0 || len - pad > max)
		return -1;
	memcpy(out, tmp, (size_t)(len - pad));
	return len - pad;
}

void scram_cred_format(enum scram_mech m, const struct scram_cred *cred, char *out, size_t outlen)
{
	char salt[4 * SCRAM_SALT_MAX / 3 + 4], stored[4 * SCRAM_KEY_MAX / 3 + 4], server[4 * SCRAM_KEY_MAX / 3 + 4];

	scram_b64(cred->salt, cred->salt_len, salt);
	scram_b64(cred->stored_key, scram_len(m), stored);
	scram_b64(cred->server_key, scram_len(m), server);
	snprintf(out, outlen, "salt=%s,stored_key=%s,server_key=%s,iterations=%d", salt, stored, server,
		 cred->iterations);
}

/* The value of key in "k=v,k=v" text of len bytes: a pointer and *n, or NULL. */
static const char *scram_cred_value(const char *text, size_t len, const char *key, size_t *n)
{
	size_t klen = strlen(key);

	for (size_t i = 0; i < len;) {
		size_t end = i;

		while (end < len && text[end] != ',')
			end++;
		if (end - i > klen && !strncmp(text + i, key, klen) && text[i + klen] == '=') {
			*n = end - i - klen - 1;
			return text + i + klen + 1;
		}
		i = end + 1;
	}
	return NULL;
}

int scram_cred_parse(enum scram_mech m, const char *text, size_t len, struct scram_cred *out)
{
	const char *salt, *stored, *server, *iter;
	size_t nsalt, nstored, nserver, niter;
	char digits[16];
	char *end;
	long v;

	memset(out, 0, sizeof(*out));
	salt = scram_cred_value(text, len, "salt", &nsalt);
	stored = scram_cred_value(text, len, "stored_key", &nstored);
	server = scram_cred_value(text, len, "server_key", &nserver);
	iter = scram_cred_value(text, len, "iterations", &niter);
	if (!salt || !stored || !server || !iter || !niter || niter >= sizeof(digits))
		return -EINVAL;
	memcpy(digits, iter, niter);
	digits[niter] = 0;
	v = strtol(digits, &end, 10);
	if (*end || v < SCRAM_ITERATIONS_MIN || v > 1 << 30)
		return -EINVAL;
	out->iterations = (int)v;
	out->salt_len = scram_unb64(salt, nsalt, out->salt, SCRAM_SALT_MAX);
	if (out->salt_len <= 0 || scram_unb64(stored, nstored, out->stored_key, SCRAM_KEY_MAX) != scram_len(m) ||
	    scram_unb64(server, nserver, out->server_key, SCRAM_KEY_MAX) != scram_len(m))
		return -EINVAL;
	return 0;
}

/* client-first-message: "n,," or "y,," [a=authzid], then n=user,r=nonce. */
static int scram_first(struct scram_session *s, scram_lookup_fn *lookup, void *arg, const char *msg, char *out,
		       size_t outlen)
{
	const char *bare, *v;
	uint8_t rnd[18];
	char snonce[32], salt[4 * SCRAM_SALT_MAX / 3 + 4];
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
	char auth[1600], v[100];
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

/* ---- the client side ---- */

/* saslname escaping of user into out: ',' is =2C, '=' is =3D; false if it does not fit. */
static bool scram_name_escape(const char *user, char *out, size_t outlen)
{
	size_t o = 0;

	for (const char *p = user; *p; p++) {
		const char *rep = *p == ',' ? "=2C" : *p == '=' ? "=3D" : NULL;
		size_t n = rep ? 3 : 1;

		if (o + n >= outlen)
			return false;
		memcpy(out + o, rep ? rep : p, n);
		o += n;
	}
	out[o] = 0;
	return o > 0;
}

int scram_client_first(struct scram_client *cl, enum scram_mech m, const char *user, char *out, size_t outlen)
{
	char name[256];
	uint8_t rnd[24];

	memset(cl, 0, sizeof(*cl));
	cl->mech = m;
	if (!scram_name_escape(user, name, sizeof(name)) || RAND_bytes(rnd, sizeof(rnd)) != 1)
		return -EINVAL;
	scram_b64(rnd, sizeof(rnd), cl->nonce);
	snprintf(cl->first_bare, sizeof(cl->first_bare), "n=%s,r=%s", name, cl->nonce);
	if ((size_t)snprintf(out, outlen, "n,,%s", cl->first_bare) >= outlen)
		return -EINVAL;
	return 0;
}

/* server-first-message: r=nonce (ours first),s=salt,i=iterations; its nonce and salt copied out. */
static int scram_client_parse(const struct scram_client *cl, const char *msg, char *nonce, size_t noncelen,
			      uint8_t *salt, int *salt_len, int *iterations)
{
	size_t rn = 0, sn = 0, in = 0;
	const char *r = scram_attr(msg, 'r', &rn), *s = scram_attr(msg, 's', &sn), *i = scram_attr(msg, 'i', &in);

	if (!r || !s || !i || rn >= noncelen || rn <= strlen(cl->nonce) || strncmp(r, cl->nonce, strlen(cl->nonce)))
		return -EACCES;
	snprintf(nonce, noncelen, "%.*s", (int)rn, r);
	*salt_len = scram_unb64(s, sn, salt, SCRAM_SALT_MAX);
	*iterations = atoi(i);
	if (*salt_len <= 0 || *iterations < SCRAM_ITERATIONS_MIN || *iterations > SCRAM_ITERATIONS_MAX)
		return -EACCES;
	return 0;
}

int scram_client_final(struct scram_client *cl, const char *password, const uint8_t *msg, size_t len, char *out,
		       size_t outlen)
{
	char text[1024], nonce[256], auth[1600], proof_b64[100];
	uint8_t salt[SCRAM_SALT_MAX], salted[SCRAM_KEY_MAX], client_key[SCRAM_KEY_MAX], sig[SCRAM_KEY_MAX];
	int salt_len = 0, iterations = 0, klen = scram_len(cl->mech);
	struct scram_cred cred;
	size_t at;

	if (len >= sizeof(text) || memchr(msg, 0, len))
		return -EACCES;
	memcpy(text, msg, len);
	text[len] = 0;
	if (scram_client_parse(cl, text, nonce, sizeof(nonce), salt, &salt_len, &iterations))
		return -EACCES;
	if (PKCS5_PBKDF2_HMAC(password, (int)strlen(password), salt, salt_len, iterations, scram_md(cl->mech), klen,
			      salted) != 1 ||
	    scram_cred_from_salted(cl->mech, salted, klen, salt, salt_len, iterations, &cred))
		return -EIO;
	scram_hmac(cl->mech, salted, klen, "Client Key", 10, client_key);
	at = (size_t)snprintf(out, outlen, "c=biws,r=%s", nonce); /* biws: base64 of the GS2 header "n,," */
	if (at >= outlen || (size_t)snprintf(auth, sizeof(auth), "%s,%s,%s", cl->first_bare, text, out) >= sizeof(auth))
		return -EINVAL;
	scram_hmac(cl->mech, cred.stored_key, klen, auth, strlen(auth), sig);
	for (int i = 0; i < klen; i++)
		sig[i] ^= client_key[i];
	scram_b64(sig, klen, proof_b64);
	if ((size_t)snprintf(out + at, outlen - at, ",p=%s", proof_b64) >= outlen - at)
		return -EINVAL;
	scram_hmac(cl->mech, cred.server_key, klen, auth, strlen(auth), cl->server_sig);
	return 0;
}

int scram_client_verify(const struct scram_client *cl, const uint8_t *msg, size_t len)
{
	char text[256], want[100];
	size_t n = 0;
	const char *v;

	if (len >= sizeof(text) || memchr(msg, 0, len))
		return -EACCES;
	memcpy(text, msg, len);
	text[len] = 0;
	scram_b64(cl->server_sig, scram_len(cl->mech), want);
	v = scram_attr(text, 'v', &n);
	return v && n == strlen(want) && !CRYPTO_memcmp(v, want, n) ? 0 : -EACCES;
}
