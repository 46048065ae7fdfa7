/*
 * stats.c - the broker's counters and the loop's state snapshots (see
 * stats.h for which figure crosses threads how and why).
 *
 * Per-topic byte and message counters are kept by topic name in a small
 * open hash owned by the loop thread (plain integers: only the loop
 * touches them) and copied into each snapshot; a topic deleted and made
 * again under the same name continues its counters, as Kafka's do.
 */
#include "broker/stats.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "broker/broker.h"
#include "broker/registry.h"
#include "coord/group.h"
#include "coord/group_store.h"
#include "log/partition.h"
#include "net/loop.h"
#include "util/clock.h"
#include "util/log.h"

const double stats_lat_bounds_ms[STATS_LAT_BUCKETS] = {
	0.5, 1, 2, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000
};
const double stats_sync_bounds_ms[STATS_SYNC_BUCKETS] = { 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 25, 50, 100, 250, 1000 };

struct stats_counters stats_counters;

static bool stats_ready_flag;
static int32_t stats_conns;

/* loop-owned per-topic counters */
struct stats_tcount {
	struct stats_tcount *next;
	uint64_t bytes_in, bytes_out, messages_in;
	char name[];
};
#define STATS_TBUCKETS 4096
static struct stats_tcount *stats_tcounts[STATS_TBUCKETS];
static int32_t stats_ntcounts;

/* snapshot publication */
static pthread_mutex_t stats_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t stats_cv;
static bool stats_cv_ready;
static struct broker *stats_broker;       /* NULL: no loop to ask */
static uint64_t stats_asked, stats_built; /* snapshot generations asked for and published (mu) */
static struct stats_snap *stats_last;     /* newest published (mu), one reference held here */

static void stats_bucket_add(uint64_t *buckets, const double *bounds, int n, double ms)
{
	for (int i = 0; i < n; i++)
		if (ms <= bounds[i]) {
			stats_add(&buckets[i], 1);
			return;
		}
}

void stats_request(int16_t api_key, int16_t api_version, int64_t us, bool refused)
{
	struct stats_counters *sc = &stats_counters;

	if (api_key < 0 || api_key >= API_COUNT || api_version < 0)
		return;
	if (us < 0)
		us = 0;
	stats_add(&sc->requests[api_key][api_version < STATS_VERSIONS ? api_version : STATS_VERSIONS - 1], 1);
	if (refused)
		stats_add(&sc->errors[api_key], 1);
	stats_bucket_add(sc->lat_bucket[api_key], stats_lat_bounds_ms, STATS_LAT_BUCKETS, (double)us / 1000.0);
	stats_add(&sc->lat_sum_us[api_key], (uint64_t)us);
	stats_add(&sc->lat_count[api_key], 1);
}

void stats_sync_round(int64_t us, uint64_t parts)
{
	struct stats_counters *sc = &stats_counters;

	if (us < 0)
		us = 0;
	stats_bucket_add(sc->sync_bucket, stats_sync_bounds_ms, STATS_SYNC_BUCKETS, (double)us / 1000.0);
	stats_add(&sc->sync_sum_us, (uint64_t)us);
	stats_add(&sc->sync_parts, parts);
	stats_add(&sc->sync_count, 1);
}

static uint32_t stats_hash(struct kstr s)
{
	uint32_t h = 2166136261u;

	for (int32_t i = 0; i < s.len; i++)
		h = (h ^ (uint8_t)s.p[i]) * 16777619u;
	return h;
}

/* The counters of topic, made on first use; NULL past STATS_TOPICS_MAX names or out of memory. */
static struct stats_tcount *stats_tcount(struct kstr topic, bool make)
{
	struct stats_tcount **pp;
	size_t n = topic.len > 0 ? (size_t)topic.len : 0;

	topic.len = (int32_t)n;
	for (pp = &stats_tcounts[stats_hash(topic) % STATS_TBUCKETS]; *pp; pp = &(*pp)->next)
		if (!strncmp((*pp)->name, topic.p, n) && !(*pp)->name[n])
			return *pp;
	if (!make || stats_ntcounts >= STATS_TOPICS_MAX)
		return NULL;
	*pp = calloc(1, sizeof(**pp) + n + 1);
	if (*pp) {
		memcpy((*pp)->name, topic.p, n);
		stats_ntcounts++;
	}
	return *pp;
}

