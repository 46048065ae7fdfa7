/*
 * fuzz_sasl.c - the server side of SASL as a client drives it: PLAIN
 * tokens checked against a JAAS entry (sec/sasl_plain.c), and the two
 * SCRAM messages (sec/scram.c): client-first, then client-final.  The
 * first byte picks the mechanism; for SCRAM the rest is split at the first
 * NUL into the two messages, and "NONCE" in client-final is replaced by
 * the nonce of the server's answer so the fuzzer gets past the nonce check
 * to the proof.  A message the server takes must leave the exchange in a
 * state it expects.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz/fuzz.h"
#include "sec/sasl_plain.h"
#include "sec/scram.h"

static const char *jaas = "org.apache.kafka.common.security.plain.PlainLoginModule required "
			  "user_alice=\"alice-pw\" user_b=\"b=b;'s\";";

static struct scram_cred creds[3]; /* user "alice", by enum scram_mech */

static int fuzz_lookup(void *arg, enum scram_mech m, const char *user, struct scram_cred *out)
{
	(void)arg;
	if (strcmp(user, "alice"))
		return -ENOENT;
	*out = creds[m];
	return 0;
}

/* client-final with each "NONCE" replaced by the combined nonce of server_first; malloc()ed, length in *len. */
static uint8_t *fuzz_final(const uint8_t *p, size_t n, const char *server_first, size_t *len)
{
	const char *r = strstr(server_first, "r="), *end;
	size_t nlen, at = 0;
	uint8_t *out;

	if (!r)
		return NULL;
	r += 2;
	end = strchr(r, ',');
	nlen = end ? (size_t)(end - r) : strlen(r);
	out = malloc(n * (nlen + 1) / 5 + n + 1);
	if (!out)
		abort();
	for (size_t i = 0; i < n;) {
		if (n - i >= 5 && !memcmp(p + i, "NONCE", 5)) {
			memcpy(out + at, r, nlen);
			at += nlen;
			i += 5;
		} else {
			out[at++] = p[i++];
		}
	}
	*len = at;
	return out;
}

static void fuzz_scram(enum scram_mech m, const uint8_t *data, size_t size)
{
	const uint8_t *nul = memchr(data, 0, size);
	size_t first_len = nul ? (size_t)(nul - data) : size, final_len;
	struct scram_session s = { .mech = m };
	char out[1024];
	uint8_t *final;
	int r;

	r = scram_step(&s, fuzz_lookup, NULL, data, first_len, out, sizeof(out));
	if (r != 0 || !nul)
		return;
	if (s.step != 1 || strlen(out) >= sizeof(out))
		abort(); /* a taken client-first leaves the exchange waiting for client-final */
	final = fuzz_final(nul + 1, size - first_len - 1, s.server_first, &final_len);
	if (!final)
		abort(); /* server-first always names the nonce */
	r = scram_step(&s, fuzz_lookup, NULL, final, final_len, out, sizeof(out));
	if (r == 1 && strncmp(out, "v=", 2))
		abort(); /* server-final carries the server signature */
	/* nothing is taken after the end of the exchange */
	if (r == 1 && scram_step(&s, fuzz_lookup, NULL, final, final_len, out, sizeof(out)) != -EACCES)
		abort();
	free(final);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int ready;
	char user[64];

	fuzz_quiet();
	if (!ready) {
		if (scram_cred_derive(SCRAM_SHA_256, "alice-pw", (const uint8_t *)"salt", 4, 4096,
				      &creds[SCRAM_SHA_256]) ||
		    scram_cred_derive(SCRAM_SHA_512, "alice-pw", (const uint8_t *)"salt", 4, 4096,
				      &creds[SCRAM_SHA_512]))
			abort();
		ready = 1;
	}
	if (size < 1)
		return 0;
	switch (data[0] % 3) {
	case 0:
		if (!sasl_plain_verify(jaas, data + 1, size - 1, user, sizeof(user)) && strcmp(user, "alice") &&
		    strcmp(user, "b"))
			abort(); /* only the JAAS entry's users authenticate */
		break;
	default:
		fuzz_scram(data[0] % 3 == 1 ? SCRAM_SHA_256 : SCRAM_SHA_512, data + 1, size - 1);
	}
	return 0;
}
