/*
 * park.h - requests waiting for an fsync round: acks=all Produce and
 * OffsetCommit under the durable flush policy (docs/durability.md).
 *
 * A handler that appended data asks the syncer for a ticket
 * (syncer_want) and, unless that round is already done, parks the request
 * here.  Tickets only grow, so the queue is in ticket order: when the
 * syncer wakes the loop, park_on_synced() replies to every request whose
 * round is done, in order.  If a round failed, the request's fail
 * callback marks its response before it is sent.
 */
#ifndef GREGOR_BROKER_PARK_H
#define GREGOR_BROKER_PARK_H

#include <stdbool.h>
#include <stdint.h>

#include "broker/api.h"
#include "broker/config.h"

/* Marks rq->out as not durable (e.g. KAFKA_STORAGE_ERROR per partition). */
typedef void park_fail_fn(struct req *rq);

/*
 * The durable policy: with Kafka's flush settings unset
 * (log.flush.interval.messages and log.flush.interval.ms), writes that
 * promise durability are answered only after an fdatasync.
 */
bool park_sync_on_ack(const struct broker_cfg *cfg);

/*
 * Returns H_REPLY if round ticket is already done (or ticket is 0; fail
 * applied if that round failed), otherwise parks rq until it is and
 * returns H_PARKED.
 */
int park_until_synced(struct req *rq, uint64_t ticket, park_fail_fn *fail);
/*
 * Like park_until_synced, but if the round is not done within timeout_ms
 * (> 0; otherwise no limit), timed_out marks rq->out (REQUEST_TIMED_OUT)
 * and rq is answered then.  Uses rq->timer.
 */
int park_until_synced_within(struct req *rq, uint64_t ticket, park_fail_fn *fail, int32_t timeout_ms,
			     park_fail_fn *timed_out);

/* Replies to every parked request whose round is done (the loop's wake-up). */
void park_on_synced(struct broker *b);
/* Requests answered once their round was done, since start-up (answers per sync round); *wait_us their waits summed. */
uint64_t park_answered(uint64_t *wait_us);
/* Frees parked requests without replying (shutdown: their connections are gone). */
void park_drop(void);
/* Requests of api_key parked now (a Produce purgatory size for /metrics); loop thread. */
int32_t park_count(int16_t api_key);

#endif
