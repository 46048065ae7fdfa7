/*
 * confchange.c - writing and following /config/changes (confchange.h).
 */
#include "cluster/confchange.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zookeeper/zookeeper.h>

#include "cluster/zk.h"
#include "cluster/znode.h"
#include "util/clock.h"
#include "util/log.h"

#define CONFCHANGE_TOPICS "topics/"
#define CONFCHANGE_USERS "users/"
#define CONFCHANGE_CLIENTS "clients/"
#define CONFCHANGE_EXPIRY_MS (15 * 60 * 1000) /* Kafka's changeExpirationMs */

void confchange_init(struct confchange *cc, struct zk *zk, confchange_topic_fn *on_topic, void *arg)
{
	*cc = (struct confchange){ .zk = zk, .last_seq = -1, .on_topic = on_topic, .arg = arg };
}

void confchange_on_user(struct confchange *cc, confchange_topic_fn *on_user, void *arg)
{
	cc->on_user = on_user;
	cc->user_arg = arg;
}

void confchange_on_quota(struct confchange *cc, confchange_topic_fn *on_quota, void *arg)
{
	cc->on_quota = on_quota;
	cc->quota_arg = arg;
}

void confchange_stop(struct confchange *cc)
{
	cc->stopped = true;
}

bool confchange_watches(const char *path)
{
	return path && !strcmp(path, ZNODE_CONFIG_CHANGES);
}

/* A notification being read: its name, to purge it once it is old; apply: new, act on it. */
struct confchange_get {
	struct confchange *cc;
	bool apply;
	char path[128];
};

static void confchange_ignore(void *arg, const struct zk_reply *rep)
{
	(void)arg;
	(void)rep; /* purged, or purged already by another broker */
}

/* Tells whom it concerns of a change to entity ("topics/<t>", "users/<u>", "clients/<c>", "users/<u>/clients/<c>"). */
static void confchange_dispatch(struct confchange *cc, const char *entity)
{
	bool user = !strncmp(entity, CONFCHANGE_USERS, strlen(CONFCHANGE_USERS));

	if (!strncmp(entity, CONFCHANGE_TOPICS, strlen(CONFCHANGE_TOPICS)) && cc->on_topic)
		cc->on_topic(cc->arg, entity + strlen(CONFCHANGE_TOPICS));
	if (user && !strchr(entity + strlen(CONFCHANGE_USERS), '/') && cc->on_user)
		cc->on_user(cc->user_arg, entity + strlen(CONFCHANGE_USERS));
	if ((user || !strncmp(entity, CONFCHANGE_CLIENTS, strlen(CONFCHANGE_CLIENTS))) && cc->on_quota)
		cc->on_quota(cc->quota_arg, entity);
}

static void confchange_on_get(void *arg, const struct zk_reply *rep)
{
	struct confchange_get *get = arg;
	struct confchange *cc = get->cc;
	char entity[CONFCHANGE_ENTITY_MAX];

	if (cc->stopped || rep->rc != ZOK) {
		free(get);
		return; /* gone (purged) or the session lost: the next listing sees what is left */
	}
	/* Kafka's brokers delete a notification 15 minutes after it was made; any broker may */
	if (rep->ctime_ms > 0 && clock_wall_ms() - rep->ctime_ms > CONFCHANGE_EXPIRY_MS &&
	    zk_delete(cc->zk, get->path, -1, confchange_ignore, NULL) == 0)
		log_info("config change notification %s purged (older than 15 minutes)", get->path);
	if (!get->apply) {
		free(get);
		return;
	}
	free(get);
	if (rep->data_len < 0 || znode_config_change_decode(rep->data, (size_t)rep->data_len, entity, sizeof(entity))) {
		log_warn("a config change notification is not Kafka's; ignored");
		return;
	}
	confchange_dispatch(cc, entity);
}

/* The sequence number of a child name, -1 if it is not a notification. */
static int64_t confchange_seq(const char *name)
{
	size_t n = strlen(ZNODE_CONFIG_CHANGE_PREFIX);
	char *end;
	long long v;

	if (strncmp(name, ZNODE_CONFIG_CHANGE_PREFIX, n) || name[n] < '0' || name[n] > '9')
		return -1;
	errno = 0;
	v = strtoll(name + n, &end, 10);
	return errno || *end ? -1 : v;
}

