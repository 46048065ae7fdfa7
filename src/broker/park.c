/*
 * park.c - the queue of requests waiting for an fsync round (see park.h).
 * Moved out of h_produce.c so that Produce and OffsetCommit share it.
 */
#include "broker/park.h"

#include <stddef.h>

#include "broker/broker.h"
#include "broker/syncer.h"
#include "util/clock.h"

/* One parked request; allocated from the request's arena. */
struct park_entry {
	struct req *rq;
	park_fail_fn *fail;
	park_fail_fn *timed_out; /* NULL: waits for its round however long it takes */
	int64_t parked_us;       /* when it was parked (park_waited_us) */
	struct park_entry *next;
};

/* Parked requests, in ticket order (tickets only grow). */
static struct park_entry *park_head, *park_tail;
static uint64_t park_released; /* answered by park_on_synced: requests that waited for a round */
static uint64_t park_wait_us;  /* their waits, summed */

bool park_sync_on_ack(const struct broker_cfg *cfg)
{
	return cfg->log_flush_interval_messages == INT64_MAX && cfg->log_flush_interval_ms < 0;
}

/* Unlinks the entry of rq (prev is the one before it, NULL at the head). */
static void park_unlink(struct park_entry *prev, struct park_entry *e)
{
	if (prev)
		prev->next = e->next;
	else
		park_head = e->next;
	if (park_tail == e)
		park_tail = prev;
	if (loop_timer_armed(&e->rq->timer))
		loop_timer_cancel(e->rq->b->loop, &e->rq->timer);
}

int32_t park_count(int16_t api_key)
{
	int32_t n = 0;

	for (struct park_entry *e = park_head; e; e = e->next)
		n += e->rq->hdr.api_key == api_key;
	return n;
}

/* rq's deadline passed before its round was done: answer it now. */
static void park_timeout(struct loop_timer *t)
{
	struct req *rq = (struct req *)((char *)t - offsetof(struct req, timer));
	struct park_entry *prev = NULL, *e = park_head;

	while (e && e->rq != rq) {
		prev = e;
		e = e->next;
	}
	if (!e)
		return;
	park_unlink(prev, e);
	e->timed_out(rq);
	req_reply(rq);
}

int park_until_synced_within(struct req *rq, uint64_t ticket, park_fail_fn *fail, int32_t timeout_ms,
			     park_fail_fn *timed_out)
{
	struct park_entry *e;

	if (!ticket || syncer_done(rq->b->syncer) >= ticket) {
		if (ticket && syncer_failed(rq->b->syncer, ticket) && fail)
			fail(rq);
		return H_REPLY;
	}
	e = req_alloc(rq, 1, sizeof(*e));
	e->rq = rq;
	e->fail = fail;
	e->timed_out = timeout_ms > 0 ? timed_out : NULL;
	e->parked_us = clock_mono_us();
	rq->park_ticket = ticket;
	if (park_tail)
		park_tail->next = e;
	else
		park_head = e;
	park_tail = e;
	if (e->timed_out) {
		rq->timer.fn = park_timeout;
		loop_timer_set(rq->b->loop, &rq->timer, clock_mono_ms() + timeout_ms);
	}
	return H_PARKED;
}

int park_until_synced(struct req *rq, uint64_t ticket, park_fail_fn *fail)
{
	return park_until_synced_within(rq, ticket, fail, -1, NULL);
}

void park_on_synced(struct broker *b)
{
	uint64_t done = syncer_done(b->syncer);

	while (park_head && park_head->rq->park_ticket <= done) {
		struct park_entry *e = park_head;

		park_unlink(NULL, e);
		park_released++;
		park_wait_us += (uint64_t)(clock_mono_us() - e->parked_us);
		if (syncer_failed(b->syncer, e->rq->park_ticket) && e->fail)
			e->fail(e->rq);
		req_reply(e->rq);
	}
}

uint64_t park_answered(uint64_t *wait_us)
{
	*wait_us = park_wait_us;
	return park_released;
}

void park_drop(void)
{
	while (park_head) {
		struct park_entry *e = park_head;

		park_unlink(NULL, e);
		req_noreply(e->rq);
	}
}
