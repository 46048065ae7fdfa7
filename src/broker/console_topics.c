/*
 * console_topics.c - the web console's topics and partitions (see
 * console_topics.h).
 *
 * At 10,000 partitions building the answer's JSON took the event loop
 * 30-100 ms, so the loop only copies (plain arrays, a few allocations,
 * like the /metrics snapshot) and the HTTP thread builds and renders the
 * JSON (console_job_answer_snap).  A partition's leader, replicas and ISR
 * come from the metadata cache in cluster mode and are this broker alone
 * on a single node; its offsets and size are given where this broker
 * leads it (registry_part), null otherwise.
 */
#include "broker/console_topics.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "broker/broker.h"
#include "broker/console.h"
#include "broker/console_view.h"
#include "broker/registry.h"
#include "broker/stats.h"
#include "cluster/mcache.h"
#include "log/partition.h"

struct tsnap_part {
	int32_t partition, leader;
	int32_t replicas_at, nreplicas, isr_at, nisr; /* in tsnap.ids */
	bool held;                                    /* led here: the offsets below are known */
	int64_t log_start_offset, log_end_offset, high_watermark, size_bytes;
};

struct tsnap_topic {
	char *name;
	int32_t parts_at, nparts; /* in tsnap.parts */
	uint64_t bytes_in, bytes_out, messages_in;
};

/* The copy: topics, their partitions and the broker ids those name, in three arrays. */
struct tsnap {
	bool one; /* the answer is the first topic, not a list */
	int32_t ntopics, nparts, nids, cap_topics, cap_parts, cap_ids;
	struct tsnap_topic *topics;
	struct tsnap_part *parts;
	int32_t *ids;
	bool oom;
};

static void tsnap_free(void *arg)
{
	struct tsnap *s = arg;

	for (int32_t i = 0; i < s->ntopics; i++)
		free(s->topics[i].name);
	free(s->topics);
	free(s->parts);
	free(s->ids);
	free(s);
}

/* Room for element n of *v; false (s->oom) when out of memory. */
static bool tsnap_room(struct tsnap *s, void **v, int32_t n, int32_t *cap, size_t size)
{
	s->oom |= !console_grow(v, cap, n, size);
	return !s->oom;
}

/* Appends n broker ids; returns where they start. */
static int32_t tsnap_ids(struct tsnap *s, const int32_t *v, int32_t n)
{
	int32_t at = s->nids;

	for (int32_t i = 0; i < n; i++) {
		if (!tsnap_room(s, (void **)&s->ids, s->nids, &s->cap_ids, sizeof(*s->ids)))
			return at;
		s->ids[s->nids++] = v[i];
	}
	return at;
}

static void tsnap_part_add(struct tsnap *s, struct broker *b, int32_t p, const struct mcache_part *cp,
			   struct part *part)
{
	struct tsnap_part *sp;

	if (!tsnap_room(s, (void **)&s->parts, s->nparts, &s->cap_parts, sizeof(*s->parts)))
		return;
	sp = &s->parts[s->nparts++];
	memset(sp, 0, sizeof(*sp));
	sp->partition = p;
	sp->leader = cp ? cp->leader : b->node_id;
	sp->nreplicas = cp ? cp->replicas.n : 1;
	sp->replicas_at = tsnap_ids(s, cp ? cp->replicas.v : &b->node_id, sp->nreplicas);
	sp->nisr = cp ? cp->isr.n : 1;
	sp->isr_at = tsnap_ids(s, cp ? cp->isr.v : &b->node_id, sp->nisr);
	sp->held = part != NULL;
	if (part) {
		sp->log_start_offset = part_log_start_offset(part);
		sp->log_end_offset = part_log_end_offset(part);
		sp->high_watermark = part_high_watermark(part);
		sp->size_bytes = part_size_bytes(part);
	}
}

/* One topic by name: t its partitions here (NULL: none), ct the cluster's view (NULL: single node). */
static void tsnap_topic_add(struct tsnap *s, struct broker *b, const char *name, struct topic *t,
			    const struct mcache_topic *ct)
{
	int32_t n = ct ? ct->nparts : t ? t->nparts : 0;
	struct tsnap_topic *st;

	if (!tsnap_room(s, (void **)&s->topics, s->ntopics, &s->cap_topics, sizeof(*s->topics)))
		return;
	st = &s->topics[s->ntopics];
	memset(st, 0, sizeof(*st));
	st->name = strdup(name);
	if (!st->name) {
		s->oom = true;
		return;
	}
	s->ntopics++;
	stats_topic_counts(name, &st->bytes_in, &st->bytes_out, &st->messages_in);
	st->parts_at = s->nparts;
	for (int32_t p = 0; p < n && !s->oom; p++)
		tsnap_part_add(s, b, p, ct ? &ct->parts[p] : NULL, t ? registry_part(t, p) : NULL);
	st->nparts = s->nparts - st->parts_at;
}

