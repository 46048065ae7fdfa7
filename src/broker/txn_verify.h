/*
 * txn_verify.h - KIP-890 part 1: a partition leader appends a
 * transactional batch only once the producer's transaction coordinator
 * confirms that the partition is in the producer's ongoing transaction.
 *
 * The coordinator of a transactional id is this broker on a single node;
 * in cluster mode it is the leader of the id's partition of
 * __transaction_state as the metadata cache names it.  A local
 * coordinator is asked directly; another broker is asked with
 * AddPartitionsToTxn v4 VerifyOnly.  Either way the producer sees the
 * same answer, mapped as Kafka maps it (txn_verify_kerr).
 *
 * Asking another broker is a round trip: a Produce that needs one waits
 * for it without holding the event loop.  Its handler calls
 * txn_verify_ask() for every transactional batch that needs verifying,
 * then txn_verify_wait(); if that parks the request, the handler runs
 * again from the start once every answer is in (or the wait timed out),
 * so nothing was done twice, and txn_verify_produce() then returns the
 * coordinator's verdicts.  Requests of one connection run again in the
 * order they arrived, so an idempotent producer's sequence order holds.
 *
 * One outbound connection (net/client.h) per coordinator broker, one
 * request in flight on it: the partitions asked meanwhile leave together
 * in the next request, grouped per transactional id.
 *
 * Verification is done once per (producer id, epoch, partition) and
 * transaction: once the partition holds the producer's open transaction
 * at that epoch (its first batch appended), later batches need no
 * verification until the partition sees the producer's marker.  The
 * caller checks that (log/pstate.h) before asking.
 *
 * transaction.partition.verification.enable=false turns all of it off:
 * transactional batches are appended unverified, as Kafka then does.
 * Runs on the event loop.
 */
#ifndef GREGOR_BROKER_TXN_VERIFY_H
#define GREGOR_BROKER_TXN_VERIFY_H

#include <stdbool.h>
#include <stdint.h>

#include "broker/api.h"
#include "util/buf.h"

struct broker;

/*
 * First run of a Produce handler: if topic-partition's batch of
 * producer_id/producer_epoch needs verifying by a coordinator on another
 * broker, queues the question for rq (sent by txn_verify_wait).  Does
 * nothing on a re-run, for a local coordinator, or with verification off.
 */
void txn_verify_ask(struct req *rq, struct kstr txn_id, int64_t producer_id, int16_t producer_epoch, struct kstr topic,
		    int32_t partition);
/*
 * After the asks: H_PARKED if rq waits for answers (then the handler
 * runs again from the start, the partitions without an answer within
 * timeout_ms, at most 30 s, Kafka's request.timeout.ms, getting
 * NOT_ENOUGH_REPLICAS), else H_REPLY (nothing asked: go on).
 */
int txn_verify_wait(struct req *rq, int32_t timeout_ms);
/*
 * The answer for the producer: may the batch be appended?  KERR_NONE, or
 * the error Kafka gives the producer: TRANSACTIONAL_ID_AUTHORIZATION_FAILED
 * (no transactional id in the request), INVALID_TXN_STATE (the partition
 * is not in the transaction), INVALID_PRODUCER_EPOCH (fenced),
 * INVALID_PRODUCER_ID_MAPPING, NOT_ENOUGH_REPLICAS (the coordinator could
 * not be asked or is moving: retriable).
 */
int16_t txn_verify_produce(struct req *rq, struct kstr txn_id, int64_t producer_id, int16_t producer_epoch,
			   struct kstr topic, int32_t partition);
/* A coordinator's verdict (local or remote) as the producer gets it. */
int16_t txn_verify_kerr(int16_t coordinator_err);
/* Shutdown: closes the connections and frees the waiting requests unanswered. */
void txn_verify_stop(struct broker *b);

#endif
