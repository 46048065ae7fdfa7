/*
 * h_txnadmin.c - the partition side of transactions, for operators:
 * DescribeProducers (each partition's producer state: who writes to it,
 * and which transaction is open there since which offset) and
 * WriteTxnMarkers (append COMMIT/ABORT markers to partitions).
 *
 * Together they end a hanging transaction, as `gregor-transactions
 * abort` (Kafka's kafka-transactions.sh) does: a transaction whose first
 * batch is in a partition but whose coordinator no longer knows it (its
 * __transaction_state was lost, a marker write failed), so the partition's
 * last stable offset stays behind it and read_committed consumers stop
 * there.  Nothing but a marker ends it, so WriteTxnMarkers appends the
 * control batch directly with part_append: not through Produce, whose
 * checks (no control batches from clients; transactional batches only for
 * partitions of an open transaction) exist to keep clients from doing
 * exactly this.  Only the checks Kafka makes on any marker are made,
 * against the partition's producer state (log/pstate.h):
 *   - ProducerEpoch below the producer's current epoch: INVALID_PRODUCER_EPOCH;
 *   - CoordinatorEpoch below that of its last marker: TRANSACTION_COORDINATOR_FENCED.
 * A marker for a producer with no open transaction is appended all the
 * same and changes nothing, as in Kafka.  The reply waits for the fsync
 * round covering the markers under the durable flush policy
 * (broker/park.h) and, in cluster mode, as Kafka's acks=-1 append of
 * markers, for each partition's high watermark to pass its marker
 * (replica.h: NOT_ENOUGH_REPLICAS_AFTER_APPEND, NOT_LEADER_OR_FOLLOWER or
 * REQUEST_TIMED_OUT after 30 s otherwise; NOT_ENOUGH_REPLICAS and
 * nothing appended while the ISR is below min.insync.replicas), so that
 * the coordinator counts a transaction complete only once its markers are
 * on the in-sync replicas.  Only then does a marker on __consumer_offsets
 * make the producer's staged TxnOffsetCommit offsets of that partition
 * visible (COMMIT) or drop them (ABORT).
 *
 * Errors per partition, as Kafka: an invalid topic name
 * INVALID_TOPIC_EXCEPTION, an unknown topic or partition
 * UNKNOWN_TOPIC_OR_PARTITION (offline: registry_part_error), a failed
 * append KAFKA_STORAGE_ERROR.
 */
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "broker/authz.h"
#include "broker/broker.h"
#include "broker/fetch_park.h"
#include "broker/handlers.h"
#include "broker/park.h"
#include "broker/registry.h"
#include "broker/replica.h"
#include "broker/syncer.h"
#include "coord/group.h"
#include "log/marker.h"
#include "log/partition.h"
#include "log/pstate.h"
#include "proto/kerr.h"
#include "proto/records.h"
#include "util/clock.h"
#include "util/log.h"

#define TXNADMIN_OFFSETS_TOPIC "__consumer_offsets"

/* The partition a request names, or NULL with *err (OUT) saying why. */
static struct part *txnadmin_part(struct req *rq, struct kstr topic, int32_t partition, int16_t *err)
{
	struct topic *t;
	struct part *part;

	if (!topic_name_valid(topic)) {
		*err = KERR_INVALID_TOPIC_EXCEPTION;
		return NULL;
	}
	t = registry_find(rq->b->reg, topic);
	if (!t) {
		*err = KERR_UNKNOWN_TOPIC_OR_PARTITION;
		return NULL;
	}
	part = registry_part(t, partition);
	*err = part ? KERR_NONE : registry_part_error(t, partition);
	return part;
}

/* ---- DescribeProducers ---- */

/* Every producer id the partition's producer state holds, in table order. */
static void txnadmin_producers(struct req *rq, const struct pstate *ps, struct DescribeProducersResponsePartition *o)
{
	int32_t n = 0;

	o->ActiveProducers.v = req_alloc(rq, ps->count, sizeof(*o->ActiveProducers.v));
	for (uint32_t i = 0; i < ps->cap && n < (int32_t)ps->count; i++) {
		const struct pstate_entry *e = &ps->slots[i];
		struct DescribeProducersResponseProducer *p;

		if (e->producer_id == -1)
			continue; /* a free slot */
		p = &o->ActiveProducers.v[n++];
		p->ProducerId = e->producer_id;
		p->ProducerEpoch = e->epoch;
		p->LastSequence = e->nbatches ? pstate_entry_batch(e, e->nbatches - 1)->last_seq : -1;
		p->LastTimestamp = e->last_ts;
		p->CoordinatorEpoch = e->coordinator_epoch;
		p->CurrentTxnStartOffset = e->txn_first_offset;
	}
	o->ActiveProducers.n = n;
}

