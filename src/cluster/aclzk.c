/*
 * aclzk.c - the ACLs of a cluster in ZooKeeper (aclzk.h): reading every
 * ACL znode, writing changed resources and their change notifications.
 */
#include "cluster/aclzk.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zookeeper/zookeeper.h>

#include "cluster/zk.h"
#include "util/log.h"

#define ACLZK_LITERAL "/kafka-acl"
#define ACLZK_PREFIXED "/kafka-acl-extended/prefixed"
#define ACLZK_CHANGES "/kafka-acl-changes"
#define ACLZK_EXT_CHANGES "/kafka-acl-extended-changes"
#define ACLZK_CHANGE_PREFIX "acl_changes_"
#define ACLZK_PATH_MAX 512

static const int8_t aclzk_types[] = { ACL_RES_TOPIC, ACL_RES_GROUP, ACL_RES_CLUSTER, ACL_RES_TRANSACTIONAL_ID };
static const int8_t aclzk_patterns[] = { ACL_PAT_LITERAL, ACL_PAT_PREFIXED };

void aclzk_init(struct aclzk *az, struct zk *zk, aclzk_loaded_fn *on_loaded, void *arg)
{
	*az = (struct aclzk){ .zk = zk, .on_loaded = on_loaded, .arg = arg };
}

void aclzk_stop(struct aclzk *az)
{
	az->stopped = true;
}

bool aclzk_watches(const char *path)
{
	return path && (!strcmp(path, ACLZK_CHANGES) || !strcmp(path, ACLZK_EXT_CHANGES));
}

/* The znode of a resource (name NULL: the parent of every resource of the type). */
static void aclzk_path(char *buf, size_t n, int8_t pattern, int8_t type, const char *name)
{
	snprintf(buf, n, "%s/%s%s%s", pattern == ACL_PAT_PREFIXED ? ACLZK_PREFIXED : ACLZK_LITERAL, acl_res_name(type),
		 name ? "/" : "", name ? name : "");
}

static bool aclzk_same_resource(const struct acl_binding *a, const struct acl_binding *b)
{
	return a->res_type == b->res_type && a->pattern == b->pattern && !strcmp(a->name, b->name);
}

/* ---- reading ---- */

/* One reload under way: the set read so far. */
struct aclzk_load {
	struct aclzk *az;
	unsigned seq;
	int pending;
	bool failed;
	struct acl_set set;
};

/* One child listing or znode read of a reload. */
struct aclzk_item {
	struct aclzk_load *ld;
	int8_t type, pattern;
	char name[];
};

static void aclzk_load_end(struct aclzk_load *ld)
{
	if (--ld->pending > 0)
		return;
	if (!ld->failed && !ld->az->stopped && ld->seq == ld->az->seq)
		ld->az->on_loaded(ld->az->arg, &ld->set);
	acl_set_release(&ld->set);
	free(ld);
}

/* Adds the ACLs of one resource znode's document to set; false if it is not Kafka's. */
static bool aclzk_decode(const char *doc, int8_t type, int8_t pattern, const char *name, struct acl_set *set)
{
	json_t *root = json_loads(doc, 0, NULL), *acls = json_object_get(root, "acls"), *o;
	bool ok = json_is_array(acls);
	size_t i;

	json_array_foreach(acls, i, o)
	{
		const char *who, *perm, *op, *host;
		struct acl_binding b;

		if (!ok || json_unpack(o, "{s:s,s:s,s:s,s:s}", "principal", &who, "permissionType", &perm, "operation",
				       &op, "host", &host)) {
			ok = false;
			continue;
		}
		b = (struct acl_binding){
			type,        pattern,     (int8_t)acl_op_parse(op), (int8_t)acl_perm_parse(perm), (char *)name,
			(char *)who, (char *)host
		};
		ok = !acl_binding_check(&b) && acl_set_add(set, &b) >= 0;
	}
	json_decref(root);
	return ok;
}

static void aclzk_on_get(void *arg, const struct zk_reply *rep)
{
	struct aclzk_item *it = arg;
	struct aclzk_load *ld = it->ld;

	if (rep->rc == ZOK && rep->data && !aclzk_decode(rep->data, it->type, it->pattern, it->name, &ld->set))
		log_warn("the ACLs of %s '%s' in zookeeper are not Kafka's; ignored", acl_res_name(it->type), it->name);
	else if (rep->rc != ZOK && rep->rc != ZNONODE)
		ld->failed = true; /* the session went: the next one reads again */
	free(it);
	aclzk_load_end(ld);
}

static struct aclzk_item *aclzk_item_new(struct aclzk_load *ld, int8_t type, int8_t pattern, const char *name)
{
	struct aclzk_item *it = calloc(1, sizeof(*it) + strlen(name) + 1);

	if (it) {
		*it = (struct aclzk_item){ ld, type, pattern };
		strcpy(it->name, name);
	}
	return it;
}

