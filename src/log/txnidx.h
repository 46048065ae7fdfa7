/*
 * txnidx.h - one partition's transaction bookkeeping: the aborted
 * transaction index (Kafka's per-segment .txnindex files), and the last
 * stable offset.
 *
 * Ongoing transactions are not kept here: the producer state (pstate.h)
 * already holds, per producer id, the first offset of its open
 * transaction (set by its first transactional batch, cleared by its
 * COMMIT/ABORT control batch), rebuilt from snapshots and the log on
 * restart.  The last stable offset is derived from it:
 *
 *   LSO = min(high watermark, min over producers of txn_first_offset)
 *
 * Aborted transactions: whenever an ABORT control batch is appended, the
 * entry {producer id, first offset of the transaction, offset of the
 * marker, LSO at that time} is appended, in Kafka's format, to the
 * .txnindex file of the segment that holds the marker:
 *
 *   <20-digit segment base offset>.txnindex, a sequence of 34-byte entries,
 *   all integers big-endian (Kafka's AbortedTxn):
 *     off len field
 *       0   2 version            i16  0
 *       2   8 producerId         i64
 *      10   8 firstOffset        i64  first offset of the aborted transaction
 *      18   8 lastOffset         i64  offset of its ABORT marker
 *      26   8 lastStableOffset   i64  LSO when the marker was written, not
 *                                         counting the aborted transaction itself
 *                                         (as Kafka): no transaction aborted
 *                                         later starts below it
 *
 * Files are written with one write per entry, before the LEO passes the
 * marker, and synced by the same part_sync round that syncs the marker
 * (so the files are complete up to the recovery point).  On open with
 * everything below the recovery point (a clean shutdown, or a crash after
 * a sync covered the whole log) the files are loaded and trusted;
 * otherwise the whole index is rebuilt from the batch headers of the log
 * (control batch bodies are read for their marker type) and the files
 * rewritten and synced, so an index never disagrees with the log that
 * survived.  The in-memory
 * copy is sorted by lastOffset (markers are appended in offset order).
 *
 * Threading: the event-loop thread only (the flusher syncs the files by name).
 */
#ifndef GREGOR_LOG_TXNIDX_H
#define GREGOR_LOG_TXNIDX_H

#include <stdbool.h>
#include <stdint.h>

#include "proto/records.h"

#define TXNIDX_ENTRY_SIZE 34
#define TXNIDX_EXT ".txnindex"

struct part;

struct txnidx_entry {
	int64_t producer_id;
	int64_t first_offset;
	int64_t last_offset; /* the ABORT marker */
	int64_t last_stable_offset;
};

struct txnidx {
	struct txnidx_entry *v; /* owned, sorted by last_offset */
	int n, cap;
};

void txnidx_init(struct txnidx *ti);
void txnidx_release(struct txnidx *ti);

/*
 * The log's hooks (partition.c).  txnidx_load runs at the end of
 * part_open, after the producer state is rebuilt: clean = the partition
 * was closed cleanly (load the files), otherwise rebuild from the log.
 * txnidx_on_batch runs for every appended batch h at p, after it is
 * written and before pstate_apply() records it; it indexes ABORT markers.
 * Both return 0 or -errno (an unwritable file is logged, not returned).
 */
int txnidx_load(struct part *part, bool clean);
void txnidx_on_batch(struct part *part, const uint8_t *p, const struct batch_hdr *h);
/*
 * The log cleaner removed the ABORT markers at offsets[0..n) (ascending):
 * their transactions leave the in-memory index (the cleaned segments'
 * files were written without them).
 */
void txnidx_forget(struct part *part, const int64_t *offsets, int n);
/* Retention moved the log start: drops entries wholly below it and files of deleted segments. */
void txnidx_truncate_head(struct part *part);
/*
 * The log was cut at end_offset (part_truncate_to, which removed the
 * files of the segments above): drops entries whose marker is at or past
 * it and rewrites, synced, the active segment's file with those left
 * (removes it when none are left; the caller fsyncs the directory).
 */
void txnidx_truncate_tail(struct part *part, int64_t end_offset);

/* Writes e in the file format (TXNIDX_ENTRY_SIZE bytes at p). */
void txnidx_entry_encode(const struct txnidx_entry *e, uint8_t *p);

/* LSO = min(HW, first offset of the oldest open transaction). */
int64_t txnidx_last_stable_offset(struct part *part);

/*
 * The aborted transactions overlapping [from, upper): lastOffset >= from
 * and firstOffset < upper (Kafka's TransactionIndex.collectAbortedTxns).
 * Writes at most max entries to out; returns how many matched in total.
 * Cost: a binary search for the first lastOffset >= from, then a walk that
 * stops at the first entry whose lastStableOffset >= upper (no later
 * entry can start below upper), so it never scans the whole index.
 */
int txnidx_collect(struct part *part, int64_t from, int64_t upper, struct txnidx_entry *out, int max);

/* The index of part (tests and tools). */
const struct txnidx *txnidx_of(struct part *part);

#endif
