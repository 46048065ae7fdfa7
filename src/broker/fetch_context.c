/*
 * fetch_context.c - Fetch requests and responses meeting the fetch
 * session cache (see fetch_context.h).
 *
 * An incremental fetch is served from a copy of the session taken when
 * the request arrives (names, fetch offsets and what the fetcher was told,
 * all in the request's arena), because the session may change or go while
 * the fetch is parked.  The answer is compared against that copy; it is
 * written back into the session only if the session is still the same one
 * (generation) at the same epoch.  A session that moved on meanwhile (a
 * later request of the same fetcher was taken first) gets
 * INVALID_FETCH_SESSION_EPOCH, as Kafka answers; one that was evicted
 * gets the answer anyway, and the fetcher learns of the loss on its next
 * request.
 */
#include "broker/fetch_context.h"

#include <errno.h>
#include <string.h>

#include "broker/api.h"
#include "proto/kerr.h"
#include "util/log.h"

/* A topic name for the session cache: a null or empty one as "". */
static const char *fetch_context_topic(struct kstr topic, int32_t *len)
{
	*len = topic.len > 0 ? topic.len : 0;
	return *len ? topic.p : "";
}

static struct fetch_session_req fetch_context_req(const struct FetchRequestPartition *p)
{
	return (struct fetch_session_req){ p->FetchOffset, p->LogStartOffset, p->PartitionMaxBytes,
					   p->CurrentLeaderEpoch };
}

/* Applies an incremental request's partitions, then its forgotten ones, to sess; -ENOSPC or -ENOMEM on failure. */
static int fetch_context_update(struct fetch_session_cache *cache, struct fetch_session *sess,
				const struct FetchRequest *f)
{
	const char *name;
	int32_t len;

	for (int32_t i = 0; i < f->Topics.n; i++) {
		const struct FetchRequestTopic *t = &f->Topics.v[i];

		name = fetch_context_topic(t->Topic, &len);
		for (int32_t j = 0; j < t->Partitions.n; j++) {
			struct fetch_session_req req = fetch_context_req(&t->Partitions.v[j]);
			int32_t idx =
				fetch_session_upsert(cache, sess, name, len, t->Partitions.v[j].Partition, &req, NULL);

			if (idx < 0)
				return idx;
		}
	}
	for (int32_t i = 0; i < f->ForgottenTopicsData.n; i++) {
		const struct FetchRequestForgottenTopic *t = &f->ForgottenTopicsData.v[i];

		name = fetch_context_topic(t->Topic, &len);
		for (int32_t j = 0; j < t->Partitions.n; j++)
			fetch_session_forget(cache, sess, name, len, t->Partitions.v[j]);
	}
	return 0;
}

/* Does sp start a new topic in the session's order (prev: the partition before it, or NULL)? Names may hold NULs. */
static bool fetch_context_new_topic(const struct fetch_session_part *prev, const struct fetch_session_part *sp)
{
	return !prev || prev->topic_len != sp->topic_len || memcmp(prev->topic, sp->topic, (size_t)sp->topic_len) != 0;
}

/* Topics of the session's order: a new one wherever the topic differs from the previous partition's. */
static int32_t fetch_context_count_topics(const struct fetch_session *sess)
{
	int32_t n = 0;
	const struct fetch_session_part *prev = NULL;

	for (int32_t i = sess->head; i >= 0; i = sess->parts[i].next) {
		n += fetch_context_new_topic(prev, &sess->parts[i]);
		prev = &sess->parts[i];
	}
	return n;
}

/* eff->Topics := the session's partitions in its order; ctx takes their entries and told state. */
static void fetch_context_snapshot(struct req *rq, const struct fetch_session *sess, struct fetch_context *ctx,
				   struct FetchRequest *eff)
{
	int32_t nt = fetch_context_count_topics(sess), t = -1, k = 0;
	struct FetchRequestTopic *topics = req_alloc(rq, (size_t)nt, sizeof(*topics));
	struct FetchRequestPartition *parts = req_alloc(rq, (size_t)sess->n, sizeof(*parts));
	const struct fetch_session_part *prev = NULL;