static void confchange_on_children(void *arg, const struct zk_reply *rep)
{
	struct confchange *cc = arg;
	int64_t newest = cc->last_seq;

	if (cc->stopped || rep->rc != ZOK)
		return;
	/* every notification is read: the new ones to act on, all to purge the old (as Kafka's listener does) */
	for (int i = 0; i < rep->nchildren; i++) {
		int64_t seq = confchange_seq(rep->children[i]);
		struct confchange_get *get;

		if (seq < 0)
			continue;
		if (!(get = malloc(sizeof(*get))))
			return; /* the next listing handles it */
		get->cc = cc;
		get->apply = seq > cc->last_seq;
		if (seq > newest)
			newest = seq;
		snprintf(get->path, sizeof(get->path), "%s/%s", ZNODE_CONFIG_CHANGES, rep->children[i]);
		if (zk_get(cc->zk, get->path, false, confchange_on_get, get)) {
			free(get);
			return; /* not connected: the next listing handles it */
		}
	}
	cc->last_seq = newest;
}

/* A listing of /config/<prefix> being read: each child is an entity "<prefix>/<child>". */
struct confchange_list {
	struct confchange *cc;
	char prefix[CONFCHANGE_ENTITY_MAX];
};

static int confchange_list(struct confchange *cc, const char *prefix);

static void confchange_on_list(void *arg, const struct zk_reply *rep)
{
	struct confchange_list *l = arg;
	struct confchange *cc = l->cc;
	char entity[CONFCHANGE_ENTITY_MAX];

	for (int i = 0; !cc->stopped && rep->rc == ZOK && i < rep->nchildren; i++) {
		if (snprintf(entity, sizeof(entity), "%s/%s", l->prefix, rep->children[i]) >= (int)sizeof(entity))
			continue;
		confchange_dispatch(cc, entity);
		if (!strcmp(l->prefix, "users") && cc->on_quota) { /* and the user's client-ids */
			snprintf(entity, sizeof(entity), "users/%s/clients", rep->children[i]);
			confchange_list(cc, entity);
		}
	}
	free(l);
}

static int confchange_list(struct confchange *cc, const char *prefix)
{
	struct confchange_list *l = malloc(sizeof(*l));
	char path[CONFCHANGE_ENTITY_MAX + 16];

	if (!l)
		return -ENOMEM;
	l->cc = cc;
	snprintf(l->prefix, sizeof(l->prefix), "%s", prefix);
	snprintf(path, sizeof(path), "/config/%s", prefix);
	if (zk_children(cc->zk, path, false, confchange_on_list, l)) {
		free(l);
		return -ENOTCONN;
	}
	return 0;
}

void confchange_load_users(struct confchange *cc)
{
	if (cc->stopped || (!cc->on_user && !cc->on_quota))
		return;
	if (confchange_list(cc, "users") || (cc->on_quota && confchange_list(cc, "clients")))
		log_warn("cannot list /config/users and /config/clients (not connected)");
}

void confchange_run(struct confchange *cc)
{
	if (!cc->stopped && zk_children(cc->zk, ZNODE_CONFIG_CHANGES, true, confchange_on_children, cc))
		log_warn("cannot list %s (not connected)", ZNODE_CONFIG_CHANGES);
}

size_t confchange_sanitize(const char *name, char *out)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t n = 0;

	for (const unsigned char *p = (const unsigned char *)name; *p; p++)
		if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '.' ||
		    *p == '-' || *p == '_') {
			out[n++] = (char)*p;
		} else {
			out[n++] = '%';
			out[n++] = hex[*p >> 4];
			out[n++] = hex[*p & 15];
		}
	out[n] = '\0';
	return n;
}

bool confchange_desanitize(const char *s, size_t len, char *out, size_t size)
{
	size_t n = 0;

	for (size_t i = 0; i < len; i++) {
		unsigned v = (unsigned char)s[i];

		if (s[i] == '%' && (i + 2 >= len || sscanf(s + i + 1, "%2x", &v) != 1 || !v))
			return false;
		if (s[i] == '%')
			i += 2;
		else if (s[i] == '+')
			v = ' ';
		if (n + 1 >= size)
			return false;
		out[n++] = (char)v;
	}
	out[n] = '\0';
	return n > 0;
}

/* A ZooKeeper outcome as 0, -ENOENT (no such znode), -ENOTCONN (not taken: no session) or -EIO. */
static int confchange_errno(int rc)
{
	return rc == ZOK       ? 0
	       : rc == ZNONODE ? -ENOENT
	       : (rc == ZCLOSING || rc == ZCONNECTIONLOSS || rc == ZSESSIONEXPIRED || rc == ZOPERATIONTIMEOUT)
		       ? -ENOTCONN
		       : -EIO;
}

/* A write in progress: the entity path ("topics/<t>") and its config document. */
struct confchange_call {
	struct zk *zk;
	char entity[CONFCHANGE_ENTITY_MAX];
	char *config;
	confchange_done_fn *done; /* NULL: a failure is only logged */
	void *arg;
};

static void confchange_call_free(struct confchange_call *call)
{
	free(call->config);
	free(call);
}

