/*
 * znode.c - Kafka's znode JSON documents (see znode.h for each layout).
 *
 * jansson builds and parses them; numbers Kafka writes as strings
 * (timestamps, the /cluster/id version) are kept as strings, and the
 * decoders accept what older Kafka versions wrote (broker versions 1-5:
 * endpoints since 2, rack since 3, the protocol map since 4).
 */
#include "cluster/znode.h"

#include <errno.h>
#include <stddef.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const znode_persistent_paths[] = {
	"/brokers/ids",
	"/brokers/topics",
	"/brokers/seqid",
	"/config/changes",
	"/config/topics",
	"/config/clients",
	"/config/users",
	"/config/brokers",
	"/config/ips",
	"/admin/delete_topics",
	"/isr_change_notification",
	"/latest_producer_id_block",
	"/log_dir_event_notification",
	NULL,
};

/* Copies n bytes of s into dst[cap] as a C string; -EINVAL if it does not fit or is empty. */
static int znode_copy(char *dst, size_t cap, const char *s, size_t n)
{
	if (!n || n >= cap)
		return -EINVAL;
	memcpy(dst, s, n);
	dst[n] = '\0';
	return 0;
}

/* "NAME://host:port" (host may be "[v6]" or empty) into ep (protocol left empty). */
static int znode_endpoint_parse(const char *s, size_t n, struct znode_endpoint *ep)
{
	const char *sep = memmem(s, n, "://", 3), *hp, *colon;
	char port[8];
	char *end;
	long v;

	if (!sep || znode_copy(ep->listener, sizeof(ep->listener), s, (size_t)(sep - s)))
		return -EINVAL;
	hp = sep + 3;
	colon = memrchr(hp, ':', n - (size_t)(hp - s));
	if (!colon || znode_copy(port, sizeof(port), colon + 1, n - (size_t)(colon + 1 - s)))
		return -EINVAL;
	v = strtol(port, &end, 10);
	if (*end || v < 0 || v > 65535)
		return -EINVAL;
	ep->port = (int32_t)v;
	if (colon - hp >= 2 && hp[0] == '[' && colon[-1] == ']')
		return znode_copy(ep->host, sizeof(ep->host), hp + 1, (size_t)(colon - hp - 2));
	ep->host[0] = '\0';
	return colon == hp ? 0 : znode_copy(ep->host, sizeof(ep->host), hp, (size_t)(colon - hp));
}

/* The protocol map entry for listener ("A:B,C:D"), else the listener's own name. */
static int znode_protocol_of(const char *map, struct znode_endpoint *ep)
{
	size_t ln = strlen(ep->listener);

	for (const char *p = map ? map : ""; *p;) {
		size_t n = strcspn(p, ",");
		const char *colon = memchr(p, ':', n);

		if (colon && (size_t)(colon - p) == ln && !strncmp(p, ep->listener, ln))
			return znode_copy(ep->protocol, sizeof(ep->protocol), colon + 1, n - ln - 1);
		p += n + (p[n] == ',');
	}
	memcpy(ep->protocol, ep->listener, sizeof(ep->protocol));
	return 0;
}

int znode_endpoints_parse(struct znode_broker *zb, const char *listeners, const char *protocol_map)
{
	zb->nendpoints = 0;
	for (const char *p = listeners ? listeners : ""; *p;) {
		size_t n = strcspn(p, ",");
		struct znode_endpoint *ep = &zb->endpoints[zb->nendpoints];

		if (n) {
			if (zb->nendpoints == ZNODE_ENDPOINTS_MAX || znode_endpoint_parse(p, n, ep) ||
			    znode_protocol_of(protocol_map, ep))
				return -EINVAL;
			for (int i = 0; i < zb->nendpoints; i++)
				if (!strcmp(zb->endpoints[i].listener, ep->listener))
					return -EINVAL;
			zb->nendpoints++;
		}
		p += n + (p[n] == ',');
	}
	return 0;
}

const struct znode_endpoint *znode_broker_endpoint(const struct znode_broker *zb, const char *listener)
{
	for (int i = 0; listener && i < zb->nendpoints; i++)
		if (!strcmp(zb->endpoints[i].listener, listener))
			return &zb->endpoints[i];
	return zb->nendpoints ? &zb->endpoints[0] : NULL;
}

