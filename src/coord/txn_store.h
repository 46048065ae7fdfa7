/*
 * txn_store.h - the transaction coordinator's log: the internal topic
 * __transaction_state, in Kafka's own record formats (TransactionLogKey /
 * TransactionLogValue, version 0), so Kafka's tools could read it.
 *
 * Which partition: coord_partition_for() (coord_topic.h), as
 * Kafka (Utils.abs(transactionalId.hashCode) % transaction.state.log.num.partitions).
 *
 * One record per state change, in an uncompressed non-transactional batch
 * v2 (records_build); all integers big-endian, strings int16 length +
 * bytes; a record with a null value is a tombstone (the id was expired):
 *
 *   key (version 0)
 *     int16  version = 0
 *     string transactional_id
 *   value (version 0)
 *     int16  version = 0
 *     int64  producer_id
 *     int16  producer_epoch
 *     int32  transaction_timeout_ms
 *     int8   transaction_status        0 Empty, 1 Ongoing, 2 PrepareCommit,
 *                                      3 PrepareAbort, 4 CompleteCommit,
 *                                      5 CompleteAbort, 6 Dead, 7 PrepareEpochFence
 *     int32  topic count (-1 = null), each:
 *       string topic
 *       int32  partition count, each int32 partition
 *     int64  transaction_last_update_timestamp_ms
 *     int64  transaction_start_timestamp_ms   (-1 when no transaction)
 *
 * The coordinator writes the record of a new state before acting on it
 * (markers are written only after PrepareCommit/PrepareAbort is in the
 * log).  Loading replays every partition from its log start to its high
 * watermark; the latest record per id wins.
 */
#ifndef GREGOR_COORD_TXN_STORE_H
#define GREGOR_COORD_TXN_STORE_H

#include <stdbool.h>
#include <stdint.h>

#include "coord/coord_topic.h"
#include "util/buf.h"

#define TXN_STORE_TOPIC "__transaction_state"

struct part;

/* A topic-partition of a transaction. */
struct txn_tp {
	char *topic; /* owned by whoever holds the array */
	int32_t partition;
};

/* One TransactionLogValue; views/borrowed arrays, valid during the call. */
struct txn_store_value {
	int64_t producer_id;
	int16_t producer_epoch;
	int32_t timeout_ms;
	int8_t status;
	const struct txn_tp *tps;
	int32_t ntps;
	int64_t update_ms, start_ms;
};

int32_t txn_store_partition_of(int32_t nparts, struct kstr id);

/*
 * Appends the record for id (v NULL: tombstone) to its partition of ct.
 * OUT *part_out: the partition written (for the syncer).  0, -ENOENT (the
 * partition is offline or gone) or -errno.
 */
int txn_store_write(const struct coord_topic *ct, struct kstr id, const struct txn_store_value *v, int64_t now_ms,
		    struct part **part_out);

/*
 * Replays every partition, calling on_record(arg, id, v) in log order (v
 * NULL for a tombstone); the views are valid during the call only.  0 or
 * -errno; malformed records are logged and skipped.
 */
typedef void txn_store_record_fn(void *arg, struct kstr id, const struct txn_store_value *v);
int txn_store_load(const struct coord_topic *ct, txn_store_record_fn *on_record, void *arg);
/*
 * Cluster mode: replays the ids of one partition this broker just came to
 * lead, to its log end (its high watermark may lag what the previous
 * leader acknowledged).  0, -ENOENT (not led here) or -errno.
 */
int txn_store_load_partition(const struct coord_topic *ct, int32_t partition, txn_store_record_fn *on_record,
			     void *arg);

#endif
