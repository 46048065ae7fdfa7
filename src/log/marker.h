/*
 * marker.h - writing a transaction marker (a COMMIT or ABORT control
 * batch) to a partition: the partition side of Kafka's WriteTxnMarkers,
 * used by the transaction coordinator (coord/txn.c) and by the
 * WriteTxnMarkers API alike.
 *
 * The marker's record is Kafka's control record: key {int16 version 0,
 * int16 type (0 abort, 1 commit)}, value {int16 version 0, int32
 * coordinatorEpoch} (proto/records.h).  As Kafka's ProducerAppendInfo,
 * the partition refuses a marker whose coordinator epoch is older than
 * the last marker's of the same producer id (a coordinator that lost its
 * role still sending), or whose producer epoch is older than the
 * producer's current one; the producer state keeps both (pstate.h).
 *
 * Threading: the event-loop thread, like part_append.
 */
#ifndef GREGOR_LOG_MARKER_H
#define GREGOR_LOG_MARKER_H

#include <stdbool.h>
#include <stdint.h>

struct part;
struct part_append_info;

struct marker {
	int64_t producer_id;
	int16_t producer_epoch;
	int32_t coordinator_epoch;
	bool commit; /* COMMIT, else ABORT */
};

/*
 * Appends the control batch for m (timestamp now_ms).  Returns 0,
 * -ESTALE if the coordinator epoch is stale (Kafka's
 * TRANSACTION_COORDINATOR_FENCED), -EPERM if the producer epoch is
 * (INVALID_PRODUCER_EPOCH), or part_append's -errno; nothing is appended
 * on error.
 */
int marker_append(struct part *part, const struct marker *m, int64_t now_ms, struct part_append_info *info);

#endif
