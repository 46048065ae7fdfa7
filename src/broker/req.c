/*
 * req.c - one request's life after its handler is chosen (see api.h):
 * the request arena, the reply (at once, held back for a throttle time, or
 * none), closing the connection for it, and freeing it.  api.c decodes and
 * dispatches; handlers and the parking subsystems use only this.
 */
#include "broker/api.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/broker.h"
#include "broker/stats.h"
#include "broker/throttle.h"
#include "util/clock.h"
#include "util/log.h"

void *req_alloc(struct req *rq, size_t count, size_t size)
{
	void *p = arena_calloc(&rq->arena, count ? count : 1, size);

	if (!p) {
		log_error("out of memory allocating %zu x %zu bytes for a request", count, size);
		abort();
	}
	return p;
}

struct kstr req_printf(struct req *rq, const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	int n;
	char *p;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n < 0)
		n = 0;
	if ((size_t)n >= sizeof(buf))
		n = (int)sizeof(buf) - 1;
	p = req_alloc(rq, (size_t)n + 1, 1);
	memcpy(p, buf, (size_t)n);
	return (struct kstr){ p, n };
}

const char *req_cstr(struct req *rq, struct kstr s)
{
	int32_t len = s.len > 0 ? s.len : 0;
	char *p = req_alloc(rq, (size_t)len + 1, 1);

	if (len)
		memcpy(p, s.p, (size_t)len);
	return p;
}

/* A Fetch from a follower broker (ReplicaId >= 0): counted as FetchFollower, as Kafka does. */
static bool req_from_follower(const struct req *rq)
{
	return rq->hdr.api_key == API_Fetch && rq->in && !rq->refused &&
	       ((const struct FetchRequest *)rq->in)->ReplicaId >= 0;
}

static void req_free(struct req *rq)
{
	stats_request(rq->hdr.api_key, rq->hdr.api_version, clock_mono_us() - rq->start_us, rq->refused,
		      req_from_follower(rq));
	if (rq->on_free)
		rq->on_free(rq);
	conn_put(rq->c);
	arena_release(&rq->arena);
	free(rq->frame);
	free(rq);
}

void req_reset_out(struct req *rq)
{
	const struct proto_api *pa = &proto_apis[rq->hdr.api_key];

	memset(rq->out, 0, pa->resp_size);
	pa->resp_init(rq->out);
}

static void req_send(struct req *rq, struct wr *w)
{
	if (w->err) {
		log_error("%s: out of memory encoding a response", conn_peer(rq->c));
		conn_close(rq->c, "response encoding failed");
		wr_release(w);
		return;
	}
	wr_patch_i32(w, 0, (int32_t)(wr_total(w) - 4));
	conn_slot_done(rq->c, rq->slot, w);
	wr_release(w);
}

void req_send_encoded(struct req *rq, struct wr *w)
{
	req_send(rq, w);
	req_free(rq);
}

static void req_send_reply(struct req *rq)
{
	const struct proto_api *pa = &proto_apis[rq->hdr.api_key];
	struct wr w;

	wr_init(&w);
	header_write_response(&w, rq->hdr.api_key, rq->hdr.api_version, rq->hdr.correlation_id);
	stats_response_errors(rq->hdr.api_key, rq->hdr.api_version, rq->out);
	pa->resp_encode(&w, rq->hdr.api_version, rq->out);
	req_send(rq, &w);
	req_free(rq);
}

/*
 * The request whose handler runs now, and since when: its time on the loop
 * until it is answered counts for request_percentage.  A request answered
 * later (parked) counts none: the handler may even free it before
 * returning, so nothing is written to it after.
 */
static struct req *req_running;
static int64_t req_running_us;

void req_run_handler(struct req *rq, api_handler_fn *handler)
{
	struct req *outer = req_running; /* a parked request re-run from inside another's handler */
	int64_t outer_us = req_running_us;

	req_running = rq;
	req_running_us = clock_mono_us();
	req_finish(rq, handler(rq, rq->in, rq->out));
	req_running = outer;
	req_running_us = outer_us;
}

static void req_note_handler_time(struct req *rq)
{
	if (rq == req_running)
		rq->handler_us = clock_mono_us() - req_running_us;
}

static void req_throttled(struct loop_timer *t);

/* Replies held back for their throttle time (versions before KIP-219), so shutdown can free them. */
static struct req **req_held;
static int req_nheld, req_capheld;

static void req_hold(struct req *rq, int64_t ms)
{
	if (req_nheld == req_capheld) {
		int cap = req_capheld ? req_capheld * 2 : 16;
		struct req **n = realloc(req_held, (size_t)cap * sizeof(*n));

		if (!n) {
			req_send_reply(rq); /* answered now rather than lost */
			return;
		}
		req_held = n;
		req_capheld = cap;
	}
	req_held[req_nheld++] = rq;
	loop_timer_cancel(rq->b->loop, &rq->timer);
	loop_timer_init(&rq->timer, req_throttled);
	loop_timer_set(rq->b->loop, &rq->timer, clock_mono_ms() + ms);
}

static void req_unhold(struct req *rq)
{
	for (int i = 0; i < req_nheld; i++)
		if (req_held[i] == rq) {
			req_held[i] = req_held[--req_nheld];
			return;
		}
}

static void req_throttled(struct loop_timer *t)
{
	struct req *rq = (struct req *)((char *)t - offsetof(struct req, timer));

	req_unhold(rq);
	req_send_reply(rq);
}

void req_drop_held(void)
{
	while (req_nheld > 0) {
		struct req *rq = req_held[--req_nheld];

		loop_timer_cancel(rq->b->loop, &rq->timer);
		conn_slot_done(rq->c, rq->slot, NULL);
		req_free(rq);
	}
	free(req_held);
	req_held = NULL;
	req_capheld = 0;
}

void req_reply(struct req *rq)
{
	int64_t hold_ms;

	req_note_handler_time(rq);
	hold_ms = throttle_apply(rq, true);

	if (hold_ms <= 0) {
		req_send_reply(rq);
		return;
	}
	/* a client older than KIP-219 gets its answer when the throttle time is over */
	req_hold(rq, hold_ms);
}

void req_reply_after(struct req *rq, int64_t ms)
{
	req_note_handler_time(rq);
	if (ms <= 0)
		req_send_reply(rq);
	else
		req_hold(rq, ms);
}

void req_noreply(struct req *rq)
{
	req_note_handler_time(rq);
	throttle_apply(rq, false);
	conn_slot_done(rq->c, rq->slot, NULL);
	req_free(rq);
}

void req_close(struct req *rq, const char *why)
{
	log_warn("%s: %s (api key %d version %d, client '%.*s')", conn_peer(rq->c), why, rq->hdr.api_key,
		 rq->hdr.api_version, rq->hdr.client_id.len > 0 ? rq->hdr.client_id.len : 0,
		 rq->hdr.client_id.p ? rq->hdr.client_id.p : "");
	rq->refused = true;
	conn_slot_done(rq->c, rq->slot, NULL);
	conn_close(rq->c, why);
	req_free(rq);
}

void req_finish(struct req *rq, int res)
{
	switch (res) {
	case H_REPLY:
		req_reply(rq);
		break;
	case H_NOREPLY:
		req_noreply(rq);
		break;
	case H_CLOSE:
		req_close(rq, "request refused");
		break;
	case H_PARKED:
		break;
	}
}
