/*
 * group_store.h - committed offsets and group metadata: the in-memory
 * offset table of each group, and its persistence in the internal topic
 * __consumer_offsets, in Kafka's own record formats so that Kafka tools
 * (kafka-console-consumer --formatter OffsetsMessageFormatter) read it.
 *
 * Which partition: Kafka's Utils.abs(groupId.hashCode) %
 * offsets.topic.num.partitions (coord_partition_for(), coord_topic.h).
 *
 * Records (uncompressed record batches v2 built with records_build(); all
 * integers big-endian, strings int16 length + bytes, -1 = null; a record
 * with a null value is a tombstone that deletes its key):
 *
 *   offset commit key (version 0 or 1; we write 1)
 *     int16 version | string group | string topic | int32 partition
 *   offset commit value (we write version 3; 0-3 are read)
 *     int16 version
 *     int64 offset
 *     int32 leader_epoch            (v3 only; -1 unknown)
 *     string metadata
 *     int64 commit_timestamp
 *     int64 expire_timestamp        (v1 only, ignored)
 *   group metadata key (version 2)
 *     int16 version=2 | string group
 *   group metadata value (we write version 3; 0-3 are read)
 *     int16 version
 *     string protocol_type
 *     int32 generation
 *     string protocol               (nullable)
 *     string leader                 (nullable)
 *     int64 current_state_timestamp (v2+, -1 unknown)
 *     int32 member count, each member:
 *       string member_id
 *       string group_instance_id    (v3+, nullable)
 *       string client_id
 *       string client_host
 *       int32 rebalance_timeout     (v1+)
 *       int32 session_timeout
 *       bytes subscription          (int32 length)
 *       bytes assignment
 *
 * Loading reads every partition from its log start to its high watermark
 * and hands each record, in log order, to the caller: applying them in
 * order is "the latest value per key wins" (the log is compacted only in
 * spirit: nothing is cleaned yet).  Transactional offset commits
 * (TxnOffsetCommit, written by the transaction coordinator as
 * transactional batches) are staged under their producer id
 * (group_store_offset_stage) and control batches reported as markers, so
 * that the caller makes them visible on COMMIT or drops them on ABORT
 * (group_store_offset_complete).
 */
#ifndef GREGOR_COORD_GROUP_STORE_H
#define GREGOR_COORD_GROUP_STORE_H

#include <stdbool.h>
#include <stdint.h>

#include "coord/coord_topic.h"
#include "util/buf.h"

#define GROUP_STORE_TOPIC "__consumer_offsets"

struct part;

/* One committed offset of one partition. */
struct group_offset {
	char *topic; /* owned (in a table), or borrowed (arguments) */
	int32_t partition;
	int64_t offset;
	int32_t leader_epoch; /* -1 unknown */
	char *metadata;       /* never NULL in a table */
	int64_t commit_ts_ms; /* wall clock */
};

/* Offsets staged by one transactional producer in one partition, visible only on commit. */
struct group_offsets_pending {
	int64_t producer_id;
	int32_t log_partition; /* the __consumer_offsets partition of their records: only a marker there ends them */
	struct group_offset *v;
	int n, cap;
	struct group_offsets_pending *next;
};

/* A group's offset table: sorted by (topic, partition), plus staged offsets. */
struct group_offsets {
	struct group_offset *v;
	int n, cap;
	struct group_offsets_pending *pending;
};

void group_store_offsets_init(struct group_offsets *go);
void group_store_offsets_release(struct group_offsets *go);
/* NULL if no offset is committed for (topic, partition). */
const struct group_offset *group_store_offset_get(const struct group_offsets *go, struct kstr topic, int32_t partition);
/* Inserts or replaces; copies o's strings (metadata NULL = ""). 0 or -ENOMEM. */
int group_store_offset_set(struct group_offsets *go, const struct group_offset *o);
/* True if there was an offset to delete. */
bool group_store_offset_delete(struct group_offsets *go, struct kstr topic, int32_t partition);
/* Stages o for producer_id (TxnOffsetCommit), its record in __consumer_offsets-log_partition.  0 or -ENOMEM. */
int group_store_offset_stage(struct group_offsets *go, int32_t log_partition, int64_t producer_id,
			     const struct group_offset *o);
/*
 * A marker of producer_id in __consumer_offsets-log_partition.  Commit:
 * moves producer_id's offsets staged from there into the table; abort:
 * drops them.
 */
