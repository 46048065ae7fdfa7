/*
 * h_scram.c - DescribeUserScramCredentials and AlterUserScramCredentials
 * (KIP-554) over the SCRAM credential store (sec/scram_store.h), and the
 * lookup the SCRAM mechanism authenticates against.
 *
 * The client sends the salt and the salted password (PBKDF2 of the
 * password); the broker derives the stored and server keys from them and
 * keeps only those.  Each user named in an alteration is answered once:
 * an empty name or a name with a newline (UNACCEPTABLE_CREDENTIAL), an
 * unknown mechanism (UNSUPPORTED_SASL_MECHANISM), iterations outside
 * 4096..16384 or a salted password of the wrong length
 * (UNACCEPTABLE_CREDENTIAL), the same user and mechanism twice
 * (DUPLICATE_RESOURCE) or the deletion of a credential that is not there
 * (RESOURCE_NOT_FOUND) fail that user, and none of its changes is made.
 *
 * Single node: the store is <first log dir>/scram-credentials, written
 * before the answer (KAFKA_STORAGE_ERROR and no change if that fails).
 * Cluster mode: the store caches /config/users/<user> (the name sanitized
 * as Kafka's Sanitizer does: "a%40b" for a@b); an alteration is
 * applied here and written to ZooKeeper with a config change notification
 * (only the SCRAM keys of the znode: a user's quotas stay beside them),
 * and every broker reads the user's znode again when it sees one
 * (scram_users_changed()).  Without a ZooKeeper session the alteration is
 * refused (UNKNOWN_SERVER_ERROR), as Kafka's would fail.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/broker.h"
#include "broker/handlers.h"
#include "cluster/cluster.h"
#include "cluster/confchange.h"
#include "proto/kerr.h"
#include "sec/scram_store.h"
#include "util/log.h"

int scram_users_start(struct broker *b)
{
	char dir[PATH_MAX];
	int rc = config_first_log_dir(&b->cfg, dir, sizeof(dir));

	if (rc)
		return rc;
	rc = scram_store_open(b->cfg.zookeeper_connect ? NULL : dir, &b->scram_store);
	if (rc)
		log_error("cannot load the SCRAM credentials from '%s': %s", dir, strerror(-rc));
	else if (scram_store_count(b->scram_store))
		log_info("SCRAM credentials: %d users", scram_store_count(b->scram_store));
	return rc;
}

void scram_users_stop(struct broker *b)
{
	scram_store_close(b->scram_store);
	b->scram_store = NULL;
}

/* A NUL-terminated copy of name in the request's arena ("" for null; a NUL inside cuts it, refused as empty). */
static const char *scram_name(struct req *rq, struct kstr name)
{
	return req_cstr(rq, name);
}

/* Fills one Describe result for user: its credentials, or RESOURCE_NOT_FOUND. */
static void scram_describe_one(struct req *rq, const char *user, struct DescribeUserScramCredentialsResult *res)
{
	struct scram_cred cred;

	res->User = req_printf(rq, "%s", user);
	res->ErrorMessage = KSTR_NULL;
	res->CredentialInfos.v = req_alloc(rq, 2, sizeof(*res->CredentialInfos.v));
	for (int m = SCRAM_SHA_256; m <= SCRAM_SHA_512; m++)
		if (!scram_store_get(rq->b->scram_store, m, user, &cred))
			res->CredentialInfos.v[res->CredentialInfos.n++] =
				(struct ScramCredentialInfo){ .Mechanism = (int8_t)m, .Iterations = cred.iterations };
	if (!res->CredentialInfos.n) {
		res->ErrorCode = KERR_RESOURCE_NOT_FOUND;
		res->ErrorMessage =
			req_printf(rq, "Attempt to describe a user credential that does not exist: %s", user);
	}
}

