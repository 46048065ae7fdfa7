/*
 * stats.h - what the broker counts for the operations layer (ops/metrics.c
 * renders it as Prometheus text on the HTTP thread).
 *
 * Two kinds of figures, two ways across the thread boundary:
 *
 *  - Counters and histograms of requests, sync rounds and bytes are
 *    written by the thread doing the work (the event loop, the syncer) as
 *    relaxed atomic adds into fixed arrays and read by the HTTP thread with
 *    relaxed atomic loads.  No lock, no allocation, nothing the loop waits
 *    on; a scrape may see a histogram's _count one request ahead of its
 *    buckets, which Prometheus tolerates.
 *
 *  - Everything that lives in loop-owned structures (stats_snap.h) (topics, partitions,
 *    log sizes, groups, connections, per-topic byte counters keyed by
 *    name) is copied by the loop into a snapshot *on request*: the HTTP
 *    thread raises a flag and wakes the loop (loop_wake), the loop builds
 *    a fresh struct stats_snap in its wake-up callback (stats_on_wake) and
 *    publishes it under a mutex; the HTTP thread waits for it at most
 *    STATS_SNAP_WAIT_MS and otherwise serves the newest one it has (a
 *    busy or stopped loop never blocks a scrape for longer).  On request
 *    rather than periodic so that an unscraped broker pays nothing, and a
 *    scrape sees figures from that moment.
 */
#ifndef GREGOR_BROKER_STATS_H
#define GREGOR_BROKER_STATS_H

#include <stdbool.h>
#include <stdint.h>

#include "proto_msgs.h"
#include "util/buf.h"

#define STATS_VERSIONS 17      /* request versions counted one by one (0..16); higher ones count as 16 */
#define STATS_LAT_BUCKETS 14   /* request total time buckets, ms (stats_lat_bounds_ms) */
#define STATS_SYNC_BUCKETS 12  /* sync round time buckets, ms (stats_sync_bounds_ms) */
#define STATS_TOPICS_MAX 20000 /* per-topic series beyond this are folded into the totals only */
#define STATS_ERRCODES 128     /* Kafka error codes counted one by one (1..127); slot 0 is any other */
/* Request slots: every API key, then Fetch split as Kafka's RequestMetrics split it (request="FetchConsumer"/"FetchFollower") */
#define STATS_FETCH_CONSUMER API_COUNT
#define STATS_FETCH_FOLLOWER (API_COUNT + 1)
#define STATS_SLOTS (API_COUNT + 2)
#define STATS_LISTENERS 8 /* per-listener connection counts (broker.h BROKER_LISTENERS_MAX) */

extern const double stats_lat_bounds_ms[STATS_LAT_BUCKETS];
extern const double stats_sync_bounds_ms[STATS_SYNC_BUCKETS];

/* Written with relaxed atomics by their owners; read the same way (stats_load). */
struct stats_counters {
	uint64_t requests[STATS_SLOTS][STATS_VERSIONS];
	/*
	 * Error codes in responses, by API and code (stats_errcode_slot); a request
	 * refused by closing its connection counts as INVALID_REQUEST.
	 */
	uint64_t errors[API_COUNT][STATS_ERRCODES];
	uint64_t lat_bucket[STATS_SLOTS][STATS_LAT_BUCKETS]; /* non-cumulative; +Inf is count - sum of these */
	uint64_t lat_count[STATS_SLOTS];
	uint64_t lat_sum_us[STATS_SLOTS];
	uint64_t bytes_in, bytes_out, messages_in; /* totals over every topic */
	uint64_t sync_bucket[STATS_SYNC_BUCKETS];  /* one sample per sync round (its fdatasyncs) */
	uint64_t sync_count, sync_sum_us, sync_parts, sync_bytes;
	uint64_t connections_accepted;
	uint64_t listener_created[STATS_LISTENERS]; /* connections accepted, by listener index */
	uint64_t listener_closed[STATS_LISTENERS];  /* and closed: open = created - closed */
	uint64_t isr_shrinks, isr_expands;          /* stats_isr_change */
};
extern struct stats_counters stats_counters;

static inline void stats_add(uint64_t *c, uint64_t v)
{
	__atomic_fetch_add(c, v, __ATOMIC_RELAXED);
}
static inline uint64_t stats_load(const uint64_t *c)
{
	return __atomic_load_n(c, __ATOMIC_RELAXED);
}

/*
 * A request finished (answered or refused) after us microseconds; a Fetch
 * also counts as FetchFollower (from_follower: a replica's) or
 * FetchConsumer. Loop thread.
 */
void stats_request(int16_t api_key, int16_t api_version, int64_t us, bool refused, bool from_follower);
/* Counts every non-zero error code in response out of api_key at api_version (before it is encoded). */
void stats_response_errors(int16_t api_key, int16_t api_version, const void *out);
/* The errors[] slot of a Kafka error code, and back (0: any code outside 1..127, reported as UNKNOWN_SERVER_ERROR). */
int stats_errcode_slot(int16_t error_code);
int16_t stats_slot_errcode(int slot);
/*
 * A partition this broker leads shrank (shrink) or expanded its ISR: what
 * kafka_server_replicamanager_isrshrinks_total / _isrexpands_total count.
 * Called by whatever changes a leader's ISR, once per partition and change.
 */
void stats_isr_change(bool shrink);
/* Records appended to topic (loop thread): bytes and messages in. */
void stats_topic_in(struct kstr topic, uint64_t bytes, uint64_t messages);
/* Record bytes served from topic by a fetch (loop thread). */
void stats_topic_out(struct kstr topic, uint64_t bytes);
/* One sync round: its duration, the partitions it synced and their record bytes made durable (syncer thread). */
void stats_sync_round(int64_t us, uint64_t parts, uint64_t bytes);

/* The log dirs are loaded and the Kafka listener is up (or no longer: shutdown). */
void stats_set_ready(bool ready);
/*
 * Cluster mode: registered under /brokers/ids and holding the controller's
 * metadata (or no longer); always true on a single node.  Loop thread
 * (stats_note_member), read by /health/ready.
 */
void stats_set_member(bool member);
/* What /health/ready answers: ready and, in cluster mode, a member with metadata. */
bool stats_ready(void);

/* A connection accepted by (opened) or closed on listener index listener (loop thread). */
void stats_listener_conn(int listener, bool opened);
/* Connections open now (server.c keeps it), and read back. */
void stats_set_connections(int32_t n);
int32_t stats_connections(void);
/* Loop thread: topic's counters so far; false if it has none. */
bool stats_topic_counts(const char *topic, uint64_t *bytes_in, uint64_t *bytes_out, uint64_t *messages_in);

#endif
