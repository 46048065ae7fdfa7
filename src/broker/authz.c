/*
 * authz.c - the authorizer (authz.h): settings, the ACL file, the check.
 *
 * Settings (Kafka's): authorizer.class.name turns it on (Kafka's two
 * authorizer class names are taken, config.c refuses others), super.users
 * and allow.everyone.if.no.acl.found give the policy (sec/acl.h).
 *
 * The ACLs live in <first log dir>/acls, replaced whole on each change
 * (durable_replace_path(): a crash leaves the old file or the new one), in
 * JSON with Kafka's names for every value:
 *
 *   {"version":1,"acls":[
 *     {"resourceType":"Topic","patternType":"LITERAL","name":"t1",
 *      "principal":"User:alice","host":"*","operation":"Write",
 *      "permissionType":"Allow"}, ...]}
 *
 * A file that does not parse, or holds a binding acl_binding_check()
 * refuses, stops the broker at start-up rather than serving with fewer
 * ACLs than were granted (a lost deny would open access).
 *
 * In cluster mode the file is not used: the ACLs are the cluster's, read
 * from ZooKeeper whenever a broker changes them (cluster/aclzk.h), and a
 * change is adopted here at once and written there before the answer.
 *
 * Everything runs on the event loop thread: no lock.
 */
#include "broker/authz.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "broker/api.h"
#include "broker/broker.h"
#include "cluster/cluster.h"
#include "net/conn.h"
#include "proto/kerr.h"
#include "util/durable.h"
#include "util/log.h"

#define AUTHZ_FILE "acls"

static struct {
	bool on;
	struct acl_set acls;
	struct acl_policy policy;
	char path[PATH_MAX];
	bool unloaded; /* cluster mode, before the first read from ZooKeeper: super users only */
} authz;

bool authz_on(void)
{
	return authz.on;
}

const struct acl_set *authz_acls(void)
{
	return &authz.acls;
}

/* ---- the file ---- */

static json_t *authz_binding_json(const struct acl_binding *b)
{
	return json_pack("{s:s,s:s,s:s,s:s,s:s,s:s,s:s}", "resourceType", acl_res_name(b->res_type), "patternType",
			 acl_pattern_name(b->pattern), "name", b->name, "principal", b->principal, "host", b->host,
			 "operation", acl_op_name(b->op), "permissionType", acl_perm_name(b->perm));
}

static int authz_save(const struct acl_set *s)
{
	json_t *arr = json_array(), *root;
	char *text;
	int rc;

	for (int i = 0; arr && i < s->n; i++)
		if (json_array_append_new(arr, authz_binding_json(&s->v[i]))) {
			json_decref(arr);
			arr = NULL;
		}
	root = arr ? json_pack("{s:i,s:o}", "version", 1, "acls", arr) : NULL;
	text = root ? json_dumps(root, JSON_COMPACT) : NULL;
	json_decref(root);
	if (!text)
		return -ENOMEM;
	rc = durable_replace_path(authz.path, text, strlen(text));
	free(text);
	return rc;
}

/* One binding of the file into s; NULL or why not. */
static const char *authz_load_one(json_t *o, struct acl_set *s)
{
	const char *type, *pat, *name, *who, *host, *op, *perm;
	struct acl_binding b;
	const char *why;

	if (json_unpack(o, "{s:s,s:s,s:s,s:s,s:s,s:s,s:s}", "resourceType", &type, "patternType", &pat, "name", &name,
			"principal", &who, "host", &host, "operation", &op, "permissionType", &perm))
		return "a binding lacks a field";
	b = (struct acl_binding){ (int8_t)acl_res_parse(type),
				  (int8_t)acl_pattern_parse(pat),
				  (int8_t)acl_op_parse(op),
				  (int8_t)acl_perm_parse(perm),
				  (char *)name,
				  (char *)who,
				  (char *)host };
	why = acl_binding_check(&b);
	if (!why && acl_set_add(s, &b) < 0)
		why = "out of memory";
	return why;
}

static int authz_load(void)
{
	json_error_t jerr;
	json_t *root = json_load_file(authz.path, 0, &jerr), *arr, *o;
	const char *why = NULL;
	size_t i;

	if (!root) {
		FILE *f = fopen(authz.path, "r");

		if (!f && errno == ENOENT)
			return 0; /* no ACL yet */
		if (f)
			fclose(f);
		log_error("cannot read the ACLs in '%s': %s (line %d)", authz.path, jerr.text, jerr.line);
		return -EBADMSG;
	}
	arr = json_object_get(root, "acls");
	if (!json_is_array(arr))
		why = "no acls array";
	json_array_foreach(arr, i, o)
	{
		if (!why)
			why = authz_load_one(o, &authz.acls);
	}
	json_decref(root);
	if (why) {
		log_error("cannot read the ACLs in '%s': %s", authz.path, why);
		return -EBADMSG;
	}
	return 0;
}

