/*
 * h_config.c - DescribeConfigs (v0-2), AlterConfigs (v0-1) and
 * IncrementalAlterConfigs (v0-1).
 *
 * Resources (Kafka's ConfigResource types):
 *   TOPIC  (2)  name = topic; every key of topic_config.h, with its source
 *   BROKER (4)  name = this node's id as a string, or "" for the cluster-wide
 *               dynamic defaults (none: we keep no dynamic broker configs)
 * Any other type is INVALID_REQUEST; another broker id is INVALID_REQUEST.
 *
 * Broker settings are static here (server.properties and --override), so
 * they are described as ReadOnly and altering any of them is refused with
 * INVALID_REQUEST, Kafka's answer for a key that cannot change dynamically.
 *
 * Synonyms (v1+, IncludeSynonyms) follow Kafka's order: the topic override
 * if set, then the broker key it falls back to if given in the file
 * (STATIC_BROKER_CONFIG), then that key's default (DEFAULT_CONFIG).
 *
 * Alterations are applied to a scratch copy of the topic's configs; only if
 * every key of the resource is valid (and ValidateOnly is false) does the
 * copy replace the topic's configs and get persisted with
 * registry_save_cfg(): one bad key changes nothing for that resource.
 */
#include "broker/authz.h"
#include "broker/handlers.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/broker.h"
#include "broker/registry.h"
#include "broker/topic_zk.h"
#include "proto/kerr.h"
#include "util/log.h"

enum { RES_TOPIC = 2, RES_BROKER = 4 };
enum { OP_SET = 0, OP_DELETE = 1, OP_APPEND = 2, OP_SUBTRACT = 3 };
enum cfg_kind { CFG_TOPIC, CFG_BROKER, CFG_BROKER_DEFAULT };

#define CFG_VALUE_MAX 4096

/* A response string: a copy of s in the request arena (NULL -> null). */
static struct kstr cfg_kstr(struct req *rq, const char *s)
{
	if (!s)
		return KSTR_NULL;
	return (struct kstr){ req_cstr(rq, kstr_c(s)), (int32_t)strlen(s) };
}

/*
 * Shared preamble: what a (type, name) resource denotes.  Returns KERR_NONE
 * with *kind (and *t for a topic) set, or an error with *msg.
 */
static int16_t cfg_resource(struct req *rq, int8_t type, struct kstr name, enum cfg_kind *kind, struct topic **t,
			    struct kstr *msg)
{
	const char *s = req_cstr(rq, name);
	char *end;
	long id;

	*t = NULL;
	if (type == RES_TOPIC) {
		*kind = CFG_TOPIC;
		if (!topic_name_valid(name)) {
			*msg = req_printf(rq, "Topic name '%s' is illegal", s);
			return KERR_INVALID_TOPIC_EXCEPTION;
		}
		*t = registry_find(rq->b->reg, name);
		if (*t)
			return KERR_NONE;
		*msg = req_printf(rq, "The topic '%s' does not exist.", s);
		return KERR_UNKNOWN_TOPIC_OR_PARTITION;
	}
	if (type != RES_BROKER) {
		*msg = req_printf(rq, "Unsupported resource type: %d", type);
		return KERR_INVALID_REQUEST;
	}
	*kind = s[0] ? CFG_BROKER : CFG_BROKER_DEFAULT;
	id = strtol(s, &end, 10);
	if (s[0] && (*end || id != rq->b->node_id)) {
		*msg = req_printf(rq, "Unexpected broker id, expected %d or empty string, but received %s",
				  rq->b->node_id, s);
		return KERR_INVALID_REQUEST;
	}
	return KERR_NONE;
}

/* ---- DescribeConfigs ---- */

static bool cfg_key_wanted(const struct kstr_array *keys, const char *name)
{
	if (keys->n <= 0) /* null (or empty, as Kafka treats it) = all */
		return true;
	for (int32_t i = 0; i < keys->n; i++)
		if (kstr_eq_c(keys->v[i], name))
			return true;
	return false;
}