/* Formats an endpoint as Kafka does: "NAME://host:port", IPv6 hosts in brackets. */
static void znode_endpoint_format(const struct znode_endpoint *ep, char *buf, size_t n)
{
	bool v6 = strchr(ep->host, ':') != NULL;

	snprintf(buf, n, "%s://%s%s%s:%d", ep->listener, v6 ? "[" : "", ep->host, v6 ? "]" : "", ep->port);
}

/* Dumps and frees root; NULL if root is NULL or out of memory. */
static char *znode_dump(json_t *root)
{
	char *s = root ? json_dumps(root, JSON_COMPACT) : NULL;

	json_decref(root);
	return s;
}

/* Sets key to v, taking ownership of v; false if either failed. */
static bool znode_set(json_t *obj, const char *key, json_t *v)
{
	return v && json_object_set_new(obj, key, v) == 0;
}

static json_t *znode_ms_string(int64_t ms)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%" PRId64, ms);
	return json_string(buf);
}

/* endpoints and listener_security_protocol_map of a registration. */
static bool znode_broker_listeners(const struct znode_broker *zb, json_t *root)
{
	json_t *eps = json_array(), *map = json_object();
	bool ok = eps && map;

	for (int i = 0; ok && i < zb->nendpoints; i++) {
		const struct znode_endpoint *ep = &zb->endpoints[i];
		char buf[ZNODE_HOST_MAX + 2 * ZNODE_NAME_MAX];

		znode_endpoint_format(ep, buf, sizeof(buf));
		ok = json_array_append_new(eps, json_string(buf)) == 0 &&
		     znode_set(map, ep->listener, json_string(ep->protocol));
	}
	ok = znode_set(root, "endpoints", eps) & ok;
	return znode_set(root, "listener_security_protocol_map", map) && ok;
}

char *znode_broker_encode(const struct znode_broker *zb)
{
	json_t *root = json_object();
	const struct znode_endpoint *plain = NULL;
	bool ok = root != NULL;

	for (int i = 0; i < zb->nendpoints && !plain; i++)
		if (!strcmp(zb->endpoints[i].protocol, "PLAINTEXT"))
			plain = &zb->endpoints[i];
	ok = ok && znode_set(root, "features", json_object()) && znode_broker_listeners(zb, root) &&
	     znode_set(root, "jmx_port", json_integer(-1)) &&
	     znode_set(root, "host", plain ? json_string(plain->host) : json_null()) &&
	     znode_set(root, "port", json_integer(plain ? plain->port : -1)) &&
	     znode_set(root, "timestamp", znode_ms_string(zb->timestamp_ms)) &&
	     znode_set(root, "version", json_integer(5));
	if (ok && zb->has_rack)
		ok = znode_set(root, "rack", json_string(zb->rack));
	if (!ok) {
		json_decref(root);
		return NULL;
	}
	return znode_dump(root);
}

/* Parses the document as a JSON object; NULL if it is not one. */
static json_t *znode_load(const char *json, size_t len)
{
	json_t *root = json ? json_loadb(json, len, JSON_REJECT_DUPLICATES, NULL) : NULL;

	if (root && !json_is_object(root)) {
		json_decref(root);
		return NULL;
	}
	return root;
}

/* Version 2+: the endpoints, with each one's protocol from the map (v4+) or its name. */
static int znode_broker_decode_endpoints(json_t *root, struct znode_broker *out)
{
	json_t *eps = json_object_get(root, "endpoints"),
	       *map = json_object_get(root, "listener_security_protocol_map");
	json_t *v;
	size_t i;

	if (!json_is_array(eps) || json_array_size(eps) > ZNODE_ENDPOINTS_MAX || (map && !json_is_object(map)))
		return -EBADMSG;
	json_array_foreach(eps, i, v)
	{
		struct znode_endpoint *ep = &out->endpoints[out->nendpoints];
		const char *s = json_string_value(v), *proto;

		if (!s || znode_endpoint_parse(s, strlen(s), ep))
			return -EBADMSG;
		proto = json_string_value(json_object_get(map, ep->listener));
		if (proto && znode_copy(ep->protocol, sizeof(ep->protocol), proto, strlen(proto)))
			return -EBADMSG;
		if (!proto)
			memcpy(ep->protocol, ep->listener, sizeof(ep->protocol));
		out->nendpoints++;
	}
	return 0;
}