static json_t *render_ids(const struct tsnap *s, int32_t at, int32_t n)
{
	json_t *a = json_array();

	for (int32_t i = 0; i < n; i++)
		json_array_append_new(a, json_integer(s->ids[at + i]));
	return a;
}

static json_t *render_part(const struct tsnap *s, const struct tsnap_part *p)
{
	json_t *o = json_pack("{si si so so}", "partition", p->partition, "leader", p->leader, "replicas",
			      render_ids(s, p->replicas_at, p->nreplicas), "isr", render_ids(s, p->isr_at, p->nisr));

	json_object_set_new(o, "log_start_offset", p->held ? json_integer(p->log_start_offset) : json_null());
	json_object_set_new(o, "log_end_offset", p->held ? json_integer(p->log_end_offset) : json_null());
	json_object_set_new(o, "high_watermark", p->held ? json_integer(p->high_watermark) : json_null());
	json_object_set_new(o, "size_bytes", p->held ? json_integer(p->size_bytes) : json_null());
	return o;
}

static json_t *render_topic(const struct tsnap *s, const struct tsnap_topic *t)
{
	json_t *parts = json_array();
	int64_t size = 0;

	for (int32_t i = 0; i < t->nparts; i++) {
		const struct tsnap_part *p = &s->parts[t->parts_at + i];

		json_array_append_new(parts, render_part(s, p));
		size += p->held ? p->size_bytes : 0;
	}
	return json_pack("{so sb si sI sI sI sI so}", "name", console_json_str(t->name, strlen(t->name)), "internal",
			 topic_name_internal(kstr_c(t->name)), "partition_count", t->nparts, "size_bytes",
			 (json_int_t)size, "bytes_in", (json_int_t)t->bytes_in, "bytes_out", (json_int_t)t->bytes_out,
			 "messages_in", (json_int_t)t->messages_in, "partitions", parts);
}

/* HTTP thread: the answer. */
static json_t *tsnap_render(void *arg)
{
	const struct tsnap *s = arg;
	json_t *a;

	if (s->one)
		return render_topic(s, &s->topics[0]);
	a = json_array();
	for (int32_t i = 0; i < s->ntopics; i++)
		json_array_append_new(a, render_topic(s, &s->topics[i]));
	return json_pack("{so}", "topics", a);
}

static void tsnap_answer(struct console_job *j, struct tsnap *s)
{
	if (s->oom) {
		tsnap_free(s);
		console_job_error(j, 500, "out of memory");
		return;
	}
	console_job_answer_snap(j, 200, s, tsnap_render, tsnap_free);
}

static void topics_all(struct broker *b, struct console_job *j, struct tsnap *s)
{
	struct topic **topics;
	int n = 0;

	if (b->mcache && b->mcache->filled) {
		for (int i = 0; i < b->mcache->ntopics && !s->oom; i++) {
			const struct mcache_topic *ct = &b->mcache->topics[i];

			tsnap_topic_add(s, b, ct->name, registry_find(b->reg, kstr_c(ct->name)), ct);
		}
	} else {
		topics = registry_topics(b->reg, &n);
		for (int i = 0; i < n && !s->oom; i++)
			if (!topics[i]->creating)
				tsnap_topic_add(s, b, topics[i]->name, topics[i], NULL);
	}
	tsnap_answer(j, s);
}

static void topics_one(struct broker *b, struct console_job *j, struct tsnap *s)
{
	const char *name = console_job_ask(j)->name;
	struct topic *t = registry_find(b->reg, kstr_c(name));
	bool cached = b->mcache && b->mcache->filled;
	const struct mcache_topic *ct = cached ? mcache_topic(b->mcache, name, (int32_t)strlen(name)) : NULL;

	if (t && t->creating)
		t = NULL;
	if (!ct && (!t || cached)) {
		tsnap_free(s);
		console_job_error(j, 404, "unknown topic '%s'", name);
		return;
	}
	s->one = true;
	tsnap_topic_add(s, b, name, t, ct);
	tsnap_answer(j, s);
}

void console_topics_run(struct broker *b, struct console_job *j)
{
	struct tsnap *s = calloc(1, sizeof(*s));

	if (!s)
		console_job_error(j, 500, "out of memory");
	else if (console_job_ask(j)->op == CONSOLE_TOPIC)
		topics_one(b, j, s);
	else
		topics_all(b, j, s);
}