static void cfg_add_synonym(struct req *rq, struct DescribeConfigsResponseConfig *c, const char *name,
			    const char *value, int8_t source)
{
	struct DescribeConfigsResponseSynonym *s = &c->Synonyms.v[c->Synonyms.n++];

	DescribeConfigsResponseSynonym_init(s);
	s->Name = cfg_kstr(rq, name);
	s->Value = cfg_kstr(rq, value);
	s->Source = source;
}

/* The broker-level synonyms of broker key bkey: its static value, then its default. */
static void cfg_broker_synonyms(struct req *rq, struct DescribeConfigsResponseConfig *c, const char *bkey)
{
	const struct conf_def *d = bkey ? conf_find(config_table(), bkey) : NULL;
	char val[CFG_VALUE_MAX];

	if (!d)
		return;
	if (config_is_set(&rq->b->cfg, bkey)) {
		int rc = config_get(&rq->b->cfg, bkey, val, sizeof(val), NULL);

		cfg_add_synonym(rq, c, bkey, rc == 0 ? val : NULL, CONFIG_SOURCE_STATIC_BROKER);
	}
	if (d->dflt)
		cfg_add_synonym(rq, c, bkey, d->dflt, CONFIG_SOURCE_DEFAULT);
}

/* Fills one entry; value NULL = null.  Synonyms get room for three. */
static struct DescribeConfigsResponseConfig *cfg_entry(struct req *rq, struct DescribeConfigsResponseResult *r,
						       const char *name, const char *value, int source, bool read_only)
{
	struct DescribeConfigsResponseConfig *c = &r->Configs.v[r->Configs.n++];

	DescribeConfigsResponseConfig_init(c);
	c->Name = cfg_kstr(rq, name);
	c->Value = cfg_kstr(rq, value);
	c->ReadOnly = read_only;
	c->IsDefault = source == CONFIG_SOURCE_DEFAULT;
	c->ConfigSource = (int8_t)source;
	c->IsSensitive = false;
	c->Synonyms.v = req_alloc(rq, 3, sizeof(*c->Synonyms.v));
	return c;
}

static void cfg_describe_topic(struct req *rq, const struct topic_cfg *tcfg, const struct kstr_array *keys,
			       bool synonyms, struct DescribeConfigsResponseResult *r)
{
	const struct conf_table *tab = topic_cfg_table();
	char val[CFG_VALUE_MAX];

	r->Configs.v = req_alloc(rq, tab->ndefs, sizeof(*r->Configs.v));
	for (size_t i = 0; i < tab->ndefs; i++) {
		const char *name = tab->defs[i].name;
		struct DescribeConfigsResponseConfig *c;
		int source = CONFIG_SOURCE_DEFAULT, rc;

		if (!cfg_key_wanted(keys, name))
			continue;
		rc = topic_cfg_get(tcfg, name, val, sizeof(val), &source, NULL);
		c = cfg_entry(rq, r, name, rc == 0 ? val : NULL, source, false);
		if (!synonyms)
			continue;
		if (source == CONFIG_SOURCE_DYNAMIC_TOPIC)
			cfg_add_synonym(rq, c, name, rc == 0 ? val : NULL, CONFIG_SOURCE_DYNAMIC_TOPIC);
		cfg_broker_synonyms(rq, c, topic_cfg_synonym(name));
	}
}

static void cfg_describe_broker(struct req *rq, const struct kstr_array *keys, bool synonyms,
				struct DescribeConfigsResponseResult *r)
{
	const struct conf_table *tab = config_table();
	char val[CFG_VALUE_MAX];

	r->Configs.v = req_alloc(rq, tab->ndefs, sizeof(*r->Configs.v));
	for (size_t i = 0; i < tab->ndefs; i++) {
		const char *name = tab->defs[i].name;
		struct DescribeConfigsResponseConfig *c;
		int source = CONFIG_SOURCE_DEFAULT, rc;

		if (!cfg_key_wanted(keys, name))
			continue;
		rc = config_get(&rq->b->cfg, name, val, sizeof(val), &source);
		c = cfg_entry(rq, r, name, rc == 0 ? val : NULL, source, true);
		if (synonyms)
			cfg_broker_synonyms(rq, c, name);
	}
}