/* Version 1: only host and port, a PLAINTEXT listener. */
static int znode_broker_decode_v1(json_t *root, struct znode_broker *out)
{
	const char *host = json_string_value(json_object_get(root, "host"));
	json_t *port = json_object_get(root, "port");
	struct znode_endpoint *ep = &out->endpoints[0];

	if (!host || !json_is_integer(port) || json_integer_value(port) < 0 || json_integer_value(port) > 65535 ||
	    znode_copy(ep->host, sizeof(ep->host), host, strlen(host)))
		return -EBADMSG;
	ep->port = (int32_t)json_integer_value(port);
	snprintf(ep->listener, sizeof(ep->listener), "PLAINTEXT");
	snprintf(ep->protocol, sizeof(ep->protocol), "PLAINTEXT");
	out->nendpoints = 1;
	return 0;
}

int znode_broker_decode(const char *json, size_t len, int32_t id, struct znode_broker *out)
{
	json_t *root = znode_load(json, len), *version, *rack;
	const char *ts;
	int err = -EBADMSG;

	memset(out, 0, sizeof(*out));
	out->id = id;
	if (!root)
		return -EBADMSG;
	version = json_object_get(root, "version");
	if (!json_is_integer(version) || json_integer_value(version) < 1 || json_integer_value(version) > 1000)
		goto out_free;
	out->version = (int32_t)json_integer_value(version);
	err = out->version >= 2 ? znode_broker_decode_endpoints(root, out) : znode_broker_decode_v1(root, out);
	if (err)
		goto out_free;
	rack = json_object_get(root, "rack");
	if (rack && !json_is_null(rack) &&
	    (!json_is_string(rack) ||
	     znode_copy(out->rack, sizeof(out->rack), json_string_value(rack), json_string_length(rack)))) {
		err = -EBADMSG;
		goto out_free;
	}
	out->has_rack = rack && !json_is_null(rack);
	ts = json_string_value(json_object_get(root, "timestamp"));
	out->timestamp_ms = ts ? strtoll(ts, NULL, 10) : 0;
out_free:
	json_decref(root);
	return err;
}

char *znode_controller_encode(int32_t broker_id, int64_t timestamp_ms)
{
	json_t *root = json_object();

	if (root && znode_set(root, "version", json_integer(1)) &&
	    znode_set(root, "brokerid", json_integer(broker_id)) &&
	    znode_set(root, "timestamp", znode_ms_string(timestamp_ms)))
		return znode_dump(root);
	json_decref(root);
	return NULL;
}

int znode_controller_decode(const char *json, size_t len, int32_t *broker_id)
{
	json_t *root = znode_load(json, len), *id;
	int err = -EBADMSG;

	if (!root)
		return err;
	id = json_object_get(root, "brokerid");
	if (json_is_integer(id) && json_integer_value(id) >= 0 && json_integer_value(id) <= INT32_MAX) {
		*broker_id = (int32_t)json_integer_value(id);
		err = 0;
	}
	json_decref(root);
	return err;
}

char *znode_pid_block_encode(int32_t broker_id, int64_t block_start, int64_t block_end)
{
	json_t *root = json_object();

	if (root && znode_set(root, "version", json_integer(1)) && znode_set(root, "broker", json_integer(broker_id)) &&
	    znode_set(root, "block_start", znode_ms_string(block_start)) &&
	    znode_set(root, "block_end", znode_ms_string(block_end)))
		return znode_dump(root);
	json_decref(root);
	return NULL;
}

/* A decimal string member >= 0 (Kafka writes the block bounds as strings). */
static int znode_i64_member(json_t *root, const char *key, int64_t *out)
{
	const char *s = json_string_value(json_object_get(root, key));
	char *end;
	long long v;

	if (!s || !*s || *s < '0' || *s > '9')
		return -EBADMSG;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || *end)
		return -EBADMSG;
	*out = v;
	return 0;
}

int znode_pid_block_decode(const char *json, size_t len, int64_t *block_start, int64_t *block_end)
{
	json_t *root = znode_load(json, len);
	int err = -EBADMSG;

	if (!root)
		return err;
	if (!znode_i64_member(root, "block_start", block_start) && !znode_i64_member(root, "block_end", block_end) &&
	    *block_start <= *block_end)
		err = 0;
	json_decref(root);
	return err;
}