	ctx->n = sess->n;
	ctx->idx = req_alloc(rq, (size_t)sess->n, sizeof(*ctx->idx));
	ctx->told = req_alloc(rq, (size_t)sess->n, sizeof(*ctx->told));
	for (int32_t i = sess->head; i >= 0; i = sess->parts[i].next, k++) {
		const struct fetch_session_part *sp = &sess->parts[i];

		if (fetch_context_new_topic(prev, sp)) {
			char *name = req_alloc(rq, (size_t)sp->topic_len + 1, 1);

			memcpy(name, sp->topic, (size_t)sp->topic_len);
			topics[++t] = (struct FetchRequestTopic){ .Topic = { name, sp->topic_len },
								  .Partitions = { &parts[k], 0 } };
		}
		prev = sp;
		topics[t].Partitions.n++;
		parts[k] = (struct FetchRequestPartition){ .Partition = sp->partition,
							   .CurrentLeaderEpoch = sp->leader_epoch,
							   .FetchOffset = sp->fetch_offset,
							   .LogStartOffset = sp->fetcher_log_start_offset,
							   .PartitionMaxBytes = sp->max_bytes };
		ctx->idx[k] = i;
		ctx->told[k] = sp->told;
	}
	eff->Topics.v = topics;
	eff->Topics.n = nt;
}

/* An incremental request: checks and updates session f->SessionId. */
static int16_t fetch_context_incremental(struct fetch_session_cache *cache, struct req *rq,
					 const struct FetchRequest *f, struct fetch_context *ctx,
					 struct FetchRequest *eff, int64_t now_ms)
{
	struct fetch_session *sess = fetch_session_find(cache, f->SessionId);

	if (!sess)
		return KERR_FETCH_SESSION_ID_NOT_FOUND;
	if (sess->epoch != f->SessionEpoch)
		return KERR_INVALID_FETCH_SESSION_EPOCH;
	if (fetch_context_update(cache, sess, f)) { /* its fetcher starts again with a full fetch */
		log_warn("fetch session %d closed: no room for its partitions", sess->id);
		fetch_session_remove(cache, sess);
		return KERR_FETCH_SESSION_ID_NOT_FOUND;
	}
	if (sess->n == 0) { /* everything forgotten: Kafka closes it and serves the request as it is */
		fetch_session_remove(cache, sess);
		ctx->kind = FETCH_CONTEXT_SESSIONLESS;
		return 0;
	}
	sess->epoch = fetch_session_next_epoch(sess->epoch);
	fetch_session_touch(cache, sess, now_ms);
	ctx->kind = FETCH_CONTEXT_INCREMENTAL;
	ctx->session_id = sess->id;
	ctx->epoch = sess->epoch;
	ctx->generation = sess->generation;
	fetch_context_snapshot(rq, sess, ctx, eff);
	return 0;
}

int16_t fetch_context_begin(struct fetch_session_cache *cache, struct req *rq, const struct FetchRequest *f,
			    struct fetch_context *ctx, struct FetchRequest *eff, int64_t now_ms)
{
	*ctx = (struct fetch_context){ .kind = FETCH_CONTEXT_SESSIONLESS };
	*eff = *f;
	if (f->SessionId != FETCH_SESSION_INVALID_ID || f->SessionEpoch != FETCH_SESSION_FINAL_EPOCH)
		log_debug(LOGC_BROKER, "broker", "fetch session %d epoch %d: %d topics, %d forgotten", f->SessionId,
			  f->SessionEpoch, f->Topics.n, f->ForgottenTopicsData.n);
	if (f->SessionEpoch == FETCH_SESSION_INITIAL_EPOCH || f->SessionEpoch == FETCH_SESSION_FINAL_EPOCH) {
		struct fetch_session *old = f->SessionId ? fetch_session_find(cache, f->SessionId) : NULL;

		if (old) /* a full request closes the session it names */
			fetch_session_remove(cache, old);
		if (f->SessionEpoch == FETCH_SESSION_INITIAL_EPOCH)
			ctx->kind = FETCH_CONTEXT_FULL;
		return 0;
	}
	return fetch_context_incremental(cache, rq, f, ctx, eff, now_ms);
}