/* Cluster mode, a topic held elsewhere: its overrides read from ZooKeeper (below). */
struct cfg_zk_wait;
static struct cfg_zk_wait *cfg_zk_wait_new(struct req *rq);
static void cfg_describe_topic_zk(struct req *rq, struct cfg_zk_wait *w,
				  const struct DescribeConfigsRequestResource *res, bool synonyms,
				  struct DescribeConfigsResponseResult *r);
static int cfg_zk_asked(struct cfg_zk_wait *w);

int h_describe_configs(struct req *rq, const void *vin, void *vout)
{
	const struct DescribeConfigsRequest *in = vin;
	struct DescribeConfigsResponse *out = vout;
	int32_t n = in->Resources.n > 0 ? in->Resources.n : 0;
	struct cfg_zk_wait *w = cfg_zk_wait_new(rq);

	out->Results.v = req_alloc(rq, (size_t)n, sizeof(*out->Results.v));
	out->Results.n = n;
	for (int32_t i = 0; i < n; i++) {
		const struct DescribeConfigsRequestResource *res = &in->Resources.v[i];
		struct DescribeConfigsResponseResult *r = &out->Results.v[i];
		enum cfg_kind kind;
		struct topic *t;

		DescribeConfigsResponseResult_init(r);
		r->ResourceType = res->ResourceType;
		r->ResourceName = res->ResourceName;
		r->ErrorMessage = KSTR_NULL;
		r->ErrorCode =
			authz_configs_kerr(rq, res->ResourceType, res->ResourceName, ACL_OP_DESCRIBE_CONFIGS)
				?: cfg_resource(rq, res->ResourceType, res->ResourceName, &kind, &t, &r->ErrorMessage);
		if (r->ErrorCode == KERR_UNKNOWN_TOPIC_OR_PARTITION && rq->b->cluster) {
			r->ErrorCode = KERR_NONE; /* no replica here: ZooKeeper's /config/topics/<t> says */
			r->ErrorMessage = KSTR_NULL;
			cfg_describe_topic_zk(rq, w, res, in->IncludeSynonyms, r);
		} else if (r->ErrorCode) {
			continue;
		} else if (kind == CFG_TOPIC) {
			cfg_describe_topic(rq, &t->cfg, &res->ConfigurationKeys, in->IncludeSynonyms, r);
		} else if (kind == CFG_BROKER) {
			cfg_describe_broker(rq, &res->ConfigurationKeys, in->IncludeSynonyms, r);
		}
	}
	return cfg_zk_asked(w);
}

/* ---- AlterConfigs and IncrementalAlterConfigs ---- */

/* The generic form of one requested change (both alter APIs). */
struct cfg_change {
	struct kstr name;
	struct kstr value; /* len -1 = null */
	int8_t op;         /* OP_*; AlterConfigs entries are OP_SET */
};

/* Sets key to value (a C string) in tcfg, mapping the outcome to Kafka's codes. */
static int16_t cfg_set(struct req *rq, struct topic_cfg *tcfg, const char *key, const char *value, struct kstr *msg)
{
	char err[256] = "";
	int rc = topic_cfg_set(tcfg, key, value, err, sizeof(err));

	if (rc == 0)
		return KERR_NONE;
	if (rc == -ENOENT)
		*msg = req_printf(rq, "Unknown topic config name: %s", key);
	else
		*msg = req_printf(rq, "%s", rc == -ENOMEM ? "out of memory" : err);
	return rc == -ENOMEM ? KERR_UNKNOWN_SERVER_ERROR : KERR_INVALID_CONFIG;
}

/* True if item is in the comma-separated list. */
static bool cfg_list_has(const char *list, struct kstr item)
{
	struct kstr it;

	while (conf_list_next(&list, &it))
		if (it.len == item.len && !memcmp(it.p, item.p, (size_t)it.len))
			return true;
	return false;
}

/* Appends to out every item of from whose presence in other is want_in. */
static void cfg_list_filter(char *out, size_t n, const char *from, const char *other, bool want_in)
{
	struct kstr it;
	size_t len = strlen(out);

	while (conf_list_next(&from, &it)) {
		if (cfg_list_has(other, it) != want_in)
			continue;
		if (len >= n)
			break;
		len += (size_t)snprintf(out + len, n - len, "%s%.*s", len ? "," : "", (int)it.len, it.p);
	}
}