int h_describe_producers(struct req *rq, const void *in, void *out)
{
	const struct DescribeProducersRequest *d = in;
	struct DescribeProducersResponse *resp = out;

	resp->Topics.n = d->Topics.n > 0 ? d->Topics.n : 0;
	resp->Topics.v = req_alloc(rq, (size_t)resp->Topics.n, sizeof(*resp->Topics.v));
	for (int32_t i = 0; i < resp->Topics.n; i++) {
		const struct DescribeProducersRequestTopic *it = &d->Topics.v[i];
		struct DescribeProducersResponseTopic *ot = &resp->Topics.v[i];

		ot->Name = it->Name;
		ot->Partitions.n = it->PartitionIndexes.n > 0 ? it->PartitionIndexes.n : 0;
		ot->Partitions.v = req_alloc(rq, (size_t)ot->Partitions.n, sizeof(*ot->Partitions.v));
		for (int32_t j = 0; j < ot->Partitions.n; j++) {
			struct DescribeProducersResponsePartition *op = &ot->Partitions.v[j];
			struct part *part;

			DescribeProducersResponsePartition_init(op);
			op->PartitionIndex = it->PartitionIndexes.v[j];
			op->ErrorCode = authz_topic_kerr(rq, it->Name, ACL_OP_READ);
			part = op->ErrorCode ? NULL : txnadmin_part(rq, it->Name, op->PartitionIndex, &op->ErrorCode);
			if (part)
				txnadmin_producers(rq, part_pstate(part), op);
		}
	}
	return H_REPLY;
}

/* ---- WriteTxnMarkers ---- */

/*
 * One marker into one partition: Kafka's marker checks, then the append.
 * Raises *ticket (IN/OUT) to the fsync round the append needs; in cluster
 * mode the answer also waits for the partition's high watermark to pass
 * the marker (Kafka appends markers with acks=-1), *err being its error
 * code if that wait fails.
 */
static int16_t txnadmin_mark(struct req *rq, const struct WriteTxnMarkersRequestMarker *m, struct kstr topic,
			     int32_t partition, struct part *part, int16_t *err_out, uint64_t *ticket)
{
	const struct marker mk = {
		.producer_id = m->ProducerId,
		.producer_epoch = m->ProducerEpoch,
		.coordinator_epoch = m->CoordinatorEpoch,
		.commit = m->TransactionResult,
	};
	const struct topic *t = registry_find(rq->b->reg, topic); /* there: txnadmin_part found part */
	struct part_append_info info;
	int err;

	if (m->ProducerId < 0 || m->ProducerEpoch < 0)
		return KERR_INVALID_REQUEST; /* a marker belongs to a producer */
	if (rq->b->repl && replica_isr_size(rq->b, t->name, partition) < t->cfg.min_insync_replicas)
		return KERR_NOT_ENOUGH_REPLICAS; /* Kafka checks before its acks=-1 append; the coordinator retries */
	err = marker_append(part, &mk, clock_wall_ms(), &info);
	if (err == -EPERM)
		return KERR_INVALID_PRODUCER_EPOCH;
	if (err == -ESTALE)
		return KERR_TRANSACTION_COORDINATOR_FENCED;
	if (err) {
		log_error("%s: cannot append a marker of producer %" PRId64 ": %s", conn_peer(rq->c), m->ProducerId,
			  strerror(-err));
		return KERR_KAFKA_STORAGE_ERROR;
	}
	log_info("%s: WriteTxnMarkers: %s marker of producer %" PRId64
		 " epoch %d (coordinator epoch %d) at offset %" PRId64,
		 conn_peer(rq->c), m->TransactionResult ? "COMMIT" : "ABORT", m->ProducerId, m->ProducerEpoch,
		 m->CoordinatorEpoch, info.base_offset);
	fetch_park_notify(part); /* wakes fetches parked on it: the LSO may have moved */
	if (park_sync_on_ack(&rq->b->cfg)) {
		uint64_t tk = syncer_want(rq->b->syncer, part);

		*ticket = tk > *ticket ? tk : *ticket;
	}
	if (rq->b->repl)
		replica_wait_add(rq, topic, partition, info.last_offset + 1, err_out, false);
	return KERR_NONE;
}