void stats_topic_in(struct kstr topic, uint64_t bytes, uint64_t messages)
{
	struct stats_tcount *tc = stats_tcount(topic, true);

	stats_add(&stats_counters.bytes_in, bytes);
	stats_add(&stats_counters.messages_in, messages);
	if (tc) {
		tc->bytes_in += bytes;
		tc->messages_in += messages;
	}
}

void stats_topic_out(struct kstr topic, uint64_t bytes)
{
	struct stats_tcount *tc = stats_tcount(topic, true);

	stats_add(&stats_counters.bytes_out, bytes);
	if (tc)
		tc->bytes_out += bytes;
}

void stats_set_ready(bool ready)
{
	__atomic_store_n(&stats_ready_flag, ready, __ATOMIC_RELEASE);
}

bool stats_ready(void)
{
	return __atomic_load_n(&stats_ready_flag, __ATOMIC_ACQUIRE);
}

void stats_set_connections(int32_t n)
{
	__atomic_store_n(&stats_conns, n, __ATOMIC_RELAXED);
}

static void stats_snap_free(struct stats_snap *s)
{
	for (int32_t i = 0; i < s->ntopics; i++)
		free(s->topics[i].name);
	for (int32_t i = 0; i < s->nlags; i++) {
		free(s->lags[i].group);
		free(s->lags[i].topic);
	}
	free(s->lags);
	free(s->topics);
	free(s->parts);
	free(s);
}

/* Copies the topics and their partitions; false when out of memory. */
static bool stats_snap_topics(struct broker *b, struct stats_snap *s)
{
	int n;
	struct topic **topics = registry_topics(b->reg, &n);
	int32_t nparts = 0;

	for (int i = 0; i < n; i++)
		nparts += topics[i]->nparts;
	s->topics = calloc((size_t)n + 1, sizeof(*s->topics));
	s->parts = calloc((size_t)nparts + 1, sizeof(*s->parts));
	if (!s->topics || !s->parts)
		return false;
	for (int i = 0; i < n; i++) {
		struct topic *t = topics[i];
		struct stats_topic *st = &s->topics[s->ntopics];
		struct stats_tcount *tc = stats_tcount((struct kstr){ t->name, (int32_t)strlen(t->name) }, false);

		st->name = strdup(t->name);
		if (!st->name)
			return false;
		s->ntopics++;
		if (tc) {
			st->bytes_in = tc->bytes_in;
			st->bytes_out = tc->bytes_out;
			st->messages_in = tc->messages_in;
		}
		for (int32_t p = 0; p < t->nparts && s->nparts < nparts; p++) {
			struct part *part = t->parts[p];
			struct stats_part *sp = &s->parts[s->nparts];

			if (!part)
				continue;
			sp->topic = s->ntopics - 1;
			sp->partition = p;
			sp->size_bytes = part_size_bytes(part);
			sp->log_start_offset = part_log_start_offset(part);
			sp->log_end_offset = part_log_end_offset(part);
			s->leaders += registry_leader(b->reg, t, p) == b->node_id;
			s->nparts++;
		}
	}
	return true;
}

/* A group id as a label value: bytes outside printable ASCII, quotes and backslashes become '_'. */
static char *stats_label_dup(struct kstr s)
{
	char *p = malloc(s.len > 0 ? (size_t)s.len + 1 : 1);

	for (int32_t i = 0; p && i < s.len; i++)
		p[i] = s.p[i] >= 0x20 && s.p[i] < 0x7f && s.p[i] != '"' && s.p[i] != '\\' ? s.p[i] : '_';
	if (p)
		p[s.len > 0 ? s.len : 0] = '\0';
	return p;
}