/* Kafka types cleanup.policy as a list; ours keeps it as an enum of its spellings. */
static bool cfg_is_list(const struct conf_def *d)
{
	return d->type == CONF_LIST || !strcmp(d->name, "cleanup.policy");
}

/* APPEND / SUBTRACT on a list-typed key. */
static int16_t cfg_list_op(struct req *rq, struct topic_cfg *tcfg, const char *key, const char *value, int8_t op,
			   struct kstr *msg)
{
	const struct conf_def *d = conf_find(topic_cfg_table(), key);
	char cur[CFG_VALUE_MAX], next[CFG_VALUE_MAX] = "";

	if (!d) {
		*msg = req_printf(rq, "Unknown topic config name: %s", key);
		return KERR_INVALID_CONFIG;
	}
	if (!cfg_is_list(d)) {
		*msg = req_printf(rq, "Config value %s is not allowed for config key: %s",
				  op == OP_APPEND ? "append" : "subtract", key);
		return KERR_INVALID_CONFIG;
	}
	if (topic_cfg_get(tcfg, key, cur, sizeof(cur), NULL, NULL) != 0)
		cur[0] = '\0';
	if (op == OP_APPEND) {
		cfg_list_filter(next, sizeof(next), cur, "", false);
		cfg_list_filter(next, sizeof(next), value, cur, false);
	} else {
		cfg_list_filter(next, sizeof(next), cur, value, false);
	}
	if (strlen(next) >= sizeof(next) - 1) {
		*msg = req_printf(rq, "Value of %s too long", key);
		return KERR_INVALID_CONFIG;
	}
	return cfg_set(rq, tcfg, key, next, msg);
}

static int16_t cfg_apply(struct req *rq, struct topic_cfg *tcfg, const struct cfg_change *ch, struct kstr *msg)
{
	const char *key = req_cstr(rq, ch->name);
	const char *value = req_cstr(rq, ch->value);

	if (ch->op == OP_DELETE) {
		if (topic_cfg_delete(tcfg, key, &rq->b->cfg) == -ENOENT) {
			*msg = req_printf(rq, "Unknown topic config name: %s", key);
			return KERR_INVALID_CONFIG;
		}
		return KERR_NONE;
	}
	if (ch->op < OP_SET || ch->op > OP_SUBTRACT) {
		*msg = req_printf(rq, "Unknown config operation %d for key: %s", ch->op, key);
		return KERR_INVALID_REQUEST;
	}
	if (ch->value.len < 0) {
		*msg = req_printf(rq, "Null value not supported for : %s", key);
		return KERR_INVALID_REQUEST;
	}
	if (ch->op == OP_SET)
		return cfg_set(rq, tcfg, key, value, msg);
	return cfg_list_op(rq, tcfg, key, value, ch->op, msg);
}

/* Kafka refuses a resource that names one key twice. */
static bool cfg_has_dup_keys(const struct cfg_change *ch, int32_t n)
{
	const struct conf_table *tab = topic_cfg_table();
	bool seen[TOPIC_CFG_NKEYS] = { false };
	char key[128];

	for (int32_t i = 0; i < n; i++) {
		int k;

		snprintf(key, sizeof(key), "%.*s", (int)(ch[i].name.len > 0 ? ch[i].name.len : 0), ch[i].name.p);
		k = conf_index(tab, key);
		if (k >= 0 && seen[k])
			return true;
		if (k >= 0)
			seen[k] = true;
	}
	return false;
}

/* Makes *cfg topic t's config (the old one goes to *cfg) and saves it in topic.properties. */
static int16_t cfg_install(struct req *rq, struct topic *t, struct topic_cfg *cfg, struct kstr *msg)
{
	struct topic_cfg old = t->cfg;
	int rc;

	t->cfg = *cfg;
	*cfg = old;
	rc = registry_save_cfg(rq->b->reg, t);
	if (rc < 0) {
		log_error("topic '%s': cannot save configs: %s", t->name, strerror(-rc));
		*msg = req_printf(rq, "Cannot persist the configs: %s", strerror(-rc));
		return KERR_UNKNOWN_SERVER_ERROR;
	}
	log_info("topic '%s': configs updated", t->name);
	return KERR_NONE;
}