static struct fetch_session_state fetch_context_state(const struct FetchResponsePartition *p)
{
	return (struct fetch_session_state){ .high_watermark = p->HighWatermark,
					     .last_stable_offset = p->LastStableOffset,
					     .log_start_offset = p->LogStartOffset,
					     .error_code = p->ErrorCode,
					     .records_bytes = p->Records.len > 0 ? p->Records.len : 0 };
}

/* A full fetch answered: a new session of its partitions, told what resp tells. */
static void fetch_context_create(struct fetch_session_cache *cache, const struct FetchRequest *eff,
				 struct FetchResponse *resp, int64_t now_ms)
{
	struct fetch_session *sess;
	int32_t n = 0;

	for (int32_t i = 0; i < eff->Topics.n; i++)
		n += eff->Topics.v[i].Partitions.n;
	if (fetch_session_create(cache, now_ms, eff->ReplicaId >= 0, n, &sess))
		return; /* no slot: answered without a session */
	for (int32_t i = 0; i < resp->Responses.n; i++) {
		const struct FetchRequestTopic *t = &eff->Topics.v[i];
		int32_t len;
		const char *name = fetch_context_topic(t->Topic, &len);

		for (int32_t j = 0; j < resp->Responses.v[i].Partitions.n; j++) {
			struct fetch_session_req req = fetch_context_req(&t->Partitions.v[j]);
			struct fetch_session_state st = fetch_context_state(&resp->Responses.v[i].Partitions.v[j]);
			int32_t idx =
				fetch_session_upsert(cache, sess, name, len, t->Partitions.v[j].Partition, &req, NULL);

			if (idx < 0) {
				fetch_session_remove(cache, sess);
				return;
			}
			fetch_session_must_respond(&sess->parts[idx].told, &st, true);
		}
	}
	if (sess->n == 0) { /* a full fetch of nothing keeps no session */
		fetch_session_remove(cache, sess);
		return;
	}
	resp->SessionId = sess->id;
}

/* An incremental fetch answered: keeps in resp only what must be answered, and records it in the session. */
static void fetch_context_prune(struct fetch_session_cache *cache, struct fetch_context *ctx,
				struct FetchResponse *resp, int64_t now_ms)
{
	struct fetch_session *sess = fetch_session_find(cache, ctx->session_id);
	int32_t k = 0, nt = 0;

	if (sess && sess->generation != ctx->generation)
		sess = NULL;
	resp->SessionId = ctx->session_id;
	if (sess && sess->epoch != ctx->epoch) { /* a later request was taken meanwhile */
		resp->ErrorCode = KERR_INVALID_FETCH_SESSION_EPOCH;
		resp->Responses.n = 0;
		return;
	}
	for (int32_t i = 0; i < resp->Responses.n; i++) {
		struct FetchResponseTopic *t = &resp->Responses.v[i];
		int32_t np = 0;

		for (int32_t j = 0; j < t->Partitions.n; j++, k++) {
			struct fetch_session_state st = fetch_context_state(&t->Partitions.v[j]);

			if (!fetch_session_must_respond(&ctx->told[k], &st, true))
				continue;
			t->Partitions.v[np++] = t->Partitions.v[j];
			if (!sess)
				continue;
			sess->parts[ctx->idx[k]].told = ctx->told[k];
			if (st.records_bytes > 0) /* served last next time, so others get their turn */
				fetch_session_move_last(sess, ctx->idx[k]);
		}
		t->Partitions.n = np;
		if (np > 0)
			resp->Responses.v[nt++] = *t;
	}
	resp->Responses.n = nt;
	if (sess)
		fetch_session_touch(cache, sess, now_ms);
}

void fetch_context_finish(struct fetch_session_cache *cache, struct fetch_context *ctx, const struct FetchRequest *eff,
			  struct FetchResponse *resp, int64_t now_ms)
{
	resp->SessionId = FETCH_SESSION_INVALID_ID;
	if (resp->ErrorCode)
		return;
	if (ctx->kind == FETCH_CONTEXT_FULL)
		fetch_context_create(cache, eff, resp, now_ms);
	else if (ctx->kind == FETCH_CONTEXT_INCREMENTAL)
		fetch_context_prune(cache, ctx, resp, now_ms);
}
