/*
 * stats.c - the broker's counters (see stats.h for which figure crosses
 * threads how and why; stats_snap.c copies loop-owned state).
 *
 * Per-topic byte and message counters are kept by topic name in a small
 * open hash owned by the loop thread (plain integers: only the loop
 * touches them) and copied into each snapshot; a topic deleted and made
 * again under the same name continues its counters, as Kafka's do.
 */
#include "broker/stats.h"

#include <stdlib.h>
#include <string.h>

#include "proto/kerr.h"

const double stats_lat_bounds_ms[STATS_LAT_BUCKETS] = {
	0.5, 1, 2, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000
};
const double stats_sync_bounds_ms[STATS_SYNC_BUCKETS] = { 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 25, 50, 100, 250, 1000 };

struct stats_counters stats_counters;

static bool stats_ready_flag;
static bool stats_member_flag; /* set at the loop's first pass (stats_note_member) */
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

static void stats_bucket_add(uint64_t *buckets, const double *bounds, int n, double ms)
{
	for (int i = 0; i < n; i++)
		if (ms <= bounds[i]) {
			stats_add(&buckets[i], 1);
			return;
		}
}

/* One request in request slot (an API key, or the Fetch split). */
static void stats_slot_request(int slot, int16_t api_version, int64_t us)
{
	struct stats_counters *sc = &stats_counters;

	stats_add(&sc->requests[slot][api_version < STATS_VERSIONS ? api_version : STATS_VERSIONS - 1], 1);
	stats_bucket_add(sc->lat_bucket[slot], stats_lat_bounds_ms, STATS_LAT_BUCKETS, (double)us / 1000.0);
	stats_add(&sc->lat_sum_us[slot], (uint64_t)us);
	stats_add(&sc->lat_count[slot], 1);
}

void stats_request(int16_t api_key, int16_t api_version, int64_t us, bool refused, bool from_follower)
{
	if (api_key < 0 || api_key >= API_COUNT || api_version < 0)
		return;
	if (us < 0)
		us = 0;
	stats_slot_request(api_key, api_version, us);
	if (api_key == API_Fetch)
		stats_slot_request(from_follower ? STATS_FETCH_FOLLOWER : STATS_FETCH_CONSUMER, api_version, us);
	if (refused)
		stats_add(&stats_counters.errors[api_key][stats_errcode_slot(KERR_INVALID_REQUEST)], 1);
}

int stats_errcode_slot(int16_t error_code)
{
	return error_code > 0 && error_code < STATS_ERRCODES ? error_code : 0;
}

int16_t stats_slot_errcode(int slot)
{
	return slot > 0 ? (int16_t)slot : KERR_UNKNOWN_SERVER_ERROR;
}

static void stats_count_error(void *arg, int16_t error_code)
{
	uint64_t *errors = arg;

	if (error_code)
		stats_add(&errors[stats_errcode_slot(error_code)], 1);
}

void stats_response_errors(int16_t api_key, int16_t api_version, const void *out)
{
	if (api_key < 0 || api_key >= API_COUNT || !proto_apis[api_key].resp_errors)
		return;
	proto_apis[api_key].resp_errors(out, api_version, stats_count_error, stats_counters.errors[api_key]);
}

void stats_listener_conn(int listener, bool opened)
{
	if (listener >= 0 && listener < STATS_LISTENERS)
		stats_add(opened ? &stats_counters.listener_created[listener]
				 : &stats_counters.listener_closed[listener],
			  1);
}

void stats_isr_change(bool shrink)
{
	stats_add(shrink ? &stats_counters.isr_shrinks : &stats_counters.isr_expands, 1);
}

void stats_sync_round(int64_t us, uint64_t parts, uint64_t bytes)
{
	struct stats_counters *sc = &stats_counters;

	if (us < 0)
		us = 0;
	stats_bucket_add(sc->sync_bucket, stats_sync_bounds_ms, STATS_SYNC_BUCKETS, (double)us / 1000.0);
	stats_add(&sc->sync_sum_us, (uint64_t)us);
	stats_add(&sc->sync_parts, parts);
	stats_add(&sc->sync_bytes, bytes);
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

void stats_set_member(bool member)
{
	__atomic_store_n(&stats_member_flag, member, __ATOMIC_RELEASE);
}

bool stats_ready(void)
{
	return __atomic_load_n(&stats_ready_flag, __ATOMIC_ACQUIRE) &&
	       __atomic_load_n(&stats_member_flag, __ATOMIC_ACQUIRE);
}

void stats_set_connections(int32_t n)
{
	__atomic_store_n(&stats_conns, n, __ATOMIC_RELAXED);
}

bool stats_topic_counts(const char *topic, uint64_t *bytes_in, uint64_t *bytes_out, uint64_t *messages_in)
{
	struct stats_tcount *tc = stats_tcount((struct kstr){ topic, (int32_t)strlen(topic) }, false);

	if (!tc)
		return false;
	*bytes_in = tc->bytes_in;
	*bytes_out = tc->bytes_out;
	*messages_in = tc->messages_in;
	return true;
}

int32_t stats_connections(void)
{
	return __atomic_load_n(&stats_conns, __ATOMIC_RELAXED);
}