int h_describe_user_scram_credentials(struct req *rq, const void *in, void *out)
{
	const struct DescribeUserScramCredentialsRequest *d = in;
	struct DescribeUserScramCredentialsResponse *resp = out;
	int n = d->Users.n > 0 ? d->Users.n : scram_store_count(rq->b->scram_store);

	resp->Results.v = req_alloc(rq, (size_t)n, sizeof(*resp->Results.v));
	for (int i = 0; i < n; i++) {
		struct DescribeUserScramCredentialsResult *res = &resp->Results.v[resp->Results.n];
		const char *user =
			d->Users.n > 0 ? scram_name(rq, d->Users.v[i].Name) : scram_store_user(rq->b->scram_store, i);
		bool dup = false;

		for (int j = 0; j < resp->Results.n && d->Users.n > 0; j++)
			dup |= !strcmp(resp->Results.v[j].User.p, user);
		if (dup) { /* answered once, with the error, as Kafka does */
			for (int j = 0; j < resp->Results.n; j++)
				if (!strcmp(resp->Results.v[j].User.p, user)) {
					resp->Results.v[j].ErrorCode = KERR_DUPLICATE_RESOURCE;
					resp->Results.v[j].ErrorMessage =
						req_printf(rq,
							   "Cannot describe SCRAM credentials for the same user twice "
							   "in a single request: %s",
							   user);
					resp->Results.v[j].CredentialInfos.n = 0;
				}
			continue;
		}
		resp->Results.n++;
		scram_describe_one(rq, user, res);
	}
	return H_REPLY;
}

/* One alteration, a deletion (cred unset) or an upsertion, checked. */
struct scram_op {
	const char *user;
	enum scram_mech mech;
	bool upsert;
	struct scram_cred cred;
};

/* One user of the request: its first error, if any. */
struct scram_result {
	const char *user;
	int16_t err;
	const char *msg;
};

static struct scram_result *scram_result_of(struct scram_result *res, int *nres, const char *user)
{
	for (int i = 0; i < *nres; i++)
		if (!strcmp(res[i].user, user))
			return &res[i];
	res[*nres] = (struct scram_result){ .user = user };
	return &res[(*nres)++];
}

/* Checks op (and the credential an upsertion carries): 0 or a KERR_* with *msg. */
static int16_t scram_check(struct req *rq, const struct scram_op *ops, int i, int8_t mech, const struct bytes *salt,
			   const struct bytes *salted, int32_t iterations, const char **msg)
{
	struct scram_cred cur;

	if (!ops[i].user[0] || strchr(ops[i].user, '\n') || strlen(ops[i].user) > SCRAM_USER_MAX)
		return *msg = "Username must not be empty, hold a newline or exceed 255 bytes",
		       KERR_UNACCEPTABLE_CREDENTIAL;
	if (mech != SCRAM_SHA_256 && mech != SCRAM_SHA_512)
		return *msg = "Unknown SCRAM mechanism", KERR_UNSUPPORTED_SASL_MECHANISM;
	for (int j = 0; j < i; j++)
		if (ops[j].mech == ops[i].mech && !strcmp(ops[j].user, ops[i].user))
			return *msg = "A user credential cannot be altered twice in the same request",
			       KERR_DUPLICATE_RESOURCE;
	if (!salt) /* a deletion */
		return scram_store_get(rq->b->scram_store, mech, ops[i].user, &cur)
			       ? (*msg = "Attempt to delete a user credential that does not exist",
				  KERR_RESOURCE_NOT_FOUND)
			       : 0;
	if (iterations < SCRAM_ITERATIONS_MIN)
		return *msg = "Too few iterations", KERR_UNACCEPTABLE_CREDENTIAL;
	if (iterations > SCRAM_ITERATIONS_MAX)
		return *msg = "Too many iterations", KERR_UNACCEPTABLE_CREDENTIAL;
	if (salt->len <= 0 || salt->len > SCRAM_SALT_MAX)
		return *msg = "Salt must be 1 to 128 bytes", KERR_UNACCEPTABLE_CREDENTIAL;
	if (salted->len != scram_key_len(mech))
		return *msg = "Salted password has the wrong length for its mechanism", KERR_UNACCEPTABLE_CREDENTIAL;
	return 0;
}

/* Reads and checks every deletion and upsertion into ops and res. */
static int scram_collect(struct req *rq, const struct AlterUserScramCredentialsRequest *a, struct scram_op *ops,
			 struct scram_result *res, int *nres)
{
	int n = 0;