char *znode_config_change_encode(const char *entity_path)
{
	json_t *root = json_object();

	if (root && znode_set(root, "version", json_integer(2)) &&
	    znode_set(root, "entity_path", json_string(entity_path)))
		return znode_dump(root);
	json_decref(root);
	return NULL;
}

int znode_config_change_decode(const char *json, size_t len, char *entity_path, size_t n)
{
	json_t *root = znode_load(json, len);
	const char *s = root ? json_string_value(json_object_get(root, "entity_path")) : NULL;
	int err = s && strlen(s) < n ? 0 : -EBADMSG;

	if (!err)
		memcpy(entity_path, s, strlen(s) + 1);
	json_decref(root);
	return err;
}

char *znode_cluster_id_encode(const char *cluster_id)
{
	json_t *root = json_object();

	if (root && znode_set(root, "version", json_string("1")) && znode_set(root, "id", json_string(cluster_id)))
		return znode_dump(root);
	json_decref(root);
	return NULL;
}

int znode_cluster_id_decode(const char *json, size_t len, char *id, size_t idlen)
{
	json_t *root = znode_load(json, len), *v;
	int err = -EBADMSG;

	if (!root)
		return err;
	v = json_object_get(root, "id");
	if (json_is_string(v) && !znode_copy(id, idlen, json_string_value(v), json_string_length(v)) &&
	    strlen(id) == json_string_length(v))
		err = 0;
	json_decref(root);
	return err;
}

char *znode_topic_encode(const int32_t *replicas, int32_t nparts, int32_t rf, const char *topic_id)
{
	json_t *root = json_object(), *parts = json_object();
	bool ok = root && parts;

	for (int32_t p = 0; ok && p < nparts; p++) {
		json_t *ids = json_array();
		char key[16];

		ok = ids != NULL;
		for (int32_t r = 0; ok && r < rf; r++)
			ok = json_array_append_new(ids, json_integer(replicas[(size_t)p * (size_t)rf + (size_t)r])) ==
			     0;
		snprintf(key, sizeof(key), "%d", p);
		ok = znode_set(parts, key, ids) && ok;
	}
	ok = znode_set(root, "partitions", parts) && ok;
	if (ok && znode_set(root, "version", json_integer(3)) && znode_set(root, "topic_id", json_string(topic_id)) &&
	    znode_set(root, "adding_replicas", json_object()) && znode_set(root, "removing_replicas", json_object()))
		return znode_dump(root);
	json_decref(root);
	return NULL;
}

/* {"<p>":[ids],...} of the partitions whose r[p] is not empty (all: every partition). */
static json_t *znode_topic_map(const struct znode_replicas *r, int32_t nparts, bool all)
{
	json_t *map = json_object();
	bool ok = map != NULL;

	for (int32_t p = 0; ok && r && p < nparts; p++) {
		json_t *ids;
		char key[16];

		if (!all && !r[p].n)
			continue;
		ids = json_array();
		ok = ids != NULL;
		for (int32_t i = 0; ok && i < r[p].n; i++)
			ok = json_array_append_new(ids, json_integer(r[p].ids[i])) == 0;
		snprintf(key, sizeof(key), "%d", p);
		ok = znode_set(map, key, ids) && ok;
	}
	if (ok)
		return map;
	json_decref(map);
	return NULL;
}

char *znode_topic_doc_encode(const struct znode_topic *zt)
{
	json_t *root = json_object();

	if (root && znode_set(root, "version", json_integer(3)) &&
	    znode_set(root, "partitions", znode_topic_map(zt->parts, zt->nparts, true)) &&
	    znode_set(root, "topic_id", json_string(zt->topic_id)) &&
	    znode_set(root, "adding_replicas", znode_topic_map(zt->adding, zt->nparts, false)) &&
	    znode_set(root, "removing_replicas", znode_topic_map(zt->removing, zt->nparts, false)))
		return znode_dump(root);
	json_decref(root);
	return NULL;
}

char *znode_topic_config_encode(const char *const *names, const char *const *values, int n)
{
	json_t *root = json_object(), *cfg = json_object();
	bool ok = root && cfg;

	for (int i = 0; ok && i < n; i++)
		ok = znode_set(cfg, names[i], json_string(values[i]));
	ok = znode_set(root, "config", cfg) && ok;
	if (ok && znode_set(root, "version", json_integer(1)))
		return znode_dump(root);
	json_decref(root);
	return NULL;
}

