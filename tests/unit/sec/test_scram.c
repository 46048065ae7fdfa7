/*
 * test_scram.c - the SCRAM server (sec/scram.h) against RFC 7677's
 * SCRAM-SHA-256 example: the credential derived from "pencil", the proof
 * accepted and the server signature answered; a changed proof, a foreign
 * nonce and a second final message refused; and client-first parsing
 * (escaped names, unknown users, malformed headers); the credential from a
 * salted password (what AlterUserScramCredentials carries) equal to the one
 * from the password; Kafka's credential text written and read back, and
 * malformed texts refused.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <openssl/evp.h>

#include "sec/scram.h"

#define FIRST_BARE "n=user,r=rOprNGfwEbeRWgbNEkqO"
#define NONCE "rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
#define SERVER_FIRST "r=" NONCE ",s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
#define FINAL "c=biws,r=" NONCE ",p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
#define SERVER_FINAL "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="

static void rfc_session(struct scram_session *s)
{
	uint8_t salt[32];
	int n = EVP_DecodeBlock(salt, (const unsigned char *)"W22ZaJ0SNY7soEsUEjb6gQ==", 24);

	memset(s, 0, sizeof(*s));
	s->mech = SCRAM_SHA_256;
	s->step = 1;
	snprintf(s->first_bare, sizeof(s->first_bare), "%s", FIRST_BARE);
	snprintf(s->server_first, sizeof(s->server_first), "%s", SERVER_FIRST);
	snprintf(s->nonce, sizeof(s->nonce), "%s", NONCE);
	assert_int_equal(scram_cred_derive(SCRAM_SHA_256, "pencil", salt, n - 2, 4096, &s->cred), 0);
}

static int step(struct scram_session *s, const char *msg, char *out)
{
	return scram_step(s, NULL, NULL, (const uint8_t *)msg, strlen(msg), out, 256);
}

static void test_rfc7677(void **state)
{
	struct scram_session s;
	char out[256];

	(void)state;
	rfc_session(&s);
	assert_int_equal(step(&s, FINAL, out), 1);
	assert_string_equal(out, SERVER_FINAL);
	assert_int_equal(step(&s, FINAL, out), -EACCES); /* done: nothing more */

	rfc_session(&s);
	assert_int_equal(step(&s, "c=biws,r=" NONCE ",p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVM=", out), -EACCES);
	rfc_session(&s);
	assert_int_equal(
		step(&s, "c=biws,r=rOprNGfwEbeRWgbNEkqOother,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=", out),
		-EACCES);
	rfc_session(&s);
	assert_int_equal(step(&s, "c=biws,r=" NONCE, out), -EACCES);
}

static int lookup(void *arg, enum scram_mech m, const char *user, struct scram_cred *out)
{
	(void)arg;
	if (strcmp(user, "a,b=c"))
		return -ENOENT;
	return scram_cred_make(m, "pw", 4096, out);
}

static int first(struct scram_session *s, const char *msg, char *out)
{
	return scram_step(s, lookup, NULL, (const uint8_t *)msg, strlen(msg), out, 256);
}

static void test_client_first(void **state)
{
	struct scram_session s = { .mech = SCRAM_SHA_512 };
	char out[256];

	(void)state;
	assert_int_equal(first(&s, "n,,n=a=2Cb=3Dc,r=xyz", out), 0);
	assert_string_equal(s.user, "a,b=c");
	assert_int_equal(strncmp(out, "r=xyz", 5), 0);
	assert_non_null(strstr(out, ",i=4096"));
	assert_int_equal(s.cred.iterations, 4096);

	memset(&s, 0, sizeof(s));
	s.mech = SCRAM_SHA_512;
	assert_int_equal(first(&s, "n,,n=bob,r=xyz", out), -EACCES);
	memset(&s, 0, sizeof(s));
	assert_int_equal(first(&s, "n,,n=a=2Xb,r=xyz", out), -EACCES);
	memset(&s, 0, sizeof(s));
	assert_int_equal(first(&s, "x,,n=a,r=xyz", out), -EACCES);
	memset(&s, 0, sizeof(s));
	assert_int_equal(first(&s, "n,,n=a=2Cb=3Dc", out), -EACCES);
}

/* The client side against the server side: both mechanisms, a user name needing escapes, a wrong password refused. */
static int client_run(enum scram_mech m, const char *password)
{
	struct scram_session s = { .mech = m };
	struct scram_client cl;
	char c1[512], s1[512], c2[1024], s2[512];
	int rc;

	assert_int_equal(scram_client_first(&cl, m, "a,b=c", c1, sizeof(c1)), 0);
	assert_int_equal(scram_step(&s, lookup, NULL, (const uint8_t *)c1, strlen(c1), s1, sizeof(s1)), 0);
	assert_int_equal(scram_client_final(&cl, password, (const uint8_t *)s1, strlen(s1), c2, sizeof(c2)), 0);
	rc = scram_step(&s, lookup, NULL, (const uint8_t *)c2, strlen(c2), s2, sizeof(s2));
	if (rc != 1)
		return rc;
	return scram_client_verify(&cl, (const uint8_t *)s2, strlen(s2));
}

