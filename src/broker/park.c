/*
 * park.c - the queue of requests waiting for an fsync round (see park.h).
 * Moved out of h_produce.c so that Produce and OffsetCommit share it.
 */
#include "broker/park.h"

#include "broker/broker.h"
#include "broker/syncer.h"

/* One parked request; allocated from the request's arena. */
struct park_entry {
	struct req *rq;
	park_fail_fn *fail;
	struct park_entry *next;
};

/* Parked requests, in ticket order (tickets only grow). */
static struct park_entry *park_head, *park_tail;

bool park_sync_on_ack(const struct broker_cfg *cfg)
{
	return cfg->log_flush_interval_messages == INT64_MAX && cfg->log_flush_interval_ms < 0;
}

int park_until_synced(struct req *rq, uint64_t ticket, park_fail_fn *fail)
{
	struct park_entry *e;

	if (!ticket || syncer_done(rq->b->syncer) >= ticket)
		return H_REPLY;
	e = req_alloc(rq, 1, sizeof(*e));
	e->rq = rq;
	e->fail = fail;
	rq->park_ticket = ticket;
	if (park_tail)
		park_tail->next = e;
	else
		park_head = e;
	park_tail = e;
	return H_PARKED;
}

void park_on_synced(struct broker *b)
{
	uint64_t done = syncer_done(b->syncer);

	while (park_head && park_head->rq->park_ticket <= done) {
		struct park_entry *e = park_head;

		park_head = e->next;
		if (!park_head)
			park_tail = NULL;
		if (syncer_failed(b->syncer, e->rq->park_ticket) && e->fail)
			e->fail(e->rq);
		req_reply(e->rq);
	}
}

void park_drop(void)
{
	while (park_head) {
		struct req *rq = park_head->rq;

		park_head = park_head->next;
		req_noreply(rq);
	}
	park_tail = NULL;
}