void znode_topic_config_free(struct znode_config *c)
{
	for (int i = 0; i < c->n; i++) {
		free(c->names[i]);
		free(c->values[i]);
	}
	free(c->names);
	free(c->values);
	memset(c, 0, sizeof(*c));
}

int znode_topic_config_decode(const char *json, size_t len, struct znode_config *out)
{
	json_t *root = znode_load(json, len), *cfg = root ? json_object_get(root, "config") : NULL, *v;
	size_t n = json_is_object(cfg) ? json_object_size(cfg) : 0;
	const char *key;
	int err = 0;

	memset(out, 0, sizeof(*out));
	if (!json_is_object(cfg) || !json_is_integer(json_object_get(root, "version"))) {
		json_decref(root);
		return -EBADMSG;
	}
	out->names = calloc(n ? n : 1, sizeof(char *));
	out->values = calloc(n ? n : 1, sizeof(char *));
	err = out->names && out->values ? 0 : -ENOMEM;
	json_object_foreach(cfg, key, v)
	{
		if (err)
			break;
		if (!json_is_string(v)) {
			err = -EBADMSG;
			break;
		}
		out->names[out->n] = strdup(key);
		out->values[out->n] = strdup(json_string_value(v));
		err = out->names[out->n] && out->values[out->n] ? 0 : -ENOMEM;
		out->n++;
	}
	json_decref(root);
	if (err)
		znode_topic_config_free(out);
	return err;
}

/* A JSON array of broker ids (0 .. INT32_MAX) into r; false if it is not one or too long. */
static bool znode_ids_decode(json_t *arr, struct znode_replicas *r)
{
	size_t i;
	json_t *v;

	if (!json_is_array(arr) || json_array_size(arr) > ZNODE_REPLICAS_MAX)
		return false;
	r->n = 0;
	json_array_foreach(arr, i, v)
	{
		if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > INT32_MAX)
			return false;
		r->ids[r->n++] = (int32_t)json_integer_value(v);
	}
	return true;
}

/* Partition keys "0".."n-1", each an id array. */
static int znode_topic_parts(json_t *parts, struct znode_topic *out)
{
	const char *key;
	json_t *v;

	out->nparts = (int32_t)json_object_size(parts);
	out->parts = calloc((size_t)(out->nparts > 0 ? out->nparts : 1), sizeof(*out->parts));
	if (!out->parts)
		return -ENOMEM;
	json_object_foreach(parts, key, v)
	{
		char *end;
		long p = strtol(key, &end, 10);

		if (!*key || *end || p < 0 || p >= out->nparts || out->parts[p].n ||
		    !znode_ids_decode(v, &out->parts[p]) || !out->parts[p].n)
			return -EBADMSG;
	}
	return 0;
}

/* adding_replicas / removing_replicas (absent before version 3): {"<p>":[ids]} into r[nparts]. */
static int znode_topic_moving(json_t *obj, int32_t nparts, struct znode_replicas **r)
{
	const char *key;
	json_t *v;

	*r = calloc((size_t)(nparts > 0 ? nparts : 1), sizeof(**r));
	if (!*r)
		return -ENOMEM;
	if (!obj || json_is_null(obj))
		return 0;
	if (!json_is_object(obj))
		return -EBADMSG;
	json_object_foreach(obj, key, v)
	{
		char *end;
		long p = strtol(key, &end, 10);

		if (!*key || *end || p < 0 || p >= nparts || !znode_ids_decode(v, &(*r)[p]))
			return -EBADMSG;
	}
	return 0;
}

int znode_topic_decode(const char *json, size_t len, struct znode_topic *out)
{
	json_t *root = znode_load(json, len), *parts;
	int err = -EBADMSG;

	memset(out, 0, sizeof(*out));
	if (!root)
		return err;
	parts = json_object_get(root, "partitions");
	if (json_is_object(parts) && json_object_size(parts) <= INT32_MAX)
		err = znode_topic_parts(parts, out);
	if (!err)
		err = znode_topic_moving(json_object_get(root, "adding_replicas"), out->nparts, &out->adding);
	if (!err)
		err = znode_topic_moving(json_object_get(root, "removing_replicas"), out->nparts, &out->removing);
	if (!err && json_is_string(json_object_get(root, "topic_id")))
		snprintf(out->topic_id, sizeof(out->topic_id), "%s",
			 json_string_value(json_object_get(root, "topic_id")));
	if (err)
		znode_topic_free(out);
	json_decref(root);
	return err;
}

