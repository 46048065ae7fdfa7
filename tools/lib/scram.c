/* scram.c - SCRAM credentials over the wire for gregor-configs (scram.h). */
#include "scram.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>
#include <openssl/rand.h>

#include "kafka.h"
#include "proto/kerr.h"
#include "wire.h"

#define SCRAM_DEFAULT_ITERATIONS 4096

static char scram_err[1024];

static int scram_mech(const char *key)
{
	return !strcmp(key, "SCRAM-SHA-256") ? 1 : !strcmp(key, "SCRAM-SHA-512") ? 2 : 0;
}

bool scram_is_key(const char *key)
{
	return scram_mech(key) != 0;
}

static struct kstr scram_kstr(const char *s)
{
	return (struct kstr){ s, (int32_t)strlen(s) };
}

/* The first broker librdkafka knows (any broker takes the call). */
static struct wire *scram_wire(rd_kafka_t *rk)
{
	const struct rd_kafka_metadata *md = wire_metadata(rk);
	int32_t node;

	if (md->broker_cnt < 1)
		kafka_die("no broker in the metadata");
	node = md->brokers[0].id;
	rd_kafka_metadata_destroy(md);
	return wire_open(rk, node);
}

/* "iterations=N,password=P" (either order) into an upsertion with a random salt; NULL or a message. */
static const char *scram_upsertion(const char *user, int mech, const char *val, struct ScramCredentialUpsertion *u,
				   struct arena *a)
{
	const char *pw = strstr(val, "password="), *it = strstr(val, "iterations=");
	uint8_t *salt = arena_calloc(a, 32, 1), *salted = arena_calloc(a, 64, 1);
	int len = mech == 2 ? 64 : 32;
	char *pass;
	int iterations = it ? atoi(it + 11) : SCRAM_DEFAULT_ITERATIONS;

	if (!pw || (pw != val && pw[-1] != ','))
		return "SCRAM credential configs must be of the form iterations=<n>,password=<password>";
	pass = strdup(pw + 9);
	if (!pass || !salt || !salted)
		kafka_die("out of memory");
	if (pw < it) /* "password=P,iterations=N": the password ends before it */
		pass[it - pw - 10] = '\0';
	if (RAND_bytes(salt, 32) != 1 ||
	    PKCS5_PBKDF2_HMAC(pass, (int)strlen(pass), salt, 32, iterations > 0 ? iterations : 1,
			      mech == 2 ? EVP_sha512() : EVP_sha256(), len, salted) != 1)
		kafka_die("cannot derive the salted password");
	free(pass);
	*u = (struct ScramCredentialUpsertion){
		scram_kstr(user), (int8_t)mech, iterations, { salt, 32 }, { salted, len }
	};
	return NULL;
}

const char *scram_alter(rd_kafka_t *rk, const char *user, char **keys, char **vals, int n)
{
	struct AlterUserScramCredentialsRequest req;
	struct AlterUserScramCredentialsResponse resp;
	const char *err = NULL;
	struct wire *wc;
	struct arena a;

	arena_init(&a, 0);
	AlterUserScramCredentialsRequest_init(&req);
	req.Deletions.v = arena_calloc(&a, (size_t)n + 1, sizeof(*req.Deletions.v));
	req.Upsertions.v = arena_calloc(&a, (size_t)n + 1, sizeof(*req.Upsertions.v));
	for (int i = 0; i < n && !err; i++) {
		if (!vals[i])
			req.Deletions.v[req.Deletions.n++] =
				(struct ScramCredentialDeletion){ scram_kstr(user), (int8_t)scram_mech(keys[i]) };
		else
			err = scram_upsertion(user, scram_mech(keys[i]), vals[i], &req.Upsertions.v[req.Upsertions.n++],
					      &a);
	}
	if (!err) {
		wc = scram_wire(rk);
		wire_call(wc, API_AlterUserScramCredentials, wire_version(wc, API_AlterUserScramCredentials, 0), &req,
			  &resp, &a);
		for (int32_t i = 0; i < resp.Results.n && !err; i++)
			if (resp.Results.v[i].ErrorCode) {
				const struct AlterUserScramCredentialsResult *r = &resp.Results.v[i];

				snprintf(scram_err, sizeof(scram_err), "%.*s (%s)",
					 r->ErrorMessage.len > 0 ? r->ErrorMessage.len : 0,
					 r->ErrorMessage.p ? r->ErrorMessage.p : "", kafka_err_name(r->ErrorCode));
				err = scram_err;
			}
		wire_close(wc);
	}
	arena_release(&a);
	return err;
}

const char *scram_describe(rd_kafka_t *rk, const char *user)
{
	struct DescribeUserScramCredentialsUser u = { user ? scram_kstr(user) : KSTR_NULL };
	struct DescribeUserScramCredentialsRequest req;
	struct DescribeUserScramCredentialsResponse resp;
	struct wire *wc = scram_wire(rk);
	const char *err = NULL;
	struct arena a;

	arena_init(&a, 0);
	DescribeUserScramCredentialsRequest_init(&req);
	if (user) {
		req.Users.v = &u;
		req.Users.n = 1;
	}
	wire_call(wc, API_DescribeUserScramCredentials, wire_version(wc, API_DescribeUserScramCredentials, 0), &req,
		  &resp, &a);
	for (int32_t i = 0; i < resp.Results.n; i++) {
		const struct DescribeUserScramCredentialsResult *r = &resp.Results.v[i];

		if (r->ErrorCode == KERR_RESOURCE_NOT_FOUND)
			continue;
		if (r->ErrorCode) {
			snprintf(scram_err, sizeof(scram_err), "%.*s (%s)",
				 r->ErrorMessage.len > 0 ? r->ErrorMessage.len : 0,
				 r->ErrorMessage.p ? r->ErrorMessage.p : "", kafka_err_name(r->ErrorCode));
			err = scram_err;
			break;
		}
		printf("SCRAM credential configs for user-principal '%.*s' are ", r->User.len, r->User.p);
		for (int32_t j = 0; j < r->CredentialInfos.n; j++)
			printf("%s%s=iterations=%d", j ? ", " : "",
			       r->CredentialInfos.v[j].Mechanism == 2 ? "SCRAM-SHA-512" : "SCRAM-SHA-256",
			       r->CredentialInfos.v[j].Iterations);
		printf("\n");
	}
	arena_release(&a);
	wire_close(wc);
	return err;
}
