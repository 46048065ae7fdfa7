/*
 * stats_snap.h - copies of loop-owned state (topics, partitions, log
 * sizes, groups and their lag, connections) for the HTTP thread; stats.h
 * says why on request rather than periodically.
 */
#ifndef GREGOR_BROKER_STATS_SNAP_H
#define GREGOR_BROKER_STATS_SNAP_H

#include <stdbool.h>
#include <stdint.h>

struct broker;
struct quota_metric;

#define STATS_SNAP_WAIT_MS 1000
#define STATS_LAGS_MAX 10000   /* consumer lag series (group, topic, partition) per scrape */
#define STATS_QUOTAS_MAX 10000 /* client quota rates (kind, user, client-id) per scrape */

/* A copy of loop-owned state, immutable once published. */
struct stats_part {
	int32_t topic; /* index into stats_snap.topics */
	int32_t partition;
	int64_t size_bytes;
	int64_t log_start_offset, log_end_offset;
};
struct stats_topic {
	char *name;
	uint64_t bytes_in, bytes_out, messages_in;
};
struct stats_lag {
	char *group; /* sanitised for a label value: printable ASCII, no quote or backslash */
	char *topic;
	int32_t partition;
	int64_t lag; /* high watermark - committed offset, at least 0 */
};
struct stats_snap {
	int64_t taken_ms; /* clock_wall_ms() */
	int64_t build_us; /* the loop's time taking it */
	int32_t ntopics, nparts;
	struct stats_topic *topics;
	struct stats_part *parts;
	int32_t leaders; /* partitions this broker leads */
	bool clustered;  /* cluster mode: the replication and controller figures below apply */
	int32_t under_replicated, under_min_isr, at_min_isr; /* replica.h, struct replica_counts */
	int64_t replica_max_lag;
	int32_t active_controller;   /* 1 on the active controller */
	int32_t offline_partitions;  /* the controller's: partitions with leader -1 */
	int32_t purgatory_produce;   /* produces waiting for a sync round or the ISR */
	int32_t purgatory_fetch;     /* fetches waiting for data (long poll) */
	int32_t nlags, lags_dropped; /* lags past STATS_LAGS_MAX are counted, not listed */
	struct stats_lag *lags;
	int32_t groups_by_state[5]; /* enum group_state */
	int32_t txns_by_state[8];   /* transactional ids this coordinator holds, by enum txn_state */
	int32_t connections;
	int32_t nlisteners;
	char listeners[8][64];       /* their names (STATS_LISTENERS), indexed as conn_listener() */
	int32_t nquotas;             /* client rates, at most STATS_QUOTAS_MAX */
	struct quota_metric *quotas; /* labels sanitised as group ids are */
	int refs;                    /* under the publication lock */
};

/* The loop this broker runs on and the state snapshots are taken from (server_start). */
void stats_attach(struct broker *b);
/* Loop thread, from the broker's wake-up callback: builds a snapshot if one was asked for. */
void stats_on_wake(struct broker *b);
/* Loop thread, after each pass: tells /health/ready whether this broker is a cluster member (stats_set_member). */
void stats_note_member(struct broker *b);
/* Loop thread, at shutdown: no more snapshots (waiters get the last one at once). */
void stats_detach(void);
/*
 * Any thread but the loop's: asks the loop for a fresh snapshot and waits
 * at most STATS_SNAP_WAIT_MS; returns it, or the newest older one, or NULL
 * if none was ever taken.  Release with stats_snap_put.
 */
struct stats_snap *stats_snap_get(void);
void stats_snap_put(struct stats_snap *s);

#endif