void znode_topic_free(struct znode_topic *zt)
{
	free(zt->parts);
	zt->parts = NULL;
	free(zt->adding);
	zt->adding = NULL;
	free(zt->removing);
	zt->removing = NULL;
	zt->nparts = 0;
}

char *znode_state_encode(const struct znode_state *st)
{
	json_t *root = json_object(), *isr = json_array();
	bool ok = root && isr;

	for (int32_t i = 0; ok && i < st->isr.n; i++)
		ok = json_array_append_new(isr, json_integer(st->isr.ids[i])) == 0;
	ok = znode_set(root, "controller_epoch", json_integer(st->controller_epoch)) && ok;
	ok = ok && znode_set(root, "leader", json_integer(st->leader)) && znode_set(root, "version", json_integer(1)) &&
	     znode_set(root, "leader_epoch", json_integer(st->leader_epoch));
	if (znode_set(root, "isr", isr) && ok)
		return znode_dump(root);
	json_decref(root);
	return NULL;
}

/* An int32 member of obj; false if missing or out of range (min .. INT32_MAX). */
static bool znode_int_member(json_t *obj, const char *key, int64_t min, int32_t *out)
{
	json_t *v = json_object_get(obj, key);

	if (!json_is_integer(v) || json_integer_value(v) < min || json_integer_value(v) > INT32_MAX)
		return false;
	*out = (int32_t)json_integer_value(v);
	return true;
}

int znode_state_decode(const char *json, size_t len, struct znode_state *out)
{
	json_t *root = znode_load(json, len);
	int err = -EBADMSG;

	if (!root)
		return err;
	if (znode_int_member(root, "leader", -1, &out->leader) &&
	    znode_int_member(root, "leader_epoch", 0, &out->leader_epoch) &&
	    znode_int_member(root, "controller_epoch", 0, &out->controller_epoch) &&
	    znode_ids_decode(json_object_get(root, "isr"), &out->isr))
		err = 0;
	json_decref(root);
	return err;
}

/* Decimal 0..INT32_MAX, nothing else. */
static int znode_int_parse(const char *s, size_t len, int32_t *out)
{
	int64_t v = 0;

	if (!s || !len || len > 10)
		return -EINVAL;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -EINVAL;
		v = v * 10 + (s[i] - '0');
	}
	if (v > INT32_MAX)
		return -EINVAL;
	*out = (int32_t)v;
	return 0;
}

int znode_epoch_decode(const char *text, size_t len, int32_t *epoch)
{
	return znode_int_parse(text, len, epoch) ? -EBADMSG : 0;
}

int znode_broker_id_parse(const char *name, int32_t *id)
{
	return znode_int_parse(name, strlen(name), id);
}

/* One entry of /admin/reassign_partitions. */
static bool znode_reassign_entry(json_t *e, struct znode_reassign *r)
{
	json_t *t = json_object_get(e, "topic");

	return json_is_string(t) && json_string_length(t) > 0 && json_string_length(t) < sizeof(r->topic) &&
	       znode_int_member(e, "partition", 0, &r->partition) &&
	       znode_ids_decode(json_object_get(e, "replicas"), &r->replicas) &&
	       !znode_copy(r->topic, sizeof(r->topic), json_string_value(t), json_string_length(t));
}

int znode_reassign_decode(const char *json, size_t len, struct znode_reassign **out, int *n)
{
	json_t *root = znode_load(json, len), *parts = root ? json_object_get(root, "partitions") : NULL, *e;
	size_t i;
	int err = 0;

	*out = NULL;
	*n = 0;
	if (!json_is_array(parts) || json_array_size(parts) > 100000) {
		json_decref(root);
		return -EBADMSG;
	}
	*out = calloc(json_array_size(parts) + 1, sizeof(**out));
	if (!*out)
		err = -ENOMEM;
	json_array_foreach(parts, i, e)
	{
		if (err || !znode_reassign_entry(e, &(*out)[*n])) {
			err = err ? err : -EBADMSG;
			break;
		}
		(*n)++;
	}
	json_decref(root);
	if (err) {
		free(*out);
		*out = NULL;
		*n = 0;
	}
	return err;
}