/* Validates every change on a scratch copy, then installs and persists it. */
static int16_t cfg_alter_topic(struct req *rq, struct topic *t, const struct cfg_change *ch, int32_t n, bool replace,
			       bool validate_only, struct kstr *msg)
{
	struct topic_cfg scratch;
	int16_t err = KERR_NONE;

	if (cfg_has_dup_keys(ch, n)) {
		*msg = req_printf(rq, "Error due to duplicate config keys");
		return KERR_INVALID_REQUEST;
	}
	if (topic_cfg_copy(&scratch, &t->cfg) < 0 || (replace && topic_cfg_reset(&scratch, &rq->b->cfg) < 0)) {
		*msg = req_printf(rq, "out of memory");
		return KERR_UNKNOWN_SERVER_ERROR;
	}
	for (int32_t i = 0; i < n && !err; i++)
		err = cfg_apply(rq, &scratch, &ch[i], msg);
	if (!err && !validate_only)
		err = cfg_install(rq, t, &scratch, msg);
	topic_cfg_release(&scratch);
	return err;
}

/*
 * Cluster mode: a topic's overrides are ZooKeeper's /config/topics/<t>,
 * whichever broker is asked and whether it holds a replica or not, as in
 * Kafka.  Each topic resource reads them, applies the changes to a copy,
 * writes it back with a change notification (every broker applies it from
 * there), applies it here at once if this broker holds the topic, and the
 * request is answered once every write is answered.
 */
struct cfg_zk_wait {
	struct req *rq;
	int pending;  /* topic resources still being read or written */
	bool in_call; /* the handler is still going through the resources: it answers */
};

struct cfg_zk_item {
	struct cfg_zk_wait *w;
	const struct cfg_change *ch;
	int32_t n;
	bool replace, validate_only;
	/* DescribeConfigs: the keys asked for and the result to fill (NULL: an alteration) */
	const struct kstr_array *keys;
	bool synonyms;
	struct DescribeConfigsResponseResult *res;
	int16_t *err;
	struct kstr *msg;
	struct topic_cfg cfg; /* the changed overrides, from the read to the write */
	char name[256];
};

static void cfg_zk_done(struct cfg_zk_item *it)
{
	struct cfg_zk_wait *w = it->w;

	if (--w->pending == 0 && !w->in_call)
		req_reply(w->rq);
}

/* A ZooKeeper failure (-errno from cluster.h) as the resource's error. */
static void cfg_zk_failed(struct cfg_zk_item *it, int err)
{
	struct req *rq = it->w->rq;

	if (err == -ENOENT) {
		*it->err = KERR_UNKNOWN_TOPIC_OR_PARTITION;
		*it->msg = req_printf(rq, "The topic '%s' does not exist.", it->name);
	} else {
		*it->err = err == -ENOTCONN ? KERR_REQUEST_TIMED_OUT : KERR_UNKNOWN_SERVER_ERROR;
		*it->msg = req_printf(rq, "The topic's configs in ZooKeeper: %s", strerror(-err));
	}
}

static void cfg_zk_on_written(void *arg, int err)
{
	struct cfg_zk_item *it = arg;
	struct req *rq = it->w->rq;
	struct topic *t;

	if (err)
		cfg_zk_failed(it, err);
	else if ((t = registry_find(rq->b->reg, kstr_c(it->name))) != NULL)
		cfg_install(rq, t, &it->cfg, it->msg); /* a save that fails here is logged; ZooKeeper has it */
	topic_cfg_release(&it->cfg);
	cfg_zk_done(it);
}