void group_store_offset_complete(struct group_offsets *go, int32_t log_partition, int64_t producer_id, bool commit);
/* True if some producer has an offset staged for (topic, partition) (UNSTABLE_OFFSET_COMMIT). */
bool group_store_offset_pending(const struct group_offsets *go, struct kstr topic, int32_t partition);

/* One member in a group metadata record; views, valid during the call. */
struct group_store_member {
	struct kstr member_id, group_instance_id, client_id, client_host;
	int32_t rebalance_timeout_ms, session_timeout_ms;
	struct bytes subscription, assignment;
};

/* A group metadata record's value; views, valid during the call. */
struct group_store_meta {
	struct kstr protocol_type;
	int32_t generation;
	struct kstr protocol_name; /* null when none */
	struct kstr leader;        /* null when none */
	int64_t state_ts_ms;
	struct group_store_member *members;
	int32_t nmembers;
};

/* Callbacks for group_store_load(); every view is valid during the call only. */
struct group_store_loader {
	/*
	 * The offset table of group, for the offset records replayed into it:
	 * made (an empty group) when create; NULL if there is none.
	 */
	struct group_offsets *(*offsets)(void *arg, struct kstr group, bool create);
	/* m NULL: tombstone (the group was deleted). */
	void (*on_meta)(void *arg, struct kstr group, const struct group_store_meta *m);
	/* A transaction marker in log_partition: commit or abort producer_id's offsets staged from there. */
	void (*on_marker)(void *arg, int32_t log_partition, int64_t producer_id, bool commit);
	/* Forget everything loaded so far: group_store_load() replays again (see there). */
	void (*on_reset)(void *arg);
};

struct group_store;

int group_store_new(struct group_store **out);
void group_store_free(struct group_store *gs);
/* Reaches the partitions of __consumer_offsets through ct (copied; see coord_topic.h). */
void group_store_attach(struct group_store *gs, const struct coord_topic *ct);
bool group_store_attached(const struct group_store *gs);
/* The partition count attached with (0 before). */
int32_t group_store_nparts(const struct group_store *gs);
/* Replays every partition into ld.  0, or -errno / -EBADMSG from the log. */
int group_store_load(struct group_store *gs, const struct group_store_loader *ld, void *arg);
/*
 * Cluster mode: replays one partition this broker just came to lead, to
 * its log end (its high watermark may lag what the previous leader
 * acknowledged).  0, -ENOENT (not led here) or -errno.
 */
int group_store_load_partition(struct group_store *gs, const struct group_store_loader *ld, void *arg,
			       int32_t partition);
/* The partition index of group (attached stores only). */
int32_t group_store_partition_of(const struct group_store *gs, struct kstr group);
/* The same for a topic of nparts (> 0) partitions: one still being made. */
int32_t group_store_partition_for(struct kstr group, int32_t nparts);

/*
 * Appends one batch to group's partition: offset commits (n >= 0; with
 * tombstone, null values that delete those offsets), and the group
 * metadata record when meta != NULL, or its tombstone when meta == NULL
 * and meta_tombstone.  OUT *part_out: the partition written (for the
 * syncer).  Returns 0, -EINVAL (nothing to write), -ENOENT (the partition
 * is offline or gone) or -errno.
 */
int group_store_write(struct group_store *gs, struct kstr group, const struct group_offset *offs, int n, bool tombstone,
		      const struct group_store_meta *meta, bool meta_tombstone, int64_t now_ms, struct part **part_out);

/*
 * Transactions (TxnOffsetCommit): appends offs as one transactional batch of
 * producer_id/producer_epoch to group's partition; coord/txn.c later appends
 * the COMMIT/ABORT marker there.  OUT *part_out.  0, -EINVAL (n < 1),
 * -ESTALE (the partition's producer state holds a newer epoch of
 * producer_id: its transaction was ended with the epoch bumped, so no
 * marker would ever end these offsets; Kafka's log refuses such an append
 * with INVALID_PRODUCER_EPOCH) or -errno.
 */
int group_store_write_txn(struct group_store *gs, struct kstr group, const struct group_offset *offs, int n,
			  int64_t producer_id, int16_t producer_epoch, int64_t now_ms, struct part **part_out);
/* The __consumer_offsets partition of group (attached stores only); NULL if offline. */
struct part *group_store_part(const struct group_store *gs, struct kstr group);

#endif
