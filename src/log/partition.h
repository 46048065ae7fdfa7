/*
 * partition.h - one partition's log: its segments, offsets, append, reads
 * for sendfile, time lookups, retention and durability.
 *
 * Directory <log.dirs>/<topic>-<partition>/ holds (Kafka's layout):
 *   <20-digit base offset>.log / .index / .timeindex   segments (segment.h,
 *                                 offidx.h, timeidx.h give the byte formats)
 *   leader-epoch-checkpoint      leader epoch cache (epochs.h)
 *   <20-digit offset>.snapshot   producer state as of that offset (pstate.h;
 *                                byte format in pstate.c), written at each
 *                                roll and at clean close
 *   log-start-offset             "0\n<log start offset>\n": ours, not Kafka's
 *                                (Kafka keeps log-start-offset-checkpoint at
 *                                the log dir root); written atomically
 *                                (checkpoint.h) when DeleteRecords moves the
 *                                log start inside a segment.  The log start
 *                                is max(this value, first segment's base).
 * The recovery point is not stored here: the caller keeps it (Kafka's
 * recovery-point-offset-checkpoint) from part_recovery_point() and passes
 * it back to part_open().
 *
 * Threading: one event-loop thread calls everything except part_sync(),
 * part_recovery_point() and part_unflushed_messages(), which a flusher
 * thread may call concurrently.
 */
#ifndef GREGOR_LOG_PARTITION_H
#define GREGOR_LOG_PARTITION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/buf.h"

struct part_cfg {
	int64_t segment_bytes;             /* segment.bytes, default 1 GiB */
	bool preallocate;                  /* preallocate: the active .log is allocated to segment_bytes */
	int64_t segment_ms;                /* segment.ms, default 7 days */
	int64_t segment_jitter_ms;         /* segment.jitter.ms, default 0 */
	int64_t retention_ms;              /* retention.ms, -1 = unlimited */
	int64_t retention_bytes;           /* retention.bytes, -1 = unlimited */
	bool retention_delete;             /* cleanup.policy has delete: retention applies (else compact only) */
	int32_t index_interval_bytes;      /* index.interval.bytes, default 4096 */
	int32_t segment_index_bytes;       /* segment.index.bytes, default 10 MiB (max index size; roll when full) */
	bool log_append_time;              /* message.timestamp.type=LogAppendTime */
	int64_t producer_id_expiration_ms; /* producer.id.expiration.ms (broker-wide), default 1 day */
	bool hw_on_sync;                   /* the durable policy: the HW is what the last sync covered (default) */
	/* deleted segments: renamed *.deleted, then unlinked by this thread (NULL: unlinked at once) */
	struct dirdel *deleter;
	int64_t file_delete_delay_ms; /* file.delete.delay.ms: how long a *.deleted file stays */
};

/* Kafka's defaults. */
void part_cfg_default(struct part_cfg *cfg);

struct dirdel;
struct part;
struct part_append_info {
	int64_t base_offset, last_offset, log_append_time, log_start_offset;
	bool rolled; /* a new segment was started for it (flush the sealed one) */
};

/*
 * Opens or creates the partition directory (a new one is made durable in
 * its parent before anything is written into it); recovery_point = offset up to
 * which data is known synced (clean shutdown: pass INT64_MAX to skip
 * scanning; -1 = scan everything).  Torn/corrupt tails are truncated to the
 * last valid batch with a log_warn line naming file and position; missing
 * or inconsistent indexes rebuilt.  leader_epoch is stamped into appended
 * batches and recorded in the leader epoch cache (-1: keep the cached one).
 * Returns 0 or -errno (-EBADMSG if segments overlap).
 */
int part_open(const char *dir, const struct part_cfg *cfg, int64_t recovery_point, int32_t leader_epoch,
	      struct part **out);
/*
 * A new, empty partition in dir, a directory the caller has just made (so
 * nothing is listed or read): one empty segment at offset 0 whose .log is
 * the only file made, leader epoch 0.  Nothing is synced: the caller makes
 * the files durable (broker/registry.c: one syncfs per round).  0 or -errno.
 */
int part_create(const char *dir, const struct part_cfg *cfg, struct part **out);
/*
 * Syncs the log (part_sync), writes the producer snapshot, then truncates
 * index files to their used size and frees part.  The active segment's
 * index files are not synced here: a clean shutdown syncs the whole file
 * system once before closing (broker/registry.c), which covers them and
 * every other file, where a sync per partition made stopping thousands of
 * partitions take seconds.  Returns 0 or the -errno of the final sync (the
 * data may then not be durable; part is freed either way).
 */
int part_close(struct part *part);
/*
 * Before a clean shutdown's one syncfs: writes the producer snapshot that
 * part_close() would write, unsynced (the syncfs makes it durable), so
 * closing thousands of partitions is not a file and two fsyncs each.
 */