	for (int i = 0; i < a->Deletions.n + a->Upsertions.n; i++) {
		bool del = i < a->Deletions.n;
		const struct ScramCredentialDeletion *d = del ? &a->Deletions.v[i] : NULL;
		const struct ScramCredentialUpsertion *u = del ? NULL : &a->Upsertions.v[i - a->Deletions.n];
		int8_t mech = del ? d->Mechanism : u->Mechanism;
		struct scram_result *r;
		const char *msg = NULL;
		int16_t err;

		ops[n] = (struct scram_op){ .user = scram_name(rq, del ? d->Name : u->Name),
					    .mech = mech,
					    .upsert = !del };
		r = scram_result_of(res, nres, ops[n].user);
		err = scram_check(rq, ops, n, mech, del ? NULL : &u->Salt, del ? NULL : &u->SaltedPassword,
				  del ? 0 : u->Iterations, &msg);
		if (!err && u &&
		    scram_cred_from_salted(mech, u->SaltedPassword.p, u->SaltedPassword.len, u->Salt.p, u->Salt.len,
					   u->Iterations, &ops[n].cred))
			err = KERR_UNKNOWN_SERVER_ERROR, msg = "cannot derive the credential";
		if (err && !r->err) {
			r->err = err;
			r->msg = msg;
		}
		n++;
	}
	return n;
}

/* Applies the ops of users without error (put_back: the credentials in old instead). */
static bool scram_user_failed(const struct scram_result *res, int nres, const char *user)
{
	for (int i = 0; i < nres; i++)
		if (!strcmp(res[i].user, user))
			return res[i].err != 0;
	return true;
}

/*
 * Applies the ops of users without error, keeping what each replaced in
 * old/had; put_back: puts those back instead (each user and mechanism
 * appears once, so the order does not matter).
 */
static void scram_apply(struct broker *b, const struct scram_op *ops, int n, const struct scram_result *res, int nres,
			struct scram_cred *old, bool *had, bool put_back)
{
	for (int i = 0; i < n; i++) {
		const struct scram_cred *cred = ops[i].upsert ? &ops[i].cred : NULL;

		if (scram_user_failed(res, nres, ops[i].user))
			continue;
		if (put_back) {
			cred = had[i] ? &old[i] : NULL;
		} else {
			had[i] = !scram_store_get(b->scram_store, ops[i].mech, ops[i].user, &old[i]);
		}
		scram_store_set(b->scram_store, ops[i].user, ops[i].mech, cred);
	}
}

/*
 * Cluster mode: writes each altered user's credentials to
 * /config/users/<user>, keeping its other keys (quotas).
 */
static void scram_publish(struct broker *b, const struct scram_result *res, int nres)
{
	for (int i = 0; i < nres; i++) {
		char text[2][SCRAM_CRED_TEXT_MAX], entity[CONFCHANGE_ENTITY_MAX];
		const char *names[2], *values[2];
		struct scram_cred cred;

		if (res[i].err)
			continue;
		for (int m = SCRAM_SHA_256; m <= SCRAM_SHA_512; m++) {
			names[m - SCRAM_SHA_256] = scram_mech_name(m);
			values[m - SCRAM_SHA_256] = NULL; /* removed */
			if (!scram_store_get(b->scram_store, m, res[i].user, &cred)) {
				scram_cred_format(m, &cred, text[m - SCRAM_SHA_256], sizeof(text[0]));
				values[m - SCRAM_SHA_256] = text[m - SCRAM_SHA_256];
			}
		}
		confchange_sanitize(res[i].user, entity + snprintf(entity, sizeof(entity), "users/"));
		if (cluster_entity_config_update(b->cluster, entity, names, values, 2, NULL, NULL))
			log_warn("user '%s': cannot write its SCRAM credentials to zookeeper", res[i].user);
	}
}

