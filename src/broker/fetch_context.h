/*
 * fetch_context.h - what a Fetch request means for fetch sessions
 * (KIP-227), as Kafka's FetchManager decides it.
 *
 * Before a fetch is filled, fetch_context_begin reads SessionId and
 * SessionEpoch (Fetch v7+; older versions decode as 0 / -1):
 *
 *   id 0, epoch -1      sessionless: serve the request's partitions
 *   id X, epoch -1      close session X, then sessionless
 *   id 0, epoch 0       full: serve the request's partitions and, when
 *                       answering, create a session of them (if a slot is
 *                       free or can be evicted; else SessionId 0)
 *   id X, epoch 0       close session X, then full
 *   id X, epoch N > 0   incremental: X must exist (else
 *                       FETCH_SESSION_ID_NOT_FOUND) and expect epoch N
 *                       (else INVALID_FETCH_SESSION_EPOCH); the request's
 *                       partitions are added to or updated in the session,
 *                       ForgottenTopicsData removed, the epoch advances,
 *                       and the session's partitions are served.  A session
 *                       left with no partitions is closed and the request
 *                       served without one.
 *
 * The fetch then runs on the effective request (which for an incremental
 * fetch lists the session's partitions with their fetch offsets), parks
 * and is filled again as any other; fetch_context_finish, once, right
 * before the answer, creates the session of a full fetch, or for an
 * incremental one keeps only the partitions that must be answered
 * (fetch_session_must_respond), records what the fetcher is told, and moves
 * the partitions that returned records to the end of the session's order.
 */
#ifndef GREGOR_BROKER_FETCH_CONTEXT_H
#define GREGOR_BROKER_FETCH_CONTEXT_H

#include <stdint.h>

#include "broker/fetch_session.h"

struct req;
struct FetchRequest;
struct FetchResponse;

enum fetch_context_kind {
	FETCH_CONTEXT_SESSIONLESS = 0,
	FETCH_CONTEXT_FULL,
	FETCH_CONTEXT_INCREMENTAL,
};

struct fetch_context {
	enum fetch_context_kind kind;
	int32_t session_id;              /* incremental: the session */
	int32_t epoch;                   /* incremental: the session's epoch once this request is taken */
	uint64_t generation;             /* incremental: the session's generation */
	int32_t n;                       /* incremental: partitions served, in the effective request's order */
	int32_t *idx;                    /* their entries in the session (rq arena) */
	struct fetch_session_told *told; /* what the fetcher was told before (rq arena) */
};

/*
 * Decides the context of fetch f (see above) and sets *eff, the request to
 * serve: f itself, or for an incremental fetch f with Topics replaced by
 * the session's partitions (arrays and names in rq's arena).  Returns 0 or
 * the Kafka error to answer with (no partitions, SessionId 0).
 */
int16_t fetch_context_begin(struct fetch_session_cache *cache, struct req *rq, const struct FetchRequest *f,
			    struct fetch_context *ctx, struct FetchRequest *eff, int64_t now_ms);
/*
 * Completes resp (filled from eff) for the context just before it is sent:
 * sets SessionId, creates or updates the session, and for an incremental
 * fetch drops the partitions with nothing new.  Call once per request.
 */
void fetch_context_finish(struct fetch_session_cache *cache, struct fetch_context *ctx, const struct FetchRequest *eff,
			  struct FetchResponse *resp, int64_t now_ms);

#endif
