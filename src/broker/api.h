/*
 * api.h - one request's life, and the table of API handlers (api.c decodes
 * and dispatches; req.c holds the request, replies and frees it).
 *
 * A request frame is decoded into the generated request struct, handed to
 * its handler with a response struct preset to defaults, and the response
 * is encoded into the connection's reply slot.  A handler returns:
 *   H_REPLY    encode rq->out and send it now;
 *   H_PARKED   the handler keeps rq and calls req_reply() later (acks=all
 *              produce waiting for fsync, long-poll fetch);
 *   H_NOREPLY  no response at all (acks=0 produce);
 *   H_CLOSE    the request is unacceptable: close this connection only.
 * The request owns its frame; decoded strings and bytes are views into it,
 * valid until the request is released.
 */
#ifndef GREGOR_BROKER_API_H
#define GREGOR_BROKER_API_H

#include <stdbool.h>
#include <stdint.h>

#include "net/conn.h"
#include "net/loop.h"
#include "proto/header.h"
#include "proto_msgs.h"
#include "util/arena.h"

enum h_result { H_REPLY = 0, H_PARKED, H_NOREPLY, H_CLOSE };

struct broker;

struct req {
	struct broker *b;
	struct conn *c; /* holds a reference */
	struct conn_slot *slot;
	struct req_header hdr;
	struct arena arena;
	uint8_t *frame; /* owned */
	int32_t frame_len;
	void *in;  /* decoded request (arena) */
	void *out; /* response to encode (arena) */
	/* parking: used by whichever subsystem holds the request */
	struct loop_timer timer;
	uint64_t park_ticket;
	int64_t park_deadline_ms;
	void (*on_free)(struct req *rq); /* releases what a handler holds (file refs) */
	bool autocreated;                /* re-run once the topics it auto-created were made: creates no more */
	void *hold;                      /* handler-owned state for on_free */
	int64_t start_us;                /* clock_mono_us() when read (request total time) */
	bool refused;                    /* the connection was closed for it (error count) */
	int64_t handler_us;              /* its handler's time on the loop when answered at once (request_percentage) */
};

typedef int api_handler_fn(struct req *rq, const void *in, void *out);

struct api_entry {
	api_handler_fn *handler;
	int16_t min, max; /* advertised versions */
};

/* The handler table, indexed by ApiKey; handler NULL = not served. */
extern const struct api_entry api_table[API_COUNT];
/* True if b serves api_key (the inter-broker APIs, AlterPartition and ElectLeaders only in cluster mode). */
bool api_served(const struct broker *b, int16_t api_key);

/* Encodes rq->out, queues it on the connection and frees rq. */
void req_reply(struct req *rq);
/* Encodes and queues rq->out ms milliseconds from now (a handler then returns H_PARKED). */
void req_reply_after(struct req *rq, int64_t ms);
/* Shutdown: frees the replies held back for their throttle time (client quotas), unsent. */
void req_drop_held(void);
/* Finishes rq with no response and frees it. */
void req_noreply(struct req *rq);
/* Resets rq->out to the response defaults (for a handler re-run after parking). */
void req_reset_out(struct req *rq);
/* Replies, closes or leaves rq parked as a handler's result res (H_*) says (a handler re-run after parking). */
void req_finish(struct req *rq, int res);
/* Logs why, closes rq's connection (only that one) and frees rq: a request refused. */
void req_close(struct req *rq, const char *why);
/*
 * Runs handler on rq (its time on the loop counts for request_percentage) and finishes rq as it says:
 * the dispatch, and a parked request run again from the start (after req_reset_out).
 */
void req_run_handler(struct req *rq, api_handler_fn *handler);
/* Sends w, a response the caller encoded whole (after its size field), and frees rq. */
void req_send_encoded(struct req *rq, struct wr *w);
/*
 * Zeroed memory from the request arena, freed with the request.  Sizes are
 * bounded by the request (decoded counts are checked against its bytes), so
 * like Redis' zmalloc this aborts on a system out-of-memory rather than
 * making every handler unwind.
 */
void *req_alloc(struct req *rq, size_t count, size_t size);

/* A formatted message (e.g. an ErrorMessage field) in the request arena. */
struct kstr req_printf(struct req *rq, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A NUL-terminated copy of s (null -> "") in the request arena. */
const char *req_cstr(struct req *rq, struct kstr s);

/* Entry point for the network layer (net/conn.h conn_request_fn). */
void api_on_request(struct conn *c, struct conn_slot *slot, uint8_t *frame, int32_t len);

#endif
