/*
 * cleanable.h - which part of a compacted log a cleaning pass may rewrite,
 * how dirty it is, and which log of several to clean first (Kafka's
 * LogCleanerManager rules).  Pure arithmetic over a description of the
 * segments, so the cleaner's choice is tested without files or threads.
 *
 * Of a log's segments s[0..n) (the last one active):
 *  - the first dirty offset is the cleaner checkpoint when it lies within
 *    [log start, log end], else the log start (a checkpoint of a truncated
 *    or recreated log is not trusted);
 *  - the first uncleanable offset is the smallest of: the base offset of
 *    the active segment, the first unstable offset (open transactions),
 *    and, when min.compaction.lag.ms > 0, the base offset of the first
 *    dirty segment holding a record newer than now - min.compaction.lag.ms
 *    (or of unknown age);
 *  - clean bytes are the segments wholly before the first dirty offset,
 *    cleanable bytes those from the segment holding the first dirty
 *    offset up to the first uncleanable offset; the dirty ratio is
 *    cleanable / (clean + cleanable);
 *  - the log must be cleaned now, whatever its ratio, when its first dirty
 *    segment's first record is older than max.compaction.lag.ms.
 *
 * Threading: none; the caller describes the segments under its own lock.
 */
#ifndef GREGOR_LOG_CLEANABLE_H
#define GREGOR_LOG_CLEANABLE_H

#include <stdbool.h>
#include <stdint.h>

/* One segment as the cleaner sees it. */
struct cleanable_seg {
	int64_t base_offset;
	int64_t size;     /* bytes of its .log */
	int64_t first_ts; /* timestamp of its first batch, -1 if unknown */
	int64_t max_ts;   /* largest record timestamp in it, -1 if unknown */
};

/* A log to consider: segments in offset order, the last one active. */
struct cleanable_log {
	const struct cleanable_seg *segs;
	int nsegs;
	int64_t log_start_offset;
	int64_t log_end_offset;
	int64_t first_unstable_offset; /* INT64_MAX when no transaction is open */
	int64_t checkpoint;            /* cleaner-offset-checkpoint, -1 if none */
	int64_t min_lag_ms;            /* min.compaction.lag.ms */
	int64_t max_lag_ms;            /* max.compaction.lag.ms */
	double min_ratio;              /* min.cleanable.dirty.ratio */
};

struct cleanable {
	int64_t first_dirty;
	int64_t first_uncleanable; /* >= first_dirty */
	int64_t clean_bytes;
	int64_t cleanable_bytes;
	double ratio;    /* cleanable / (clean + cleanable), 0 when both are 0 */
	bool must_clean; /* max.compaction.lag.ms passed */
};

/* Fills *out for log l at time now_ms (the rules at the top of this file). */
void cleanable_measure(const struct cleanable_log *l, int64_t now_ms, struct cleanable *out);

/*
 * Whether a pass should clean the measured log: it has cleanable bytes and
 * either must be cleaned now or its ratio is above min_ratio.
 */
bool cleanable_due(const struct cleanable *c, double min_ratio);

/*
 * Of the n logs, the index of the one to clean now: among those due, the
 * highest ratio (the first on a tie).  -1 when none is due.  m[i] receives
 * the measure of logs[i] (for the log line of the pass).
 */
int cleanable_pick(const struct cleanable_log *logs, int n, int64_t now_ms, struct cleanable *m);

#endif