/* One group's committed offsets against their partitions' high watermarks; false when out of memory. */
static bool stats_snap_group_lags(struct broker *b, struct stats_snap *s, const struct group *grp)
{
	const struct group_offsets *go = group_offsets(grp);

	for (int i = 0; i < go->n; i++) {
		const struct group_offset *o = &go->v[i];
		struct topic *t = registry_find(b->reg, (struct kstr){ o->topic, (int32_t)strlen(o->topic) });
		struct part *part = t ? registry_part(t, o->partition) : NULL;
		struct stats_lag *l;

		if (!part)
			continue;
		if (s->nlags >= STATS_LAGS_MAX) {
			s->lags_dropped++;
			continue;
		}
		l = &s->lags[s->nlags];
		l->group = stats_label_dup(group_name(grp));
		l->topic = strdup(o->topic);
		l->partition = o->partition;
		l->lag = part_high_watermark(part) - o->offset;
		if (l->lag < 0)
			l->lag = 0;
		s->nlags++;
		if (!l->group || !l->topic)
			return false;
	}
	return true;
}

/* Groups by state and their lags. */
static bool stats_snap_groups(struct broker *b, struct stats_snap *s)
{
	struct group **groups;
	int ng = 0;

	groups = b->groups ? group_coord_groups(b->groups, &ng) : NULL;
	if (!groups || !ng)
		return true;
	s->lags = calloc(STATS_LAGS_MAX, sizeof(*s->lags));
	if (!s->lags)
		return false;
	for (int i = 0; i < ng; i++) {
		enum group_state st = group_state(groups[i]);

		if ((int)st >= 0 && (int)st < 5)
			s->groups_by_state[st]++;
		if (!stats_snap_group_lags(b, s, groups[i]))
			return false;
	}
	return true;
}

static struct stats_snap *stats_snap_build(struct broker *b)
{
	struct stats_snap *s = calloc(1, sizeof(*s));
	int64_t t0 = clock_mono_us();
	if (!s)
		return NULL;
	s->refs = 1;
	s->taken_ms = clock_wall_ms();
	s->connections = __atomic_load_n(&stats_conns, __ATOMIC_RELAXED);
	if (!stats_snap_topics(b, s) || !stats_snap_groups(b, s)) {
		log_error("metrics: out of memory taking a snapshot");
		stats_snap_free(s);
		return NULL;
	}
	s->build_us = clock_mono_us() - t0;
	return s;
}

void stats_attach(struct broker *b)
{
	pthread_condattr_t ca;

	pthread_mutex_lock(&stats_mu);
	if (!stats_cv_ready) {
		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&stats_cv, &ca);
		pthread_condattr_destroy(&ca);
		stats_cv_ready = true;
	}
	stats_broker = b;
	pthread_mutex_unlock(&stats_mu);
}

void stats_detach(void)
{
	pthread_mutex_lock(&stats_mu);
	stats_broker = NULL;
	if (stats_cv_ready)
		pthread_cond_broadcast(&stats_cv);
	pthread_mutex_unlock(&stats_mu);
}

void stats_on_wake(struct broker *b)
{
	struct stats_snap *s, *old = NULL;
	uint64_t asked;

	pthread_mutex_lock(&stats_mu);
	asked = stats_asked;
	pthread_mutex_unlock(&stats_mu);
	if (asked == stats_built)
		return; /* stats_built is written only here, on the loop thread */
	s = stats_snap_build(b);
	pthread_mutex_lock(&stats_mu);
	if (s) {
		old = stats_last;
		stats_last = s;
	}
	stats_built = asked;
	pthread_cond_broadcast(&stats_cv);
	if (old && --old->refs > 0)
		old = NULL;
	pthread_mutex_unlock(&stats_mu);
	if (old)
		stats_snap_free(old);
}

struct stats_snap *stats_snap_get(void)
{
	struct stats_snap *s;
	struct timespec until;
	uint64_t want;

	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_sec += STATS_SNAP_WAIT_MS / 1000;
	until.tv_nsec += (long)(STATS_SNAP_WAIT_MS % 1000) * 1000000L;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&stats_mu);
	want = ++stats_asked;
	if (stats_broker) {
		loop_wake(stats_broker->loop);
		while (stats_broker && stats_built < want)
			if (pthread_cond_timedwait(&stats_cv, &stats_mu, &until))
				break;
	}
	s = stats_last;
	if (s)
		s->refs++;
	pthread_mutex_unlock(&stats_mu);
	return s;
}

void stats_snap_put(struct stats_snap *s)
{
	bool last;

	if (!s)
		return;
	pthread_mutex_lock(&stats_mu);
	last = --s->refs == 0;
	pthread_mutex_unlock(&stats_mu);
	if (last)
		stats_snap_free(s);
}