static void confchange_on_written(void *arg, const struct zk_reply *rep)
{
	struct confchange_call *call = arg;

	if (rep->rc != ZOK && rep->rc != ZCLOSING)
		log_warn("'%s': cannot write its config to zookeeper: %s", call->entity, zerror(rep->rc));
	if (call->done)
		call->done(call->arg, confchange_errno(rep->rc));
	confchange_call_free(call);
}

/* Writes /config/<entity> (it exists) and the notification of call->entity in one multi-op. */
static int confchange_notify(struct confchange_call *call)
{
	char cfg_path[CONFCHANGE_ENTITY_MAX + 16], change_path[64], *doc;
	struct zk_op ops[2] = {
		{ .type = ZK_OP_SET,
		  .path = cfg_path,
		  .data = call->config,
		  .len = (int)strlen(call->config),
		  .version = -1 },
		{ .type = ZK_OP_CREATE, .path = change_path, .sequential = true },
	};
	int rc;

	snprintf(cfg_path, sizeof(cfg_path), "/config/%s", call->entity);
	snprintf(change_path, sizeof(change_path), "%s/%s", ZNODE_CONFIG_CHANGES, ZNODE_CONFIG_CHANGE_PREFIX);
	doc = znode_config_change_encode(call->entity);
	if (!doc)
		return -ENOMEM;
	ops[1].data = doc;
	ops[1].len = (int)strlen(doc);
	rc = zk_multi(call->zk, ops, 2, confchange_on_written, call);
	free(doc);
	return rc ? -ENOTCONN : 0;
}

int confchange_write(struct zk *zk, const char *topic, const char *config, confchange_done_fn *done, void *arg)
{
	struct confchange_call *call = calloc(1, sizeof(*call));
	int rc;

	if (!call || !(call->config = strdup(config))) {
		free(call);
		return -ENOMEM;
	}
	*call = (struct confchange_call){ .zk = zk, .config = call->config, .done = done, .arg = arg };
	snprintf(call->entity, sizeof(call->entity), "%s%s", CONFCHANGE_TOPICS, topic);
	rc = confchange_notify(call);
	if (rc)
		confchange_call_free(call);
	return rc;
}

/* A read-modify-write of /config/<entity> in progress (confchange_update()). */
struct confchange_update {
	struct zk *zk;
	char entity[CONFCHANGE_ENTITY_MAX];
	int n, tries;
	char **names, **values; /* values[i] NULL: remove names[i] */
	confchange_done_fn *done;
	void *arg;
};

#define CONFCHANGE_UPDATE_TRIES 8 /* another broker wrote in between: read again */

static void confchange_update_free(struct confchange_update *up)
{
	for (int i = 0; i < up->n; i++) {
		free(up->names[i]);
		free(up->values[i]);
	}
	free(up->names);
	free(up->values);
	free(up);
}

static void confchange_update_end(struct confchange_update *up, int err)
{
	if (err && err != -ENOTCONN)
		log_warn("'%s': cannot write its config to zookeeper: %s", up->entity, strerror(-err));
	if (up->done)
		up->done(up->arg, err);
	confchange_update_free(up);
}

static int confchange_update_read(struct confchange_update *up);

static void confchange_update_on_written(void *arg, const struct zk_reply *rep)
{
	struct confchange_update *up = arg;

	if ((rep->rc == ZBADVERSION || rep->rc == ZNODEEXISTS || rep->rc == ZNONODE) &&
	    ++up->tries < CONFCHANGE_UPDATE_TRIES && !confchange_update_read(up))
		return; /* raced with another writer: read it again */
	confchange_update_end(up, confchange_errno(rep->rc));
}

/* The document up's edits make of cur (the znode's config; every other key is kept).  NULL: no memory. */
static char *confchange_update_merge(const struct confchange_update *up, const struct znode_config *cur)
{
	const char **names = calloc((size_t)(cur->n + up->n + 1), sizeof(*names));
	const char **values = calloc((size_t)(cur->n + up->n + 1), sizeof(*values));
	char *doc = NULL;
	int n = 0;

	if (names && values) {
		for (int i = 0; i < cur->n; i++) {
			bool edited = false;

			for (int j = 0; j < up->n; j++)
				edited |= !strcmp(cur->names[i], up->names[j]);
			if (!edited) {
				names[n] = cur->names[i];
				values[n++] = cur->values[i];
			}
		}
		for (int j = 0; j < up->n; j++)
			if (up->values[j]) {
				names[n] = up->names[j];
				values[n++] = up->values[j];
			}
		doc = znode_topic_config_encode(names, values, n);
	}
	free(names);
	free(values);
	return doc;
}

