/*
 * h_idem.c - InitProducerId for idempotent (non-transactional) producers,
 * v0-4.  The per-partition sequence checks live in h_produce.c and
 * log/pstate.c; docs/idempotence.md describes the whole scheme.
 *
 * TransactionalId null:
 *   ProducerId/ProducerEpoch -1/-1 (all v0-2 requests): a new producer id,
 *     epoch 0, from the persisted id blocks (coord/pid.h).
 *   v3+ with the producer's current id and epoch (KIP-360, sent after
 *     UNKNOWN_PRODUCER_ID or OUT_OF_ORDER_SEQUENCE_NUMBER): the same id with
 *     epoch + 1, so partitions accept sequence 0 again and fence in-flight
 *     batches of the old epoch; a new id, epoch 0, when the epoch is
 *     exhausted (>= 32766), or the pair is not an idempotent id handed out
 *     here at exactly that epoch (pid.h: pid_epoch_current), so that no
 *     client bumps, and fences, another producer's id (a transactional
 *     one included) by naming it.  (Kafka always hands out a new id here;
 *     both are valid answers for the client, a bump keeps the id stable in
 *     logs.)
 *   only one of the two set: INVALID_REQUEST, as Kafka.
 * TransactionalId "" : INVALID_REQUEST.  Any other TransactionalId goes to
 * the transaction coordinator, txn_init_producer_id().  Both take their ids
 * from producer_ids.c.
 */
#include <errno.h>

#include "broker/authz.h"
#include "broker/broker.h"
#include "broker/handlers.h"
#include "broker/producer_ids.h"
#include "coord/pid.h"
#include "proto/kerr.h"
#include "util/log.h"

#define IDEM_EPOCH_MAX (INT16_MAX - 1) /* Kafka: a bump past this needs a new id */

static int16_t idem_new_id(struct broker *b, struct InitProducerIdResponse *out)
{
	struct pid_alloc *pa = producer_ids_local(b);

	/* a disk error or no block from ZooKeeper yet: retriable for the client, which backs off and retries */
	if (!pa || producer_ids_next(b, &out->ProducerId))
		return KERR_COORDINATOR_NOT_AVAILABLE;
	out->ProducerEpoch = 0;
	pid_epoch_set(pa, out->ProducerId, 0);
	return KERR_NONE;
}

int h_init_producer_id(struct req *rq, const void *in, void *out)
{
	const struct InitProducerIdRequest *req = in;
	struct InitProducerIdResponse *resp = out;
	struct pid_alloc *pa;

	resp->ProducerId = -1;
	resp->ProducerEpoch = -1;
	if ((resp->ErrorCode = authz_init_producer_id(rq, req->TransactionalId)))
		return H_REPLY;
	if (req->TransactionalId.len > 0)
		return txn_init_producer_id(rq, req, resp);
	if (req->TransactionalId.len == 0 || (req->ProducerId == -1) != (req->ProducerEpoch == -1)) {
		resp->ErrorCode = KERR_INVALID_REQUEST;
		return H_REPLY;
	}
	pa = producer_ids_local(rq->b);
	if (pa && req->ProducerEpoch >= 0 && req->ProducerEpoch < IDEM_EPOCH_MAX &&
	    pid_epoch_current(pa, req->ProducerId, req->ProducerEpoch)) {
		resp->ProducerId = req->ProducerId;
		resp->ProducerEpoch = (int16_t)(req->ProducerEpoch + 1);
		pid_epoch_set(pa, resp->ProducerId, resp->ProducerEpoch);
	} else {
		resp->ErrorCode = idem_new_id(rq->b, resp);
	}
	log_debug(LOGC_TXN, "txn", "%s: InitProducerId v%d (id %lld epoch %d) -> id %lld epoch %d error %d",
		  conn_peer(rq->c), rq->hdr.api_version, (long long)req->ProducerId, req->ProducerEpoch,
		  (long long)resp->ProducerId, resp->ProducerEpoch, resp->ErrorCode);
	return H_REPLY;
}