/* Moves the contents of next into the set in force (next left empty). */
static void authz_adopt(struct acl_set *next)
{
	acl_set_release(&authz.acls);
	authz.acls = *next;
	acl_set_init(next);
}

void authz_zk_loaded(void *arg, struct acl_set *set)
{
	(void)arg;
	authz.unloaded = false;
	if (authz.acls.n != set->n)
		log_info("ACLs from zookeeper: %d", set->n);
	authz_adopt(set);
}

/* A commit in ZooKeeper under way: the request, and the set to restore if it fails. */
struct authz_pending {
	struct req *rq;
	authz_done_fn *done;
	struct acl_set prev;
};

static void authz_zk_written(void *arg, int err)
{
	struct authz_pending *p = arg;

	if (err)
		authz_adopt(&p->prev); /* the next reload from ZooKeeper settles it anyway */
	p->done(p->rq, err);
	acl_set_release(&p->prev);
	free(p);
}

static int authz_commit_zk(struct req *rq, struct acl_set *next, authz_done_fn *done)
{
	struct authz_pending *p = calloc(1, sizeof(*p));
	int rc;

	if (!p)
		return -ENOMEM;
	p->rq = rq;
	p->done = done;
	p->prev = authz.acls; /* moved: next is in force from now on */
	authz.acls = *next;
	acl_set_init(next);
	rc = cluster_acls_write(rq->b->cluster, &p->prev, &authz.acls, authz_zk_written, p);
	if (rc) { /* done never runs: back to the set from before */
		authz_adopt(&p->prev);
		free(p);
		return rc;
	}
	return 1; /* p may be gone already: done ran */
}

int authz_commit(struct req *rq, struct acl_set *next, authz_done_fn *done)
{
	int rc;

	if (rq->b->cluster)
		return authz_commit_zk(rq, next, done);
	rc = authz_save(next);
	if (!rc)
		authz_adopt(next);
	return rc;
}

/* ---- lifecycle ---- */

int authz_start(struct broker *b)
{
	size_t n = strcspn(b->cfg.log_dirs, ",");
	int rc;

	acl_set_init(&authz.acls);
	authz.on = b->cfg.authorizer_class_name && b->cfg.authorizer_class_name[0];
	if (!authz.on)
		return 0;
	authz.policy.super_users = b->cfg.super_users;
	authz.policy.allow_everyone_if_no_acl_found = b->cfg.allow_everyone_if_no_acl_found;
	if (snprintf(authz.path, sizeof(authz.path), "%.*s/%s", (int)n, b->cfg.log_dirs, AUTHZ_FILE) >=
	    (int)sizeof(authz.path))
		return -ENAMETOOLONG;
	if (b->cfg.zookeeper_connect) {
		authz.unloaded = true; /* fail closed until the cluster's ACLs are read */
		log_info("authorizer on: ACLs from zookeeper (/kafka-acl)");
		return 0;
	}
	rc = authz_load();
	if (!rc)
		log_info("authorizer on: %d ACLs from '%s'", authz.acls.n, authz.path);
	return rc;
}

void authz_stop(void)
{
	acl_set_release(&authz.acls);
	authz.on = false;
}

/* ---- the check ---- */

/* OUT who, host: rq's principal (User:ANONYMOUS without one) and client address. */
static void authz_who(struct req *rq, char *who, size_t who_size, char *host, size_t host_size)
{
	const char *p = conn_principal(rq->c), *peer = conn_peer(rq->c), *colon = strrchr(peer, ':');

	/* a certificate's DN is a User principal as Kafka's default builder makes it */
	snprintf(who, who_size, "%s%s", p && !strncmp(p, "User:", 5) ? "" : "User:", p ? p : "ANONYMOUS");
	snprintf(host, host_size, "%.*s", colon ? (int)(colon - peer) : (int)strlen(peer), peer);
}

bool authz_allowed(struct req *rq, int8_t res_type, struct kstr name, int8_t op)
{
	char who[512], host[64];
	struct acl_request ar;
	bool ok;

	if (!authz.on)
		return true;
	authz_who(rq, who, sizeof(who), host, sizeof(host));
	ar = (struct acl_request){ who, host, res_type, req_cstr(rq, name), op };
	ok = authz.unloaded ? acl_is_super(&authz.policy, who) : acl_authorize(&authz.acls, &authz.policy, &ar);
	if (!ok)
		log_debug(LOGC_BROKER, "broker", "%s: %s denied %s on %s '%s'", conn_peer(rq->c), who, acl_op_name(op),
			  acl_res_name(res_type), ar.name);
	return ok;
}

