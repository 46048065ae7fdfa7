/*
 * pstate.h - one partition's producer state: what the idempotent producer
 * check (and later transactions) needs to know about every producer id that
 * wrote to the partition.
 *
 * Per producer id: its current epoch, the metadata of its last
 * PSTATE_BATCHES_MAX appended batches (first/last sequence, first/last
 * offset, max timestamp), and the transaction fields (first offset of the
 * open transaction, coordinator epoch of the last marker).  The state is a
 * pure function of the log: applying every batch header from the log start
 * to the LEO with pstate_apply() rebuilds it, and snapshot files
 * (<20-digit offset>.snapshot, byte format in pstate.c) are only a
 * shortcut for that walk.
 *
 * Sequence rules (Kafka's ProducerAppendInfo, see docs/idempotence.md):
 * pstate_check() classifies an incoming batch before it is appended; the
 * caller appends only on PSTATE_APPEND and then calls pstate_apply() with
 * the offsets the log assigned.
 *
 * Threading: the event-loop thread only.
 */
#ifndef GREGOR_LOG_PSTATE_H
#define GREGOR_LOG_PSTATE_H

#include <stdbool.h>
#include <stdint.h>

#include "proto/records.h"

#define PSTATE_BATCHES_MAX 5    /* Kafka's window: max.in.flight with idempotence */
#define PSTATE_SNAPSHOTS_KEPT 2 /* newest snapshot files kept per partition */

struct pstate_batch {
	int32_t first_seq;    /* baseSequence */
	int32_t last_seq;     /* baseSequence + lastOffsetDelta (wrapping at INT32_MAX) */
	int64_t first_offset; /* baseOffset the log assigned */
	int64_t last_offset;
	int64_t max_ts; /* the batch's maxTimestamp */
};

struct pstate_entry {
	int64_t producer_id; /* -1: free slot */
	int16_t epoch;
	uint8_t nbatches;                                /* cached batches, 0..PSTATE_BATCHES_MAX */
	uint8_t head;                                    /* ring index of the oldest cached batch */
	int32_t coordinator_epoch;                       /* of the last transaction marker, -1 if none */
	int64_t txn_first_offset;                        /* first offset of the open transaction, -1 if none;
	                                  set on the first transactional batch, cleared by a
	                                  control batch (transactions, coord/txn.c) */
	int64_t last_ts;                                 /* max timestamp of the last batch: expiry clock */
	struct pstate_batch batches[PSTATE_BATCHES_MAX]; /* ring, oldest at head */
};

struct pstate {
	struct pstate_entry *slots; /* open addressing, linear probing; owned */
	uint32_t cap;               /* power of two, or 0 before the first producer */
	uint32_t count;
	int64_t snap_offset; /* offset of the newest snapshot on disk, -1 if none */
	bool dirty;          /* changed since that snapshot */
};

enum pstate_verdict {
	PSTATE_APPEND,           /* in sequence (or a new producer/epoch at 0): append it */
	PSTATE_DUPLICATE,        /* same epoch and sequences as a cached batch: do not append */
	PSTATE_OUT_OF_ORDER,     /* sequence gap or otherwise out of order */
	PSTATE_STALE_EPOCH,      /* epoch below the producer's current one */
	PSTATE_UNKNOWN_PRODUCER, /* no state for this producer id and sequence != 0 */
};

void pstate_init(struct pstate *ps);
void pstate_release(struct pstate *ps);

/* The entry of producer_id, or NULL. */
const struct pstate_entry *pstate_find(const struct pstate *ps, int64_t producer_id);

/* The i-th cached batch of e, oldest first (i < e->nbatches). */
const struct pstate_batch *pstate_entry_batch(const struct pstate_entry *e, int i);

/* baseSequence + lastOffsetDelta with Kafka's wrap-around at INT32_MAX. */
int32_t pstate_last_seq(int32_t base_seq, int32_t last_offset_delta);

/*
 * Classifies the data batch h (producerId >= 0, not a control batch) against
 * the state.  On PSTATE_DUPLICATE, *dup (OUT) is the cached batch it repeats.
 */
enum pstate_verdict pstate_check(const struct pstate *ps, const struct batch_hdr *h, struct pstate_batch *dup);

/* Makes room for n more producers, so that pstate_apply cannot fail.  0 or -ENOMEM. */
int pstate_reserve(struct pstate *ps, uint32_t n);

/*
 * Records an appended batch (offsets assigned; any batch: those with
 * producerId < 0 are ignored).  A new epoch clears the cached batches; a
 * control batch updates epoch and transaction fields only.  Returns 0 or
 * -ENOMEM (the state is then unchanged).
 */
int pstate_apply(struct pstate *ps, const struct batch_hdr *h);

/*
 * A COMMIT/ABORT marker of producer_id with coordinator_epoch was applied
 * (pstate_apply reads headers only; the caller parses the marker record).
 * Markers with an older coordinator epoch are refused (log/marker.h).
 */
void pstate_set_coordinator_epoch(struct pstate *ps, int64_t producer_id, int32_t coordinator_epoch);

/* Drops producers whose last batch is older than now - expiration and that have no open transaction. */
int pstate_expire(struct pstate *ps, int64_t now_ms, int64_t expiration_ms);

/*
 * Log start moved to log_start: drops producers all of whose cached batches
 * (or with none cached, whose state) lie below it, as Kafka does after
 * retention and DeleteRecords.  Returns the number dropped.
 */
int pstate_truncate_head(struct pstate *ps, int64_t log_start);

/* Forgets everything (before a rebuild). */
void pstate_clear(struct pstate *ps);

/*
 * Snapshot files in dir (dir_fd: dir opened O_DIRECTORY).
 *
 * pstate_snapshot_write writes <offset>.snapshot (via a .tmp file renamed
 * into place; with sync the file and the directory are fsynced, without
 * the caller syncs the file system later, and until then a torn file
 * fails its CRC and the state is rebuilt from an older snapshot or the
 * log), sets snap_offset, clears
 * dirty and deletes all but the PSTATE_SNAPSHOTS_KEPT newest snapshots.
 * offset is the LEO the state describes.  Returns 0 or -errno.
 *
 * pstate_snapshot_load deletes snapshots above max_offset (the log was
 * truncated below them) and loads the newest valid one at or below it,
 * skipping (and logging) corrupt ones.  OUT *offset: the loaded snapshot's
 * offset, or -1 when none was loaded (the state is then empty).  Returns 0
 * or -errno (-ENOMEM).
 *
 * pstate_snapshot_delete_below deletes snapshots with offset < offset
 * (below the log start: the log from the start is then the rebuild source).
 */
int pstate_snapshot_write(struct pstate *ps, int dir_fd, const char *dir, int64_t offset, bool sync);
int pstate_snapshot_load(struct pstate *ps, int dir_fd, const char *dir, int64_t max_offset, int64_t *offset);
void pstate_snapshot_delete_below(struct pstate *ps, int dir_fd, const char *dir, int64_t offset);

/* Serialises / parses a snapshot image (the file's bytes).  For the file functions and tests. */
int pstate_encode(const struct pstate *ps, struct wr *w);
/* Replaces the state with the image p..p+len; -EBADMSG if it is not a valid snapshot. */
int pstate_decode(struct pstate *ps, const uint8_t *p, size_t len);

#endif
