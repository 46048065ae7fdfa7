/*
 * test_scram.c - the SCRAM server (sec/scram.h) against RFC 7677's
 * SCRAM-SHA-256 example: the credential derived from "pencil", the proof
 * accepted and the server signature answered; a changed proof, a foreign
 * nonce and a second final message refused; and client-first parsing
 * (escaped names, unknown users, malformed headers).
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rfc7677),
		cmocka_unit_test(test_client_first),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