int h_alter_user_scram_credentials(struct req *rq, const void *in, void *out)
{
	const struct AlterUserScramCredentialsRequest *a = in;
	struct AlterUserScramCredentialsResponse *resp = out;
	int total = (a->Deletions.n > 0 ? a->Deletions.n : 0) + (a->Upsertions.n > 0 ? a->Upsertions.n : 0);
	struct scram_op *ops = req_alloc(rq, (size_t)total, sizeof(*ops));
	struct scram_result *res = req_alloc(rq, (size_t)total, sizeof(*res));
	struct scram_cred *old = req_alloc(rq, (size_t)total, sizeof(*old));
	bool *had = req_alloc(rq, (size_t)total, sizeof(*had));
	int nres = 0, n = scram_collect(rq, a, ops, res, &nres);

	for (int i = 0; i < nres && rq->b->cluster && !cluster_registered(rq->b->cluster); i++)
		if (!res[i].err) /* nothing the other brokers could learn of, nor kept after a restart */
			res[i] = (struct scram_result){ res[i].user, KERR_UNKNOWN_SERVER_ERROR,
							"not connected to zookeeper: nothing changed" };
	scram_apply(rq->b, ops, n, res, nres, old, had, false);
	if (scram_store_save(rq->b->scram_store)) {
		scram_apply(rq->b, ops, n, res, nres, old, had, true);
		for (int i = 0; i < nres; i++)
			if (!res[i].err)
				res[i] = (struct scram_result){ res[i].user, KERR_KAFKA_STORAGE_ERROR,
								"cannot write the credentials to disk" };
	} else if (rq->b->cluster) {
		scram_publish(rq->b, res, nres);
	}
	resp->Results.v = req_alloc(rq, (size_t)nres, sizeof(*resp->Results.v));
	resp->Results.n = nres;
	for (int i = 0; i < nres; i++) {
		resp->Results.v[i].User = req_printf(rq, "%s", res[i].user);
		resp->Results.v[i].ErrorCode = res[i].err;
		resp->Results.v[i].ErrorMessage = res[i].err ? req_printf(rq, "%s", res[i].msg) : KSTR_NULL;
		if (!res[i].err)
			log_info("%s: SCRAM credentials of user '%s' altered", conn_peer(rq->c), res[i].user);
	}
	return H_REPLY;
}

/* A read of /config/users/<name> in flight. */
struct scram_user_read {
	struct broker *b;
	char name[];
};

/* /config/users/<user> as read: the cache takes each mechanism's credential, or drops it. */
static void scram_on_user_config(void *arg, int err, const struct znode_config *cfg)
{
	struct scram_user_read *ur = arg;
	struct scram_cred cred;

	if (err && err != -ENOENT) {
		log_warn("user '%s': cannot read its SCRAM credentials from zookeeper: %s", ur->name, strerror(-err));
		free(ur);
		return;
	}
	for (int m = SCRAM_SHA_256; m <= SCRAM_SHA_512; m++) {
		const char *text = NULL;

		for (int i = 0; !err && i < cfg->n; i++)
			if (!strcmp(cfg->names[i], scram_mech_name(m)))
				text = cfg->values[i];
		if (text && scram_cred_parse(m, text, strlen(text), &cred)) {
			log_warn("user '%s': %s in zookeeper is not Kafka's credential; ignored", ur->name,
				 scram_mech_name(m));
			text = NULL;
		}
		scram_store_set(ur->b->scram_store, ur->name, m, text ? &cred : NULL);
	}
	log_info("user '%s': SCRAM credentials read from zookeeper", ur->name);
	free(ur);
}

void scram_users_changed(void *arg, const char *user)
{
	struct broker *b = arg;
	char name[SCRAM_USER_MAX + 1], entity[CONFCHANGE_ENTITY_MAX];
	struct scram_user_read *ur;
	size_t len;

	if (!confchange_desanitize(user, strlen(user), name, sizeof(name))) {
		log_warn("'users/%s' in zookeeper names no user; ignored", user);
		return;
	}
	len = strlen(name);
	if (!(ur = malloc(sizeof(*ur) + len + 1)))
		return;
	ur->b = b;
	memcpy(ur->name, name, len + 1);
	snprintf(entity, sizeof(entity), "users/%s", user);
	if (cluster_entity_config(b->cluster, entity, scram_on_user_config, ur))
		free(ur);
}