void part_prepare_close(struct part *part);
/* Frees part without syncing or writing anything more (its directory is being deleted, or its log directory failed a sync). */
void part_abandon(struct part *part);
/* Closes part without syncing and removes its directory on this thread; 0 or -errno. */
int part_delete(struct part *part);
/*
 * A word the syncer (broker/syncer.c) keeps per partition, read and
 * written only under its own lock, so that marking a partition dirty
 * costs no search of its lists.  0 when the partition is opened.
 */
int *part_sync_mark(struct part *part);
void part_set_cfg(struct part *part, const struct part_cfg *cfg);

/*
 * Appends a validated blob of one or more v2 batches (already CRC-checked
 * by the caller), in place: rewrites baseOffset and partitionLeaderEpoch
 * (and LogAppendTime if configured) in the caller's mutable buffer, then
 * writes the blob with one write (rolling first if the segment is full or
 * too old).  Returns 0, -EBADMSG if the blob does not parse, -EMSGSIZE, or
 * -errno (-ENOSPC, -EIO ...): nothing is left half-appended.
 */
int part_append(struct part *part, uint8_t *blob, size_t len, int64_t now_ms, struct part_append_info *info);

/*
 * A follower's append of batches fetched from its leader, byte for byte:
 * nothing is rewritten (offsets, producer ids and sequences, partition
 * leader epochs and timestamps stay the leader's).  Every batch's CRC is
 * checked, the first must start at the log end and later ones above the
 * previous one's end; indexes and producer state are updated as by
 * part_append, and each batch's partitionLeaderEpoch enters the leader
 * epoch cache.  Returns 0, -EBADMSG (a bad batch), -ERANGE (offsets do
 * not continue the log) or -errno; nothing is left half-appended, except
 * that a failed leader-epoch checkpoint write is returned after the data
 * was appended.
 */
int part_append_replica(struct part *part, const uint8_t *blob, size_t len, int64_t now_ms,
			struct part_append_info *info);
/*
 * Replication's bound on the high watermark (INT64_MAX at open: none): a
 * leader's smallest durable offset over the other in-sync replicas, a
 * follower's leader's high watermark.  The high watermark is then the
 * smaller of this and what it would be alone; it still never moves back.
 */
void part_set_hw_limit(struct part *part, int64_t limit);
/*
 * A replica's high watermark as last checkpointed (replication-offset-
 * checkpoint), taken back after part_open() set it to the log end: lowers
 * it to hw if hw is smaller (and bounds it there, as part_set_hw_limit(),
 * until the caller sets its own bound), the one exception to "never moves
 * back", for before the partition is served.
 */
void part_restore_hw(struct part *part, int64_t hw);

/*
 * Finds the bytes to serve for a fetch at offset: a slice of one segment
 * file starting at the batch that contains offset, holding only whole
 * batches whose last offset is below max_offset (HW or LSO), at most
 * max_bytes but at least the first batch if min_one (KIP-74).  Returns 0
 * (out->len 0 and out->ref NULL when there is nothing to serve), -ERANGE if
 * offset < log start or > LEO, -EBADMSG on a corrupt segment.  out->ref is
 * a new reference the caller puts.
 */
int part_read(struct part *part, int64_t offset, int64_t max_offset, int32_t max_bytes, bool min_one,
	      struct fslice *out);

/*
 * An offset above every offset in s, a slice part_read(part, offset, ...)
 * returned (Kafka's fetchUpperBoundOffset): the last offset of the first
 * indexed batch that starts at or after the slice's end, else the end of
 * its segment.  read_committed lists the aborted transactions below it.
 * Call it before any other read of part: a sealed segment is recognised by
 * the descriptor in s, which the cache may close after other reads (then
 * the answer is the log end offset, still above every offset in s).
 */
int64_t part_read_upper(struct part *part, int64_t offset, const struct fslice *s);

int64_t part_log_start_offset(const struct part *part);
int64_t part_log_end_offset(const struct part *part);
/*
 * The high watermark: what Fetch serves, what the LSO is bounded by, what
 * ListOffsets latest returns.  Never decreases, but by part_truncate_to.  With cfg.hw_on_sync it is
 * the offset the last completed part_sync covered (never more than a power
 * cut can leave); otherwise the LEO.  Event-loop thread.
 */
int64_t part_high_watermark(struct part *part);
int64_t part_size_bytes(const struct part *part); /* bytes in all segments */
int part_segment_count(const struct part *part);

/*
 * ListOffsets by timestamp: base offset of the first batch (at or above the
 * log start) whose max timestamp >= ts, and that timestamp; -1/-1 if none.
 */
int part_offset_for_time(struct part *part, int64_t ts, int64_t *offset_out, int64_t *ts_out);
/* ListOffsets -3: the largest batch max timestamp and the last offset of its batch; -1/-1 if empty. */
int part_max_timestamp(struct part *part, int64_t *offset_out, int64_t *ts_out);

