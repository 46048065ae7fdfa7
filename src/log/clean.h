/*
 * clean.h - log compaction of sealed segments (cleanup.policy=compact):
 * the offset map of a cleaning pass and the rewrite of one segment's
 * batches.  Pure logic over segment bytes: no thread, no file swap, no
 * configuration here (docs/internals.md, "Log compaction", says what the
 * broker still has to add).
 *
 * A pass has two steps, as in Kafka's LogCleaner:
 *
 *  1. clean_map_build_segs() reads the dirty segments [from, upto) and
 *     records, for every key, the offset of its latest record.  The map
 *     holds a bounded number of keys (log.cleaner.dedupe.buffer.size bytes
 *     at CLEAN_SLOT_BYTES each, filled up to
 *     log.cleaner.io.buffer.load.factor); when it is full the build stops
 *     and clean_map_latest_offset() says how far it got, so a log larger
 *     than one map is cleaned in several passes.
 *
 *  2. clean_segment() rewrites each segment from the log start up to that
 *     offset into a new blob (what becomes <base>.log.cleaned):
 *       - a keyed record is kept if its offset >= the map's offset of its
 *         key (it is the latest value, or its key is not in the map), or
 *         if it lies at or past opts.covered_end (not covered by this
 *         pass: kept as it is);
 *       - a tombstone (null value) that is the latest of its key is
 *         dropped when its batch's maxTimestamp < delete_horizon_ms
 *         (delete.retention.ms before the time of the pass) and it lies
 *         within the covered range (a batch with maxTimestamp -1 has no
 *         known age: its tombstones stay);
 *       - records without a key are kept (Produce refuses them on
 *         compacted topics; a record that got in anyway is not lost);
 *       - records of aborted transactions are dropped;
 *       - a control batch (COMMIT/ABORT marker) is dropped only when the
 *         caller's marker_discardable predicate says so;
 *       - a batch left without records is dropped, unless the caller's
 *         producer_last predicate says it is the last batch of its
 *         producer id in the log: it is then kept with recordCount 0 (an
 *         uncompressed header-only batch) so that idempotent sequence
 *         checks and epoch fencing still see it after a restart.
 *     Every kept batch keeps its baseOffset, lastOffsetDelta,
 *     baseTimestamp, partitionLeaderEpoch, producer id/epoch, base
 *     sequence and codec; kept records keep their bytes (offset and
 *     timestamp deltas, headers).  A batch that lost records is rebuilt:
 *     the kept records compressed again with the batch's own codec, its
 *     recordCount, batchLength and (CreateTime) maxTimestamp updated and
 *     its CRC recomputed.  Unchanged batches are copied byte for byte.
 *     Offsets inside the output have gaps where records went.
 *
 * Input is checked as it is read (batch CRC, record bounds, record
 * offsets inside their batch, decompression): corrupt bytes give -EBADMSG,
 * never a crash.
 *
 * Threading: none of its own; a map is used by one thread at a time.
 */
#ifndef GREGOR_LOG_CLEAN_H
#define GREGOR_LOG_CLEAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "log/segment.h"
#include "log/txnidx.h"
#include "proto/records.h"
#include "util/buf.h"

/* Bytes of one map slot: a 128-bit key hash and an offset (as Kafka's MD5 + offset). */
#define CLEAN_SLOT_BYTES 24
/* Kafka's log.cleaner.io.buffer.load.factor default. */
#define CLEAN_LOAD_FACTOR_DEFAULT 0.9

struct clean_map;

/*
 * A map of buffer_bytes / CLEAN_SLOT_BYTES slots, of which at most
 * load_factor (0 < load_factor < 1) are filled.  Returns 0, -EINVAL (room
 * for no key) or -ENOMEM.  *out is freed with clean_map_free().
 */
int clean_map_new(size_t buffer_bytes, double load_factor, struct clean_map **out);
void clean_map_free(struct clean_map *map);
/* Empties the map for the next pass. */
void clean_map_clear(struct clean_map *map);

