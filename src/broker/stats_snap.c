/*
 * stats_snap.c - copies of loop-owned state for the HTTP thread (see
 * stats_snap.h): taken by the loop on request, published under a mutex,
 * freed when the last reader puts it back.
 */
#include "broker/stats_snap.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/broker.h"
#include "broker/fetch_park.h"
#include "broker/park.h"
#include "broker/quota.h"
#include "broker/registry.h"
#include "broker/replica.h"
#include "broker/stats.h"
#include "cluster/cluster.h"
#include "cluster/mcache.h"
#include "coord/group.h"
#include "coord/group_store.h"
#include "coord/txn.h"
#include "log/partition.h"
#include "net/loop.h"
#include "util/clock.h"
#include "util/log.h"

_Static_assert(BROKER_LISTENERS_MAX <= STATS_LISTENERS, "a connection count per listener");
_Static_assert(sizeof(((struct stats_snap *)0)->listeners) / sizeof(((struct stats_snap *)0)->listeners[0]) ==
		       STATS_LISTENERS,
	       "stats_snap.listeners holds STATS_LISTENERS names");

_Static_assert(sizeof(((struct stats_snap *)0)->txns_by_state) / sizeof(int32_t) == TXN_STATE_COUNT,
	       "a count per transaction state");

/* publication */
static pthread_mutex_t stats_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t stats_cv;
static bool stats_cv_ready;
static struct broker *stats_broker;       /* NULL: no loop to ask */
static uint64_t stats_asked, stats_built; /* snapshot generations asked for and published (mu) */
static struct stats_snap *stats_last;     /* newest published (mu), one reference held here */

static void stats_snap_free(struct stats_snap *s)
{
	for (int32_t i = 0; i < s->ntopics; i++)
		free(s->topics[i].name);
	for (int32_t i = 0; i < s->nlags; i++) {
		free(s->lags[i].group);
		free(s->lags[i].topic);
	}
	free(s->lags);
	free(s->quotas);
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

		st->name = strdup(t->name);
		if (!st->name)
			return false;
		s->ntopics++;
		stats_topic_counts(t->name, &st->bytes_in, &st->bytes_out, &st->messages_in);
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

static void stats_snap_txn(void *arg, const struct txn_info *ti)
{
	struct stats_snap *s = arg;

	if ((int)ti->state >= 0 && (int)ti->state < TXN_STATE_COUNT)
		s->txns_by_state[ti->state]++;
}

/* A label value in place: bytes outside printable ASCII, quotes and backslashes become '_'. */
static void stats_label_fix(char *p)
{
	for (; *p; p++)
		if (*p < 0x20 || *p >= 0x7f || *p == '"' || *p == '\\')
			*p = '_';
}

/* Each client's byte and request rates and throttle time (quota.h); false when out of memory. */
static bool stats_snap_quotas(struct stats_snap *s)
{
	int n = quota_metric_count();
	int64_t now = clock_mono_ms();

	if (n > STATS_QUOTAS_MAX)
		n = STATS_QUOTAS_MAX;
	if (!n)
		return true;
	s->quotas = calloc((size_t)n, sizeof(*s->quotas));
	if (!s->quotas)
		return false;
	for (int i = 0; i < n; i++) {
		quota_metric_get(i, now, &s->quotas[i]);
		stats_label_fix(s->quotas[i].user);
		stats_label_fix(s->quotas[i].client_id);
	}
	s->nquotas = n;
	return true;
}

/* Cluster mode: replication as this broker sees it, and the controller's figures. */
static void stats_snap_cluster(struct broker *b, struct stats_snap *s)
{
	struct replica_counts rc;

	if (!b->cluster)
		return;
	s->clustered = true;
	replica_counts(b, &rc);
	s->under_replicated = rc.under_replicated;
	s->under_min_isr = rc.under_min_isr;
	s->at_min_isr = rc.at_min_isr;
	s->replica_max_lag = rc.max_lag;
	s->purgatory_produce += rc.produces_waiting;
	s->active_controller = cluster_is_controller(b->cluster);
	s->offline_partitions = cluster_offline_partitions(b->cluster);
}

void stats_note_member(struct broker *b)
{
	stats_set_member(!b->cluster || (cluster_registered(b->cluster) && b->mcache && b->mcache->filled));
}

static struct stats_snap *stats_snap_build(struct broker *b)
{
	struct stats_snap *s = calloc(1, sizeof(*s));
	int64_t t0 = clock_mono_us();
	if (!s)
		return NULL;
	s->refs = 1;
	s->taken_ms = clock_wall_ms();
	s->connections = stats_connections();
	for (int i = 0; i < b->nlisteners && i < STATS_LISTENERS; i++, s->nlisteners++)
		snprintf(s->listeners[i], sizeof(s->listeners[i]), "%s", b->listeners[i].name);
	if (b->txns)
		txn_coord_each(b->txns, stats_snap_txn, s);
	stats_snap_cluster(b, s); /* before the purgatory sizes: adds the produces waiting for the ISR */
	s->purgatory_produce += park_count(API_Produce);
	s->purgatory_fetch = fetch_park_count();
	if (!stats_snap_topics(b, s) || !stats_snap_groups(b, s) || !stats_snap_quotas(s)) {
		log_error("metrics: out of memory taking a snapshot");
		stats_snap_free(s);
		return NULL;
	}
	s->build_us = clock_mono_us() - t0;
	return s;
}

void stats_attach(struct broker *b)
{
	pthread_mutex_lock(&stats_mu);
	if (!stats_cv_ready) {
		clock_cond_init(&stats_cv);
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
	struct timespec until = clock_mono_deadline(STATS_SNAP_WAIT_MS);
	uint64_t want;

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
