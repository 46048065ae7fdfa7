/*
 * console_view.c - the web console's view of the brokers (see
 * console_view.h), taken on the event loop from the metadata cache in
 * cluster mode, as Metadata answers (topics: console_topics.c, groups:
 * console_groups.c), and the JSON string every view's text goes through.
 */
#include "broker/console_view.h"

#include <stdlib.h>
#include <string.h>

#include "broker/broker.h"
#include "broker/console.h"
#include "cluster/cluster.h"
#include "cluster/mcache.h"

json_t *console_json_str(const char *p, size_t len)
{
	json_t *s = json_stringn(p ? p : "", p ? len : 0);
	char *copy;

	if (s || !p)
		return s;
	copy = malloc(len + 1);
	if (!copy)
		return NULL;
	for (size_t i = 0; i < len; i++)
		copy[i] = (unsigned char)p[i] < 0x80 ? p[i] : '?';
	s = json_stringn(copy, len);
	free(copy);
	return s;
}

static json_t *view_broker(int32_t id, const char *host, int32_t port, const char *rack, bool self)
{
	return json_pack("{si ss si ss? sb}", "node_id", id, "host", host, "port", port, "rack", rack, "self", self);
}

/* This broker and, in cluster mode, the live brokers of the metadata cache. */
static json_t *view_brokers(struct broker *b)
{
	json_t *a = json_array();
	bool self_listed = false;
	int32_t controller = b->cluster ? cluster_controller_id(b->cluster) : b->node_id;
	const char *cid = b->cluster && *cluster_id(b->cluster) ? cluster_id(b->cluster) : b->cluster_id;

	for (int i = 0; b->mcache && i < b->mcache->nbrokers; i++) {
		const struct cluster_broker *cb = &b->mcache->brokers[i];

		self_listed |= cb->id == b->node_id;
		json_array_append_new(a, view_broker(cb->id, cb->host, cb->port, cb->has_rack ? cb->rack : NULL,
						     cb->id == b->node_id));
	}
	if (!self_listed)
		json_array_append_new(a, view_broker(b->node_id, b->host, b->port, b->cfg.broker_rack, true));
	return json_pack("{ss si si sb so}", "cluster_id", cid, "node_id", b->node_id, "controller_id", controller,
			 "cluster_mode", b->cluster != NULL, "brokers", a);
}

void console_view_run(struct broker *b, struct console_job *j)
{
	switch (console_job_ask(j)->op) {
	case CONSOLE_BROKERS:
		console_job_answer(j, 200, view_brokers(b));
		break;
	default:
		console_job_error(j, 400, "unknown request");
		break;
	}
}