/*
 * Records offset as the latest of key (key_len bytes).  Returns 0, or
 * -ENOSPC when key is new and the map already holds its maximum number of
 * keys (it is then unchanged).  Offsets must be put in increasing order.
 */
int clean_map_put(struct clean_map *map, const uint8_t *key, size_t key_len, int64_t offset);
/* The latest offset of key, or -1 if the map does not hold it. */
int64_t clean_map_get(const struct clean_map *map, const uint8_t *key, size_t key_len);
/* The offset of the last record put: the pass covers up to it.  -1 while empty. */
int64_t clean_map_latest_offset(const struct clean_map *map);
/* Keys held, and the most it may hold. */
size_t clean_map_size(const struct clean_map *map);
size_t clean_map_max_keys(const struct clean_map *map);

/* Aborted transactions of the range being cleaned (txnidx_collect). */
struct clean_aborted {
	const struct txnidx_entry *v;
	int n;
};

/*
 * Adds to map every keyed record at or past start_offset of the blob
 * p[0..len) (one segment's whole batches), skipping control batches and
 * the records of aborted transactions; compressed batches are
 * decompressed (at most max_records_bytes each).  Returns 0 when every
 * record went in, 1 when the map filled up (clean_map_latest_offset() is
 * then the last offset it covers), -EBADMSG for corrupt input (or a batch
 * inflating past max_records_bytes) or -ENOMEM.
 */
int clean_map_build(struct clean_map *map, const uint8_t *p, size_t len, int64_t start_offset,
		    const struct clean_aborted *aborted, size_t max_records_bytes);

/*
 * clean_map_build() over the n segments segs[0..n) (in offset order, read
 * from their .log files), stopping at the first that fills the map.
 * Returns 0, 1 (full), -EBADMSG, -ENOMEM or -errno of a read.
 */
int clean_map_build_segs(struct clean_map *map, struct seg *const *segs, int n, int64_t start_offset,
			 const struct clean_aborted *aborted, size_t max_records_bytes);

/* Appends the whole .log file of seg (seg->size bytes) to out.  0, -ENOMEM or -errno. */
int clean_seg_read(struct seg *seg, struct wr *out);

/* A predicate on one batch of the input (its header). */
typedef bool clean_batch_fn(void *arg, const struct batch_hdr *h);

struct clean_opts {
	const struct clean_map *map;
	/*
	 * Records at or past this offset are not covered by the pass and are
	 * kept as they are: clean_map_latest_offset(map) + 1 after a map
	 * build, or the first dirty offset for a pass that only drops expired
	 * tombstones of the clean part (an empty map).
	 */
	int64_t covered_end;
	int64_t delete_horizon_ms; /* tombstones of batches with maxTimestamp below go */
	struct clean_aborted aborted;
	/* h (producerId >= 0) is the last batch of its producer in the log: never dropped */
	clean_batch_fn *producer_last;
	/* the control batch h may go (its transaction has no records left, its horizon passed) */
	clean_batch_fn *marker_discardable;
	/* called for every kept batch of a transaction, an emptied producer's last one too (optional) */
	clean_batch_fn *kept;
	void *arg; /* of the predicates */
	/*
	 * Out (optional): lowered to the maxTimestamp of every batch holding a
	 * tombstone that stayed only because delete_horizon_ms has not reached
	 * it, so that the caller knows when a pass can remove it.
	 */
	int64_t *tombstone_ts_min;
	size_t max_records_bytes; /* decompressed records of one batch at most */
};

/*
 * Appends to out the cleaned batches of the blob p[0..len) (one segment's
 * whole batches), by the rules at the top of this file.  Returns 0,
 * -EBADMSG (corrupt input, or a batch inflating past max_records_bytes),
 * -ENOMEM, -EIO (a codec failed) or -EMSGSIZE (a rebuilt batch past
 * INT32_MAX bytes); on error out->len is restored.
 */
int clean_segment(const struct clean_opts *o, const uint8_t *p, size_t len, struct wr *out);

#endif