bool authz_cluster(struct req *rq, int8_t op)
{
	return authz_allowed(rq, ACL_RES_CLUSTER, (struct kstr){ ACL_CLUSTER_NAME, sizeof(ACL_CLUSTER_NAME) - 1 }, op);
}

bool authz_topic(struct req *rq, struct kstr topic, int8_t op)
{
	return authz_allowed(rq, ACL_RES_TOPIC, topic, op);
}

bool authz_group(struct req *rq, struct kstr group, int8_t op)
{
	return authz_allowed(rq, ACL_RES_GROUP, group, op);
}

bool authz_txn_id(struct req *rq, struct kstr txn_id, int8_t op)
{
	return txn_id.len <= 0 || authz_allowed(rq, ACL_RES_TRANSACTIONAL_ID, txn_id, op);
}

bool authz_create_topic(struct req *rq, struct kstr topic)
{
	return authz_cluster(rq, ACL_OP_CREATE) || authz_topic(rq, topic, ACL_OP_CREATE);
}

int16_t authz_produce(struct req *rq, struct kstr txn_id, struct kstr topic)
{
	if (!authz_txn_id(rq, txn_id, ACL_OP_WRITE))
		return KERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED;
	return authz_topic(rq, topic, ACL_OP_WRITE) ? KERR_NONE : KERR_TOPIC_AUTHORIZATION_FAILED;
}

bool authz_fetch(struct req *rq, int32_t replica_id, struct kstr topic)
{
	return replica_id >= 0 ? authz_cluster(rq, ACL_OP_CLUSTER_ACTION) : authz_topic(rq, topic, ACL_OP_READ);
}

int16_t authz_cluster_kerr(struct req *rq, int8_t op)
{
	return authz_cluster(rq, op) ? KERR_NONE : KERR_CLUSTER_AUTHORIZATION_FAILED;
}

int16_t authz_group_kerr(struct req *rq, struct kstr group, int8_t op)
{
	return authz_group(rq, group, op) ? KERR_NONE : KERR_GROUP_AUTHORIZATION_FAILED;
}

int16_t authz_coordinator_kerr(struct req *rq, struct kstr key, int8_t key_type)
{
	if (key_type == 1)
		return authz_txn_id(rq, key, ACL_OP_DESCRIBE) ? KERR_NONE : KERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED;
	return key_type == 0 ? authz_group_kerr(rq, key, ACL_OP_DESCRIBE) : KERR_NONE;
}

bool authz_list_group(struct req *rq, struct kstr group)
{
	return authz_cluster(rq, ACL_OP_DESCRIBE) || authz_group(rq, group, ACL_OP_DESCRIBE);
}

int16_t authz_txn_id_kerr(struct req *rq, struct kstr txn_id, int8_t op)
{
	return authz_txn_id(rq, txn_id, op) ? KERR_NONE : KERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED;
}

int16_t authz_topic_kerr(struct req *rq, struct kstr topic, int8_t op)
{
	return authz_topic(rq, topic, op) ? KERR_NONE : KERR_TOPIC_AUTHORIZATION_FAILED;
}

int16_t authz_init_producer_id(struct req *rq, struct kstr txn_id)
{
	struct acl_request ar;
	char who[512], host[64];

	if (!authz.on)
		return KERR_NONE;
	if (txn_id.len > 0)
		return authz_txn_id_kerr(rq, txn_id, ACL_OP_WRITE);
	if (authz_cluster(rq, ACL_OP_IDEMPOTENT_WRITE))
		return KERR_NONE;
	authz_who(rq, who, sizeof(who), host, sizeof(host));
	ar = (struct acl_request){ who, host, ACL_RES_TOPIC, NULL, ACL_OP_WRITE };
	return !authz.unloaded && acl_authorize_any(&authz.acls, &authz.policy, &ar)
		       ? KERR_NONE
		       : KERR_CLUSTER_AUTHORIZATION_FAILED;
}

int16_t authz_configs_kerr(struct req *rq, int8_t config_type, struct kstr name, int8_t op)
{
	return config_type == 2 ? authz_topic_kerr(rq, name, op) : authz_cluster_kerr(rq, op);
}

int32_t authz_ops(struct req *rq, int8_t res_type, struct kstr name, int32_t ops)
{
	int32_t allowed = 0;

	for (int8_t op = ACL_OP_READ; op <= ACL_OP_IDEMPOTENT_WRITE; op++)
		if ((ops & (1 << op)) && authz_allowed(rq, res_type, name, op))
			allowed |= 1 << op;
	return allowed;
}
