/*
 * compact.h - one compaction pass of a partition log, from the choice of
 * its segments to the swap of the cleaned ones into the log, and the
 * recovery of a pass a crash interrupted.  The rules of what a pass keeps
 * are clean.h's; which part of the log it may touch is cleanable.h's.
 *
 * A pass goes through three steps on two threads:
 *
 *   loop thread                       cleaner thread
 *   compact_plan(part)  -- job -->    compact_run(job)
 *                                       map over the dirty range
 *                                       each group of sealed segments ->
 *                                         <base>.log|index|timeindex|txnindex.cleaned
 *                                         fdatasync, rename to *.swap, fsync dir
 *   compact_swap(part, job) <-- job --
 *     old segments' files renamed *.deleted
 *       (unlinked in the background),
 *     *.swap renamed to the plain names,
 *     the segment array edited           compact_finish(job): fsync dir
 *
 * The job holds its own references to the input files, so retention,
 * DeleteRecords or a fetch never wait for a pass, and a pass never reads a
 * freed segment; compact_swap() drops a job whose log changed at its head
 * meanwhile (part's head generation moved).  Readers that hold an old
 * segment's descriptor keep reading it after the swap: renamed and
 * unlinked files stay readable until their last reference goes.
 *
 * Crash safety, as Kafka's: *.cleaned files are incomplete by definition
 * and deleted at start-up; a <base>.log.swap file is complete (synced
 * before its rename), so compact_recover() finishes its swap: the
 * segments whose base offsets lie inside its group (up to the offset in
 * <base>.groupend.swap) are deleted and the *.swap files take their plain
 * names.  Groups become *.swap in offset order, each durable before the
 * next, so a group is never swapped in without the groups before it.  Index *.swap files are renamed
 * before the .log.swap, so a .log.swap never meets the indexes of the old
 * segment; stray index *.swap files without their .log.swap are deleted.
 *
 * Threading: compact_plan, compact_swap, compact_drop and compact_recover
 * on the loop thread (compact_recover from part_open), compact_run and
 * compact_finish on the cleaner thread.
 */
#ifndef GREGOR_LOG_COMPACT_H
#define GREGOR_LOG_COMPACT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "log/clean.h"
#include "log/cleanable.h"
#include "log/txnidx.h"
#include "util/fdref.h"

struct part;
struct seg;

/*
 * <base>.groupend.cleaned / .swap: the offset after the last input segment
 * a cleaned segment replaces, as decimal text.  The cleaned segment's own
 * last record may lie well before it (everything after was superseded),
 * so recovery could not tell the rest of its group from the segments
 * after it.
 */
#define COMPACT_GROUPEND_EXT ".groupend"

/* The topic settings a pass follows. */
struct compact_cfg {
	double min_ratio;            /* min.cleanable.dirty.ratio */
	int64_t min_lag_ms;          /* min.compaction.lag.ms */
	int64_t max_lag_ms;          /* max.compaction.lag.ms */
	int64_t delete_retention_ms; /* delete.retention.ms */
	size_t max_records_bytes;    /* decompressed records of one batch at most */
};

/* A sealed input segment, read through the job's own reference. */
struct compact_src {
	int64_t base, end; /* base offset; the next segment's base offset */
	int64_t size;
	struct fdref *log;
};

/* A cleaned segment that replaces the inputs src[first..last]. */
struct compact_out {
	int first, last;
	struct seg *seg; /* files under *.swap once compact_run() succeeded */
	bool txn;        /* a <base>.txnindex.swap was written */
};

struct compact_pid {
	int64_t producer_id, last_offset; /* last offset of its last batch (producer state) */
};

struct compact_job {
	struct part *part; /* loop thread only */
	uint64_t gen;      /* the part's head generation when planned */
	char *dir;
	int dir_fd; /* a duplicate, owned */
	struct compact_cfg cfg;
	int64_t segment_bytes; /* a group of inputs is at most this big */
	int32_t index_interval_bytes, segment_index_bytes;
	int64_t now_ms;
	struct cleanable m; /* the measure that chose the log */
	struct compact_src *src;
	int nsrc;
	struct txnidx_entry *aborted; /* overlapping the inputs */
	int naborted;
	struct compact_pid *pids; /* sorted by producer id */
	int npids;
	/* results (compact_run) */
	struct compact_out *out;
	int nout;
	int64_t covered_end; /* the next pass's first dirty offset */
	int64_t due_ms;      /* when kept tombstones or markers may go (with some slack), INT64_MAX never */
	int64_t *dropped;    /* offsets of the markers removed, ascending */
	int ndropped, dropped_cap;
	int64_t bytes_read, bytes_written, run_ms;
	int err; /* 0, or -errno of a failed pass (its files are removed) */
};

/*
 * Describes part to cleanable_measure(): *segs (allocated; free it) and
 * *l, with part's cleaner checkpoint and first unstable offset.
 */
int compact_describe(struct part *part, const struct compact_cfg *cfg, struct cleanable_log *l,
		     struct cleanable_seg **segs);
/*
 * A job for a pass over part as measured by m (cleanable_pick chose it),
 * or NULL (nothing sealed to clean, or ENOMEM).  Takes references to the
 * input files.
 */
struct compact_job *compact_plan(struct part *part, const struct compact_cfg *cfg, const struct cleanable *m,
				 int64_t now_ms);
/*
 * The pass: builds the offset map (map is cleared first) and writes the
 * cleaned groups, each ending as *.swap files synced with their directory.
 * *cancel is polled between segments; rate_bytes_per_s > 0 throttles the
 * bytes read and written.  Sets job->err (files of the pass removed on
 * error or cancel).
 */
void compact_run(struct compact_job *job, struct clean_map *map, const volatile int *cancel, double rate_bytes_per_s);
/*
 * Installs a successful pass in part (same head generation) and returns 0,
 * or removes its files and returns -ESTALE (the log changed) or job->err.
 */
int compact_swap(struct part *part, struct compact_job *job);
/* Removes the *.swap files of a pass that will not be swapped in. */
void compact_swap_discard(struct compact_job *job);
/* fsyncs the directory after compact_swap() (cleaner thread). 0 or -errno. */
int compact_finish(struct compact_job *job);
/* Frees job: drops its references, closes its files (their names are the caller's concern). */
void compact_free(struct compact_job *job);

/* Start-up: deletes *.cleaned files and completes interrupted swaps in part's directory. */
int compact_recover(struct part *part);

/*
 * When a pass of part could remove a tombstone or transaction marker its
 * last pass kept only because delete.retention.ms had not passed yet;
 * INT64_MAX if none.
 */
int64_t part_clean_due(const struct part *part);

/* The cleaner checkpoint: the first offset not yet cleaned, -1 if never. */
int64_t part_clean_offset(const struct part *part);
void part_set_clean_offset(struct part *part, int64_t offset);

#endif