/* Queues one request of a reload (fn: zk_get or zk_children on path); counts it, or marks the reload failed. */
static void aclzk_queue(struct aclzk_load *ld, int (*fn)(struct zk *, const char *, bool, zk_done_fn *, void *),
			const char *path, zk_done_fn *done, struct aclzk_item *it)
{
	if (!it || fn(ld->az->zk, path, false, done, it)) {
		free(it);
		ld->failed = true;
		return;
	}
	ld->pending++;
}

static void aclzk_on_children(void *arg, const struct zk_reply *rep)
{
	struct aclzk_item *parent = arg;
	struct aclzk_load *ld = parent->ld;
	char path[ACLZK_PATH_MAX];

	if (rep->rc != ZOK && rep->rc != ZNONODE)
		ld->failed = true;
	for (int i = 0; rep->rc == ZOK && i < rep->nchildren; i++) {
		aclzk_path(path, sizeof(path), parent->pattern, parent->type, rep->children[i]);
		aclzk_queue(ld, zk_get, path, aclzk_on_get,
			    aclzk_item_new(ld, parent->type, parent->pattern, rep->children[i]));
	}
	free(parent);
	aclzk_load_end(ld);
}

/* Reads every ACL znode; the newest complete reload goes to on_loaded. */
static void aclzk_reload(struct aclzk *az)
{
	struct aclzk_load *ld = calloc(1, sizeof(*ld));
	char path[ACLZK_PATH_MAX];

	if (!ld) {
		log_error("out of memory reading the ACLs from zookeeper");
		return;
	}
	ld->az = az;
	ld->seq = ++az->seq;
	ld->pending = 1; /* held until every listing is queued */
	acl_set_init(&ld->set);
	for (size_t p = 0; p < sizeof(aclzk_patterns); p++)
		for (size_t t = 0; t < sizeof(aclzk_types); t++) {
			aclzk_path(path, sizeof(path), aclzk_patterns[p], aclzk_types[t], NULL);
			aclzk_queue(ld, zk_children, path, aclzk_on_children,
				    aclzk_item_new(ld, aclzk_types[t], aclzk_patterns[p], ""));
		}
	aclzk_load_end(ld);
}

static void aclzk_on_changes(void *arg, const struct zk_reply *rep)
{
	(void)arg;
	if (rep->rc != ZOK && rep->rc != ZNONODE && rep->rc != ZCLOSING)
		log_warn("cannot list the ACL change notifications: %s", zerror(rep->rc));
}

static void aclzk_on_ensured(void *arg, const struct zk_reply *rep)
{
	struct aclzk *az = arg;
	const char *paths[] = { ACLZK_CHANGES, ACLZK_EXT_CHANGES };

	if (rep->rc != ZOK || az->stopped)
		return;
	for (size_t i = 0; i < 2; i++)
		if (zk_children(az->zk, paths[i], true, aclzk_on_changes, az))
			return;
	aclzk_reload(az);
}

static void aclzk_ignore(void *arg, const struct zk_reply *rep)
{
	(void)arg;
	(void)rep; /* the second path's reply says it all: one session's requests apply in order */
}

void aclzk_run(struct aclzk *az)
{
	if (az->stopped || !az->on_loaded)
		return;
	/* the change paths first (a watch on a missing node's children is an error), then the ACLs */
	if (zk_ensure_path(az->zk, ACLZK_CHANGES, aclzk_ignore, NULL) ||
	    zk_ensure_path(az->zk, ACLZK_EXT_CHANGES, aclzk_on_ensured, az))
		log_warn("cannot follow the ACLs in zookeeper (not connected)");
}

/* ---- writing ---- */

struct aclzk_write {
	aclzk_done_fn *done;
	void *arg;
	int pending;
	int err;
};

/* One changed resource: its znode, its new document and its notification. */
struct aclzk_res {
	struct aclzk_write *w;
	struct zk *zk;
	char path[ACLZK_PATH_MAX];
	char change_path[64];
	char *doc, *change;
};

static void aclzk_write_end(struct aclzk_write *w, int err)
{
	if (err && !w->err)
		w->err = err;
	if (--w->pending > 0)
		return;
	w->done(w->arg, w->err);
	free(w);
}

static void aclzk_res_free(struct aclzk_res *r)
{
	free(r->doc);
	free(r->change);
	free(r);
}

static void aclzk_on_written(void *arg, const struct zk_reply *rep)
{
	struct aclzk_res *r = arg;

	if (rep->rc != ZOK && rep->rc != ZCLOSING)
		log_warn("cannot write the ACLs of %s to zookeeper: %s", r->path, zerror(rep->rc));
	aclzk_write_end(r->w, rep->rc == ZOK ? 0 : -EIO);
	aclzk_res_free(r);
}

static void aclzk_on_res_ensured(void *arg, const struct zk_reply *rep)
{
	struct aclzk_res *r = arg;
	struct zk_op ops[2] = {
		{ .type = ZK_OP_SET, .path = r->path, .data = r->doc, .len = (int)strlen(r->doc), .version = -1 },
		{ .type = ZK_OP_CREATE,
		  .path = r->change_path,
		  .data = r->change,
		  .len = (int)strlen(r->change),
		  .sequential = true },
	};

	if (rep->rc == ZOK && !zk_multi(r->zk, ops, 2, aclzk_on_written, r))
		return;
	aclzk_write_end(r->w, rep->rc == ZOK ? -ENOTCONN : -EIO);
	aclzk_res_free(r);
}