/* Every partition of one marker; the result mirrors the request's topics and partitions. */
static void txnadmin_marker(struct req *rq, const struct WriteTxnMarkersRequestMarker *m,
			    struct WriteTxnMarkersResponseMarker *o, uint64_t *ticket)
{
	o->ProducerId = m->ProducerId;
	o->Topics.n = m->Topics.n > 0 ? m->Topics.n : 0;
	o->Topics.v = req_alloc(rq, (size_t)o->Topics.n, sizeof(*o->Topics.v));
	for (int32_t i = 0; i < o->Topics.n; i++) {
		const struct WriteTxnMarkersRequestTopic *it = &m->Topics.v[i];
		struct WriteTxnMarkersResponseTopic *ot = &o->Topics.v[i];

		ot->Name = it->Name;
		ot->Partitions.n = it->PartitionIndexes.n > 0 ? it->PartitionIndexes.n : 0;
		ot->Partitions.v = req_alloc(rq, (size_t)ot->Partitions.n, sizeof(*ot->Partitions.v));
		for (int32_t j = 0; j < ot->Partitions.n; j++) {
			struct WriteTxnMarkersResponsePartition *op = &ot->Partitions.v[j];
			struct part *part =
				authz_cluster(rq, ACL_OP_CLUSTER_ACTION)
					? txnadmin_part(rq, it->Name, it->PartitionIndexes.v[j], &op->ErrorCode)
					: NULL;

			op->PartitionIndex = it->PartitionIndexes.v[j];
			if (!part && !op->ErrorCode)
				op->ErrorCode = KERR_CLUSTER_AUTHORIZATION_FAILED;
			if (part)
				op->ErrorCode = txnadmin_mark(rq, m, it->Name, op->PartitionIndex, part, &op->ErrorCode,
							      ticket);
		}
	}
}

/*
 * The markers on __consumer_offsets that were written (and, in cluster
 * mode, reached the high watermark) make their producer's staged
 * TxnOffsetCommit offsets visible (COMMIT) or drop them (ABORT): Kafka's
 * group coordinator completes them in the markers' acks=-1 callback, so
 * no OffsetFetch sees offsets that a new leader may not have.
 */
static void txnadmin_offsets_complete(struct req *rq)
{
	const struct WriteTxnMarkersRequest *r = rq->in;
	const struct WriteTxnMarkersResponse *resp = rq->out;
	struct group_coord *gc = rq->b->groups;

	if (!gc || !group_coord_attached(gc))
		return;
	for (int32_t i = 0; i < resp->Markers.n; i++)
		for (int32_t j = 0; j < resp->Markers.v[i].Topics.n; j++) {
			const struct WriteTxnMarkersResponseTopic *ot = &resp->Markers.v[i].Topics.v[j];

			for (int32_t k = 0; k < ot->Partitions.n; k++)
				if (!ot->Partitions.v[k].ErrorCode && kstr_eq_c(ot->Name, TXNADMIN_OFFSETS_TOPIC))
					group_txn_complete(gc, ot->Partitions.v[k].PartitionIndex,
							   r->Markers.v[i].ProducerId,
							   r->Markers.v[i].TransactionResult);
		}
}

/* The fsync round failed: no marker is known to be durable. */
static void txnadmin_markers_fail(struct req *rq)
{
	struct WriteTxnMarkersResponse *resp = rq->out;

	for (int32_t i = 0; i < resp->Markers.n; i++)
		for (int32_t j = 0; j < resp->Markers.v[i].Topics.n; j++)
			for (int32_t k = 0; k < resp->Markers.v[i].Topics.v[j].Partitions.n; k++) {
				struct WriteTxnMarkersResponsePartition *p =
					&resp->Markers.v[i].Topics.v[j].Partitions.v[k];

				if (!p->ErrorCode)
					p->ErrorCode = KERR_KAFKA_STORAGE_ERROR;
			}
}

int h_write_txn_markers(struct req *rq, const void *in, void *out)
{
	const struct WriteTxnMarkersRequest *r = in;
	struct WriteTxnMarkersResponse *resp = out;
	uint64_t ticket = 0;

	resp->Markers.n = r->Markers.n > 0 ? r->Markers.n : 0;
	resp->Markers.v = req_alloc(rq, (size_t)resp->Markers.n, sizeof(*resp->Markers.v));
	for (int32_t i = 0; i < resp->Markers.n; i++)
		txnadmin_marker(rq, &r->Markers.v[i], &resp->Markers.v[i], &ticket);
	if (!rq->hold) { /* a single node, or no marker written */
		txnadmin_offsets_complete(rq);
		return park_until_synced(rq, ticket, txnadmin_markers_fail);
	}
	replica_wait_done(rq, txnadmin_offsets_complete);
	return replica_park(rq, ticket, TXN_REPLICATION_TIMEOUT_MS, txnadmin_markers_fail);
}