/* cluster_config_fn: the overrides as ZooKeeper holds them; change, then write them. */
static void cfg_zk_on_read(void *arg, int err, const struct znode_config *zc)
{
	struct cfg_zk_item *it = arg;
	struct req *rq = it->w->rq;
	char buf[256];

	if (err || topic_cfg_init(&it->cfg, &rq->b->cfg) < 0) {
		cfg_zk_failed(it, err ? err : -ENOMEM);
		cfg_zk_done(it);
		return;
	}
	for (int i = 0; !it->replace && i < zc->n; i++)
		if (topic_cfg_set(&it->cfg, zc->names[i], zc->values[i], buf, sizeof(buf)) < 0)
			log_warn("topic '%s': override %s=%s in ZooKeeper dropped: %s", it->name, zc->names[i],
				 zc->values[i], buf);
	if (it->res) {
		cfg_describe_topic(rq, &it->cfg, it->keys, it->synonyms, it->res);
		topic_cfg_release(&it->cfg);
		cfg_zk_done(it);
		return;
	}
	for (int32_t i = 0; i < it->n && !*it->err; i++)
		*it->err = cfg_apply(rq, &it->cfg, &it->ch[i], it->msg);
	if (!*it->err && !it->validate_only &&
	    (err = topic_zk_config_write(rq->b, it->name, &it->cfg, cfg_zk_on_written, it)) == 0)
		return;
	if (err)
		cfg_zk_failed(it, err);
	topic_cfg_release(&it->cfg);
	cfg_zk_done(it);
}

/* Asks ZooKeeper for topic name's overrides for it; cfg_zk_on_read goes on. */
static void cfg_zk_read(struct req *rq, struct cfg_zk_item *it, struct kstr name)
{
	snprintf(it->name, sizeof(it->name), "%.*s", name.len, name.p);
	it->w->pending++;
	if (cluster_topic_config(rq->b->cluster, it->name, cfg_zk_on_read, it)) {
		cfg_zk_failed(it, -ENOTCONN);
		it->w->pending--;
	}
}

/* Starts one topic resource of a request in cluster mode; its error is set when it ends. */
static void cfg_alter_topic_zk(struct req *rq, struct cfg_zk_wait *w, struct kstr name, const struct cfg_change *ch,
			       int32_t n, bool replace, bool validate_only, int16_t *err, struct kstr *msg)
{
	struct cfg_zk_item *it;

	if ((*err = authz_configs_kerr(rq, RES_TOPIC, name, ACL_OP_ALTER_CONFIGS)))
		return;
	if (!topic_name_valid(name)) {
		*msg = req_printf(rq, "Topic name '%s' is illegal", req_cstr(rq, name));
		*err = KERR_INVALID_TOPIC_EXCEPTION;
		return;
	}
	if (cfg_has_dup_keys(ch, n)) {
		*msg = req_printf(rq, "Error due to duplicate config keys");
		*err = KERR_INVALID_REQUEST;
		return;
	}
	it = req_alloc(rq, 1, sizeof(*it));
	*it = (struct cfg_zk_item){
		.w = w, .ch = ch, .n = n, .replace = replace, .validate_only = validate_only, .err = err, .msg = msg
	};
	cfg_zk_read(rq, it, name);
}

static void cfg_describe_topic_zk(struct req *rq, struct cfg_zk_wait *w,
				  const struct DescribeConfigsRequestResource *res, bool synonyms,
				  struct DescribeConfigsResponseResult *r)
{
	struct cfg_zk_item *it = req_alloc(rq, 1, sizeof(*it));

	*it = (struct cfg_zk_item){ .w = w,
				    .keys = &res->ConfigurationKeys,
				    .synonyms = synonyms,
				    .res = r,
				    .err = &r->ErrorCode,
				    .msg = &r->ErrorMessage };
	cfg_zk_read(rq, it, res->ResourceName);
}

static struct cfg_zk_wait *cfg_zk_wait_new(struct req *rq)
{
	struct cfg_zk_wait *w = req_alloc(rq, 1, sizeof(*w));

	*w = (struct cfg_zk_wait){ .rq = rq, .in_call = true };
	return w;
}

/* What a configs handler returns once it went through its resources. */
static int cfg_zk_asked(struct cfg_zk_wait *w)
{
	w->in_call = false;
	return w->pending ? H_PARKED : H_REPLY;
}

