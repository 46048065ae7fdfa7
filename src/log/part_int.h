/*
 * part_int.h - struct part, shared by partition.c, retain.c and truncate.c only.
 *
 * Locking: mu guards what the flusher thread reads or writes: the segs
 * array (pointers and count), leo, recovery_point, unflushed, dir_dirty,
 * idx_from and txn_dirty.  recovery_point is also stored and loaded
 * atomically, so part_high_watermark() reads it without the lock.  The event-loop thread is the only writer of everything, so
 * it reads without the lock and writes those fields under it.  mu is
 * never held across I/O except the unlink-free array edits.
 */
#ifndef GREGOR_LOG_PART_INT_H
#define GREGOR_LOG_PART_INT_H

#include <pthread.h>

#include "log/epochs.h"
#include "log/partition.h"
#include "log/pstate.h"
#include "log/segment.h"
#include "log/txnidx.h"

#define LOG_START_FILE "log-start-offset"
#define PART_SCRATCH_BYTES (64 * 1024) /* window for batch-header scans */

struct part {
	char *dir;
	int dir_fd;    /* the directory while held (part_dir_hold), else -1; event-loop thread only */
	int dir_holds; /* nested holds of dir_fd */
	struct part_cfg cfg;
	pthread_mutex_t mu;
	struct seg **segs;   /* ascending base offsets; the last is active (mu) */
	int nsegs, segs_cap; /* (mu) */
	int64_t log_start_offset;
	int64_t leo;            /* log end offset (mu) */
	int64_t hw;             /* high watermark (partition.h part_high_watermark) */
	int64_t hw_limit;       /* replication's bound on hw (part_set_hw_limit), INT64_MAX none */
	int64_t recovery_point; /* everything below is synced (mu) */
	int64_t unflushed;      /* records appended since the last sync (mu) */
	bool dir_dirty;         /* a segment was created since the last sync (mu) */
	int64_t idx_from;       /* base of the first sealed segment with unsynced indexes, INT64_MAX none (mu) */
	uint64_t trunc_gen;     /* moves with each part_truncate_to: a sync begun before it covers nothing (mu) */
	bool txn_dirty;         /* an aborted transaction was indexed since the last sync (mu) */
	int32_t leader_epoch;   /* stamped into appended batches */

	int64_t unflushed_bytes; /* record bytes appended since the last sync (mu) */
	uint64_t synced_bytes;   /* record bytes part_sync made durable, in all (mu) */

	struct epochs epochs;
	struct pstate pstate;  /* producer state (pstate.h) */
	struct txnidx txnidx;  /* aborted transactions (txnidx.h, transactions) */
	uint8_t *scratch;      /* PART_SCRATCH_BYTES, event-loop thread only */
	int64_t writeback_pos; /* active-segment position writeback was started up to */
	/* subtracted from segment.ms for the active segment (segment.jitter.ms) */
	int64_t roll_jitter_ms;
	int sync_mark; /* the syncer's own bookkeeping, under its lock (part_sync_mark) */
	/* compaction (compact.h) */
	uint64_t head_gen;    /* moves whenever segments leave the head or the log start moves */
	int64_t clean_offset; /* cleaner checkpoint: first offset not cleaned, -1 never cleaned */
	int64_t clean_due_ms; /* a kept tombstone or marker may go from then on, INT64_MAX never */
	bool uncleanable;     /* a pass found corrupt data: not cleaned again until restart */
	/* part_open: what recovery read batch by batch (partition.h part_recovery_scanned) */
	int scanned_segs;
	int64_t scanned_bytes;
};

static inline struct seg *part_active(const struct part *part)
{
	return part->segs[part->nsegs - 1];
}

/*
 * The partition directory (O_DIRECTORY) for *at() calls and the fsync after
 * creating, renaming or removing a file: opened at the first hold, closed
 * at the last release, so an idle partition holds no descriptor on it.
 * Holds nest (part_open holds it throughout).  Event-loop thread only: the
 * flusher (part_sync) and the cleaner's jobs open their own.  Returns the
 * descriptor (also in part->dir_fd) or -errno, when nothing is held.
 */
int part_dir_hold(struct part *part);
void part_dir_release(struct part *part);
/* Writes the leader-epoch cache to leader-epoch-checkpoint, durably.  0 or -errno. */
int part_epochs_save(struct part *part);

#define PART_DELETED_SUFFIX ".deleted" /* Kafka's: a deleted segment's files waiting for removal */

/* Removes the first n segments (not the active one), deleting their files (part_delete_seg_files). */
void part_drop_head(struct part *part, int n);
/*
 * Deletes the files of the segment at base (.log, .index, .timeindex,
 * .txnindex) off the event loop: each is renamed <name>.deleted and queued
 * for cfg.deleter to unlink after cfg.file_delete_delay_ms (without a
 * deleter they are unlinked at once).  Open descriptors keep reading.
 */
void part_delete_seg_files(struct part *part, int64_t base);
/* Queues the file name in part's directory for cfg.deleter to unlink after delay_ms, or unlinks it now. */
void part_discard_file(struct part *part, const char *name, int64_t delay_ms);
/* Moves the log start forward (and trims the epoch cache). */
void part_advance_log_start(struct part *part, int64_t offset);
/* Index of the last segment whose base offset <= offset (0 if none). */
int part_seg_for(const struct part *part, int64_t offset);
/*
 * Rebuilds the producer state (empty on entry) for the segments as they
 * are: the newest valid snapshot at or below the LEO (deleting those
 * above it), then the log after it, then expiry and the log start.  The
 * directory is held.  0 or -errno.
 */
int part_load_pstate(struct part *part);

/*
 * The high watermark (part_high_watermark's body, shared with txnidx.c so
 * that the index module needs nothing from partition.c): under the durable
 * policy what the last completed sync covered, else the log end, at most
 * the replication bound (part_set_hw_limit); it never moves back.
 */
static inline int64_t part_hw_advance(struct part *part)
{
	int64_t synced = __atomic_load_n(&part->recovery_point, __ATOMIC_ACQUIRE);
	int64_t hw = part->cfg.hw_on_sync ? (synced < part->leo ? synced : part->leo) : part->leo;

	if (hw > part->hw_limit)
		hw = part->hw_limit;

	if (hw > part->hw)
		part->hw = hw;
	return part->hw;
}

#endif