/* /config/<entity> as read (or missing): written back with the edits, versioned, with a notification. */
static void confchange_update_on_read(void *arg, const struct zk_reply *rep)
{
	struct confchange_update *up = arg;
	struct znode_config cur = { 0 };
	char path[CONFCHANGE_ENTITY_MAX + 16], change_path[64], *doc, *note;
	struct zk_op ops[2] = { { .path = path }, { .type = ZK_OP_CREATE, .path = change_path, .sequential = true } };
	int err = rep->rc == ZNONODE ? 0 : confchange_errno(rep->rc);

	if (!err && rep->rc == ZOK && rep->data_len > 0 &&
	    znode_topic_config_decode(rep->data, (size_t)rep->data_len, &cur))
		err = -EBADMSG; /* not Kafka's: not overwritten */
	doc = err ? NULL : confchange_update_merge(up, &cur);
	note = err ? NULL : znode_config_change_encode(up->entity);
	znode_topic_config_free(&cur);
	if (!err && (!doc || !note))
		err = -ENOMEM;
	snprintf(path, sizeof(path), "/config/%s", up->entity);
	snprintf(change_path, sizeof(change_path), "%s/%s", ZNODE_CONFIG_CHANGES, ZNODE_CONFIG_CHANGE_PREFIX);
	ops[0].type = rep->rc == ZNONODE ? ZK_OP_CREATE : ZK_OP_SET;
	ops[0].version = rep->version;
	ops[0].data = doc;
	ops[0].len = doc ? (int)strlen(doc) : 0;
	ops[1].data = note;
	ops[1].len = note ? (int)strlen(note) : 0;
	if (!err && zk_multi(up->zk, ops, 2, confchange_update_on_written, up))
		err = -ENOTCONN;
	free(doc);
	free(note);
	if (err)
		confchange_update_end(up, err);
}

/* The parents of a znode to create are there (ZooKeeper's create needs them): read it. */
static void confchange_update_on_parent(void *arg, const struct zk_reply *rep)
{
	struct confchange_update *up = arg;

	if (rep->rc != ZOK || confchange_update_read(up))
		confchange_update_end(up, rep->rc != ZOK ? confchange_errno(rep->rc) : -ENOTCONN);
}

static int confchange_update_read(struct confchange_update *up)
{
	char path[CONFCHANGE_ENTITY_MAX + 16];

	snprintf(path, sizeof(path), "/config/%s", up->entity);
	return zk_get(up->zk, path, false, confchange_update_on_read, up) ? -ENOTCONN : 0;
}

int confchange_update(struct zk *zk, const char *entity, const char *const *names, const char *const *values, int n,
		      confchange_done_fn *done, void *arg)
{
	struct confchange_update *up = calloc(1, sizeof(*up));
	char parent[CONFCHANGE_ENTITY_MAX + 16];
	bool oom = !up;
	int rc;

	if (up) {
		*up = (struct confchange_update){ .zk = zk, .n = n, .done = done, .arg = arg };
		up->names = calloc((size_t)n + 1, sizeof(char *));
		up->values = calloc((size_t)n + 1, sizeof(char *));
		oom = !up->names || !up->values || strlen(entity) >= sizeof(up->entity);
		for (int i = 0; !oom && i < n; i++)
			oom = !(up->names[i] = strdup(names[i])) || (values[i] && !(up->values[i] = strdup(values[i])));
	}
	if (oom) {
		if (up)
			confchange_update_free(up);
		return -ENOMEM;
	}
	snprintf(up->entity, sizeof(up->entity), "%s", entity);
	snprintf(parent, sizeof(parent), "/config/%s", entity);
	*strrchr(parent, '/') = '\0';
	rc = zk_ensure_path(zk, parent, confchange_update_on_parent, up) ? -ENOTCONN : 0;
	if (rc)
		confchange_update_free(up);
	return rc;
}

struct confchange_read_call {
	cluster_config_fn *done;
	void *arg;
};

static void confchange_on_read(void *arg, const struct zk_reply *rep)
{
	struct confchange_read_call *call = arg;
	struct znode_config cfg = { 0 };
	int err = confchange_errno(rep->rc);

	if (!err && rep->data_len > 0 && znode_topic_config_decode(rep->data, (size_t)rep->data_len, &cfg))
		err = -EBADMSG;
	call->done(call->arg, err, &cfg);
	znode_topic_config_free(&cfg);
	free(call);
}

int confchange_read(struct zk *zk, const char *entity, cluster_config_fn *done, void *arg)
{
	struct confchange_read_call *call = malloc(sizeof(*call));
	char path[CONFCHANGE_ENTITY_MAX + 16];

	if (!call)
		return -ENOMEM;
	*call = (struct confchange_read_call){ done, arg };
	snprintf(path, sizeof(path), "/config/%s", entity);
	if (zk_get(zk, path, false, confchange_on_read, call)) {
		free(call);
		return -ENOTCONN;
	}
	return 0;
}