static void test_client(void **state)
{
	struct scram_client cl;
	char out[512];

	(void)state;
	assert_int_equal(client_run(SCRAM_SHA_256, "pw"), 0);
	assert_int_equal(client_run(SCRAM_SHA_512, "pw"), 0);
	assert_int_equal(client_run(SCRAM_SHA_512, "wrong"), -EACCES);
	assert_int_equal(scram_client_first(&cl, SCRAM_SHA_256, "u", out, sizeof(out)), 0);
	/* a nonce not extending ours, too few iterations, a forged server signature */
	assert_int_equal(
		scram_client_final(&cl, "pw", (const uint8_t *)"r=zzz,s=QSXCR+Q6sek8bf92,i=4096", 31, out, sizeof(out)),
		-EACCES);
	assert_int_not_equal(strlen(cl.nonce), 0);
	snprintf(out, sizeof(out), "r=%sX,s=QSXCR+Q6sek8bf92,i=10", cl.nonce);
	assert_int_equal(scram_client_final(&cl, "pw", (const uint8_t *)out, strlen(out), out, sizeof(out)), -EACCES);
	assert_int_equal(scram_client_verify(&cl, (const uint8_t *)"v=AAAA", 6), -EACCES);
}

/* PBKDF2 done by the client (KIP-554) gives the same keys as from the password. */
static void test_from_salted(void **state)
{
	static const uint8_t salt[] = "0123456789abcdefghij";
	struct scram_cred a, b;
	uint8_t salted[64];

	(void)state;
	for (int m = SCRAM_SHA_256; m <= SCRAM_SHA_512; m++) {
		int len = scram_key_len(m);

		assert_int_equal(PKCS5_PBKDF2_HMAC("secret", 6, salt, 20, 8192,
						   m == SCRAM_SHA_512 ? EVP_sha512() : EVP_sha256(), len, salted),
				 1);
		assert_int_equal(scram_cred_derive(m, "secret", salt, 20, 8192, &a), 0);
		assert_int_equal(scram_cred_from_salted(m, salted, len, salt, 20, 8192, &b), 0);
		assert_memory_equal(a.stored_key, b.stored_key, (size_t)len);
		assert_memory_equal(a.server_key, b.server_key, (size_t)len);
		assert_int_equal(scram_cred_from_salted(m, salted, len - 1, salt, 20, 8192, &b), -EINVAL);
		assert_int_equal(scram_cred_from_salted(m, salted, len, salt, 0, 8192, &b), -EINVAL);
	}
}

static void test_cred_text(void **state)
{
	struct scram_cred a, b;
	char text[SCRAM_CRED_TEXT_MAX];
	uint8_t salt[SCRAM_SALT_MAX];

	(void)state;
	memset(salt, 0xa5, sizeof(salt));
	for (int m = SCRAM_SHA_256; m <= SCRAM_SHA_512; m++) {
		for (int n = 1; n <= SCRAM_SALT_MAX; n += 17) {
			assert_int_equal(scram_cred_derive(m, "pw", salt, n, 4096 + n, &a), 0);
			scram_cred_format(m, &a, text, sizeof(text));
			assert_int_equal(scram_cred_parse(m, text, strlen(text), &b), 0);
			assert_int_equal(b.salt_len, n);
			assert_int_equal(b.iterations, 4096 + n);
			assert_memory_equal(a.salt, b.salt, (size_t)n);
			assert_memory_equal(a.stored_key, b.stored_key, (size_t)scram_key_len(m));
			assert_memory_equal(a.server_key, b.server_key, (size_t)scram_key_len(m));
		}
		/* the other mechanism's key length, a missing part, too few iterations, not base64 */
		assert_int_equal(scram_cred_parse(m == 1 ? 2 : 1, text, strlen(text), &b), -EINVAL);
	}
	assert_int_equal(scram_cred_parse(SCRAM_SHA_256, "salt=YQ==,stored_key=YQ==,iterations=4096", 41, &b), -EINVAL);
	scram_cred_derive(SCRAM_SHA_256, "pw", salt, 8, 4096, &a);
	scram_cred_format(SCRAM_SHA_256, &a, text, sizeof(text));
	memcpy(strstr(text, "iterations=") + 11, "4095", 4);
	assert_int_equal(scram_cred_parse(SCRAM_SHA_256, text, strlen(text), &b), -EINVAL);
	scram_cred_format(SCRAM_SHA_256, &a, text, sizeof(text));
	strstr(text, "salt=")[6] = '*';
	assert_int_equal(scram_cred_parse(SCRAM_SHA_256, text, strlen(text), &b), -EINVAL);
	assert_int_equal(scram_cred_parse(SCRAM_SHA_256, "", 0, &b), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rfc7677),     cmocka_unit_test(test_client_first), cmocka_unit_test(test_client),
		cmocka_unit_test(test_from_salted), cmocka_unit_test(test_cred_text),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