/* One resource of either alter API. */
static int16_t cfg_alter_one(struct req *rq, int8_t type, struct kstr name, const struct cfg_change *ch, int32_t n,
			     bool replace, bool validate_only, struct kstr *msg)
{
	enum cfg_kind kind;
	struct topic *t;
	int16_t err = authz_configs_kerr(rq, type, name, ACL_OP_ALTER_CONFIGS)
			      ?: cfg_resource(rq, type, name, &kind, &t, msg);

	if (err)
		return err;
	if (kind == CFG_TOPIC)
		return cfg_alter_topic(rq, t, ch, n, replace, validate_only, msg);
	if (n == 0)
		return KERR_NONE;
	*msg = req_printf(rq, "Cannot update these configs dynamically: %s", req_cstr(rq, ch[0].name));
	return KERR_INVALID_REQUEST;
}

int h_alter_configs(struct req *rq, const void *vin, void *vout)
{
	const struct AlterConfigsRequest *in = vin;
	struct AlterConfigsResponse *out = vout;
	int32_t n = in->Resources.n > 0 ? in->Resources.n : 0;

	struct cfg_zk_wait *w = cfg_zk_wait_new(rq);

	out->Responses.v = req_alloc(rq, (size_t)n, sizeof(*out->Responses.v));
	out->Responses.n = n;
	for (int32_t i = 0; i < n; i++) {
		const struct AlterConfigsRequestResource *res = &in->Resources.v[i];
		struct AlterConfigsResponseResource *r = &out->Responses.v[i];
		int32_t nc = res->Configs.n > 0 ? res->Configs.n : 0;
		struct cfg_change *ch = req_alloc(rq, (size_t)nc, sizeof(*ch));

		for (int32_t j = 0; j < nc; j++)
			ch[j] = (struct cfg_change){ res->Configs.v[j].Name, res->Configs.v[j].Value, OP_SET };
		AlterConfigsResponseResource_init(r);
		r->ResourceType = res->ResourceType;
		r->ResourceName = res->ResourceName;
		r->ErrorMessage = KSTR_NULL;
		if (rq->b->cluster && res->ResourceType == RES_TOPIC)
			cfg_alter_topic_zk(rq, w, res->ResourceName, ch, nc, true, in->ValidateOnly, &r->ErrorCode,
					   &r->ErrorMessage);
		else
			r->ErrorCode = cfg_alter_one(rq, res->ResourceType, res->ResourceName, ch, nc, true,
						     in->ValidateOnly, &r->ErrorMessage);
	}
	return cfg_zk_asked(w);
}

int h_incremental_alter_configs(struct req *rq, const void *vin, void *vout)
{
	const struct IncrementalAlterConfigsRequest *in = vin;
	struct IncrementalAlterConfigsResponse *out = vout;
	int32_t n = in->Resources.n > 0 ? in->Resources.n : 0;

	struct cfg_zk_wait *w = cfg_zk_wait_new(rq);

	out->Responses.v = req_alloc(rq, (size_t)n, sizeof(*out->Responses.v));
	out->Responses.n = n;
	for (int32_t i = 0; i < n; i++) {
		const struct IncrementalAlterConfigsRequestResource *res = &in->Resources.v[i];
		struct IncrementalAlterConfigsResponseResource *r = &out->Responses.v[i];
		int32_t nc = res->Configs.n > 0 ? res->Configs.n : 0;
		struct cfg_change *ch = req_alloc(rq, (size_t)nc, sizeof(*ch));

		for (int32_t j = 0; j < nc; j++) {
			const struct IncrementalAlterConfigsRequestConfig *c = &res->Configs.v[j];

			ch[j] = (struct cfg_change){ c->Name, c->Value, c->ConfigOperation };
		}
		IncrementalAlterConfigsResponseResource_init(r);
		r->ResourceType = res->ResourceType;
		r->ResourceName = res->ResourceName;
		r->ErrorMessage = KSTR_NULL;
		if (rq->b->cluster && res->ResourceType == RES_TOPIC)
			cfg_alter_topic_zk(rq, w, res->ResourceName, ch, nc, false, in->ValidateOnly, &r->ErrorCode,
					   &r->ErrorMessage);
		else
			r->ErrorCode = cfg_alter_one(rq, res->ResourceType, res->ResourceName, ch, nc, false,
						     in->ValidateOnly, &r->ErrorMessage);
	}
	return cfg_zk_asked(w);
}