/*
 * ListOffsets v0 (Kafka's legacy offsets-before): fills out with up to max
 * offsets in descending order, from the entries [base offset (at least the
 * log start) of each segment at its .log file's modification time, then
 * the log end offset at now_ms if the active segment holds data], starting
 * at the last entry (ts -1, latest), the first (ts -2, earliest) or the
 * newest entry whose time <= ts; offsets above the high watermark give way
 * to it (as Kafka answers consumers).  Returns the count.
 */
int part_offsets_before(struct part *part, int64_t ts, int64_t now_ms, int64_t *out, int max);

/*
 * DeleteRecords: moves the log start to offset (<= HW; else -ERANGE),
 * persisting it, and deletes whole segments below it (never the active one).
 */
int part_delete_records(struct part *part, int64_t offset);
/*
 * Applies retention.ms / retention.bytes (unless cfg.retention_delete is
 * false: compacted topics keep every segment) and deletes segments wholly
 * below the log start; never deletes the active segment.  Returns the number of
 * segments deleted or -errno.
 */
int part_retain(struct part *part, int64_t now_ms);

/*
 * Producer state (idempotence, transactions): owned by the partition, kept
 * up to date by part_append, rebuilt by part_open (newest snapshot <= LEO,
 * then the batch headers after it), trimmed by retention/DeleteRecords and
 * by part_retain's expiry.  Callers read it and pstate_check() against it;
 * only the log layer applies batches to it.
 */
struct pstate *part_pstate(struct part *part);

/* The leader epoch stamped into appends (the transaction coordinator's epoch on __transaction_state). */
int32_t part_leader_epoch(const struct part *part);
/* Leader epoch: stamps later appends and records (epoch, LEO) in the cache. 0 or -errno. */
int part_set_leader_epoch(struct part *part, int32_t leader_epoch);
/* OffsetForLeaderEpoch: false (UNDEFINED) if none; the rules are epochs_end_offset's (epochs.h). */
bool part_epoch_end_offset(struct part *part, int32_t epoch, int32_t *epoch_out, int64_t *end_offset_out);
/* The latest epoch in the leader epoch cache (what a follower asks the leader about), -1 if none. */
int32_t part_latest_epoch(const struct part *part);
/*
 * A follower's truncation point after the leader's OffsetForLeaderEpoch
 * answer (leader_epoch, leader_end_offset; -1/-1 UNDEFINED) for the epoch
 * part_latest_epoch() gave: epochs_truncation_offset() with this log's
 * LEO, high watermark and epoch cache.  OUT *offset_out: where to
 * part_truncate_to().  Returns false when the follower must ask again
 * (with part_latest_epoch() after truncating) before fetching.
 */
bool part_truncation_offset(struct part *part, int32_t leader_epoch, int64_t leader_end_offset, int64_t *offset_out);
/*
 * Cuts the log back to offset (truncate.c; Kafka's truncateTo): nothing if
 * offset >= LEO, -ERANGE below the log start (a high watermark bound is
 * the caller's business).  An offset inside a batch cuts that whole batch.
 * Segments above go, the one holding offset is cut and its indexes
 * rebuilt; the leader epoch cache, the aborted-transaction index, the
 * producer state (from the newest snapshot at or below the new end), the
 * LEO, high watermark and recovery point follow.  Everything is durable
 * when it returns 0; -errno otherwise (the log is then a prefix of the
 * old one, possibly longer than offset: call again).  part->leader_epoch,
 * what appends are stamped with, is left as it is.
 */
int part_truncate_to(struct part *part, int64_t offset);

/*
 * Durability: thread-safe against part_append running in another thread.
 * part_sync fdatasyncs every segment written since the last sync (the
 * .log files, the index files of segments sealed since, the .txnindex
 * files an aborted transaction was added to, and the directory after a
 * roll) and advances the recovery point to the LEO seen when it started;
 * returns 0 or -errno (the recovery point then stays).
 */
int part_sync(struct part *part);
int64_t part_recovery_point(const struct part *part);
/* What part_open() read batch by batch (past the recovery point, or with bad indexes): segments and bytes. */
void part_recovery_scanned(const struct part *part, int *segs, int64_t *bytes);
int64_t part_unflushed_messages(const struct part *part);
/* Record bytes part_sync has made durable since the partition was opened (appended, then synced). */
uint64_t part_synced_bytes(struct part *part);
/*
 * Starts (does not wait for) writeback of the active segment's bytes
 * appended since the last call, once there are at least min_bytes of them,
 * so the fdatasync of an acks=all round finds most of them already on their
 * way to the disk.  Event-loop thread.  (Measured: doing this for acks=1
 * traffic too makes latency worse, since the call blocks once the device
 * queue is full.)
 */
void part_start_writeback(struct part *part, int64_t min_bytes);

#endif