/* The znode document of resource like's ACLs in s. Heap string or NULL. */
static char *aclzk_encode(const struct acl_set *s, const struct acl_binding *like)
{
	json_t *acls = json_array(), *root;
	char *doc;

	for (int i = 0; acls && i < s->n; i++)
		if (aclzk_same_resource(&s->v[i], like) &&
		    json_array_append_new(acls, json_pack("{s:s,s:s,s:s,s:s}", "principal", s->v[i].principal,
							  "permissionType", acl_perm_name(s->v[i].perm), "operation",
							  acl_op_name(s->v[i].op), "host", s->v[i].host)))
			break;
	root = acls ? json_pack("{s:i,s:o}", "version", 1, "acls", acls) : NULL;
	doc = root ? json_dumps(root, JSON_COMPACT) : NULL;
	json_decref(root);
	return doc;
}

/* Kafka's notification of a changed resource: "Type:name" (literal) or the extended JSON (prefixed). */
static char *aclzk_change_doc(const struct acl_binding *b)
{
	json_t *root;
	char *doc;

	if (b->pattern == ACL_PAT_LITERAL)
		return asprintf(&doc, "%s:%s", acl_res_name(b->res_type), b->name) < 0 ? NULL : doc;
	root = json_pack("{s:i,s:s,s:s,s:s}", "version", 1, "resourceType", acl_res_name(b->res_type), "name", b->name,
			 "patternType", "PREFIXED");
	doc = root ? json_dumps(root, JSON_COMPACT) : NULL;
	json_decref(root);
	return doc;
}

/* Whether the ACLs of resource like differ between a and b. */
static bool aclzk_differs(const struct acl_set *a, const struct acl_set *b, const struct acl_binding *like)
{
	int na = 0, nb = 0;

	for (int i = 0; i < a->n; i++)
		na += aclzk_same_resource(&a->v[i], like);
	for (int i = 0; i < b->n; i++)
		if (aclzk_same_resource(&b->v[i], like)) {
			nb++;
			if (acl_set_find(a, &b->v[i]) < 0)
				return true;
		}
	return na != nb;
}

/* Begins writing resource like (its ACLs in next). 0 or -errno. */
static int aclzk_write_res(struct aclzk *az, struct aclzk_write *w, const struct acl_set *next,
			   const struct acl_binding *like)
{
	struct aclzk_res *r = calloc(1, sizeof(*r));

	if (!r)
		return -ENOMEM;
	r->w = w;
	r->zk = az->zk;
	aclzk_path(r->path, sizeof(r->path), like->pattern, like->res_type, like->name);
	snprintf(r->change_path, sizeof(r->change_path), "%s/%s",
		 like->pattern == ACL_PAT_LITERAL ? ACLZK_CHANGES : ACLZK_EXT_CHANGES, ACLZK_CHANGE_PREFIX);
	r->doc = aclzk_encode(next, like);
	r->change = aclzk_change_doc(like);
	if (!r->doc || !r->change) {
		aclzk_res_free(r);
		return -ENOMEM;
	}
	if (zk_ensure_path(az->zk, r->path, aclzk_on_res_ensured, r)) {
		aclzk_res_free(r);
		return -ENOTCONN;
	}
	w->pending++;
	return 0;
}

/* Writes every changed resource of s (prev or next), once each. */
static int aclzk_write_set(struct aclzk *az, struct aclzk_write *w, const struct acl_set *s, const struct acl_set *prev,
			   const struct acl_set *next, const struct acl_set *seen_first)
{
	for (int i = 0; i < s->n; i++) {
		const struct acl_binding *b = &s->v[i];
		bool dup = false;
		int rc;

		for (int j = 0; j < i && !dup; j++)
			dup = aclzk_same_resource(&s->v[j], b);
		for (int j = 0; seen_first && j < seen_first->n && !dup; j++)
			dup = aclzk_same_resource(&seen_first->v[j], b);
		if (dup || !aclzk_differs(prev, next, b))
			continue;
		if ((rc = aclzk_write_res(az, w, next, b)))
			return rc;
	}
	return 0;
}

int aclzk_write(struct aclzk *az, const struct acl_set *prev, const struct acl_set *next, aclzk_done_fn *done,
		void *arg)
{
	struct aclzk_write *w = calloc(1, sizeof(*w));
	int rc;

	if (!w)
		return -ENOMEM;
	*w = (struct aclzk_write){ done, arg, 1, 0 }; /* held until every resource is begun */
	rc = aclzk_write_set(az, w, next, prev, next, NULL);
	if (!rc)
		rc = aclzk_write_set(az, w, prev, prev, next, next);
	if (rc && w->pending == 1) {
		free(w);
		return rc;
	}
	aclzk_write_end(w, rc);
	return 0;
}
