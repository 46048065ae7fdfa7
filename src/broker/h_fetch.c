/*
 * h_fetch.c - Fetch: record data straight from segment files to the
 * socket (sendfile), and long polling.
 *
 * A fetch that finds fewer than MinBytes parks until data arrives or
 * MaxWaitMs passes (fetch_park.h).  An append to a partition makes ready
 * only the fetches parked on it, and at the end of the loop iteration
 * fetch_wake fills just those again, never by a polling timer.  A re-fill
 * reuses the response arrays of the first fill (only the file slices and
 * read_committed's aborted lists are re-made), so a parked fetch does not
 * grow with each wake-up; its arena is counted in queued.max.request.bytes
 * while it waits, and one that still grows past FETCH_PARK_GROWTH_MAX is
 * answered early with what it has.
 *
 * Fetch sessions (KIP-227, broker/fetch_context.h): the request is first
 * turned into the one to serve (for an incremental fetch, the session's
 * partitions), which is filled, parked and filled again like any other;
 * just before the answer leaves, fetch_context_finish creates the session
 * of a full fetch or keeps in an incremental answer only the partitions
 * with something new.
 *
 * A follower's fetch (ReplicaId >= 0, cluster mode) is served up to the
 * log end, not the high watermark, and tells the leader its fetch offset
 * (broker/replica.h: the high watermark over the ISR).
 *
 * read_committed (IsolationLevel 1): data is served only below the last
 * stable offset (log/txnidx.h), and AbortedTransactions lists every
 * aborted transaction overlapping the returned bytes, [FetchOffset,
 * upper) with upper the first indexed offset past them (as Kafka), with
 * no cap on their number: a consumer that is not told of an aborted
 * transaction delivers its records.  The record bytes are still served
 * zero-copy.
 *
 * Size: the request's MaxBytes and every PartitionMaxBytes are clamped to
 * the broker's fetch.max.bytes (at most 1 GiB), as Kafka does; only the
 * first batch of the response may go past it (KIP-74), and never past
 * FETCH_RECORDS_HARD_MAX, so a response frame (records plus per-partition
 * fields, which the request's own size bounds) never nears 2 GiB nor wraps
 * its int32 length.
 *
 * Fetch v0-v3 get the legacy message formats, converted in memory
 * (broker/downconvert.h); Fetch below v10 gets no zstd data.
 *
 * At stop one log line tells what the answers carried (partitions and
 * bytes per answer, partitions left below their high watermark with
 * nothing, parked fetches and timeouts): a consumer's reads seen from
 * the broker's side.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "broker/authz.h"
#include "broker/broker.h"
#include "broker/downconvert.h"
#include "broker/fetch_context.h"
#include "broker/fetch_park.h"
#include "broker/handlers.h"
#include "broker/registry.h"
#include "broker/replica.h"
#include "broker/stats.h"
#include "log/partition.h"
#include "log/txnidx.h"
#include "proto/kerr.h"
#include "util/clock.h"
#include "util/log.h"

/* A fetch's own state: file slices held by its response, Fetch v0-v3's converted message sets, and its parking. */
struct fetch_hold {
	struct fslice *slices; /* released with the request, or before a re-fill */
	int n, cap;
	struct FetchResponseTopic *topics; /* the response arrays, filled again in place */
	struct fetch_park park;
	size_t arena_parked; /* arena bytes when parked, counted in queued.max.request.bytes */
	size_t arena_charged;
	struct wr conv; /* Fetch v0-v3: the message sets, one after another */
	/* the request served (the session's partitions for an incremental fetch), and its session context */
	struct FetchRequest eff;
	struct fetch_context ctx;
};

#define FETCH_PARK_GROWTH_MAX (64 << 10) /* arena growth while parked before answering early */

/* What the answered fetches carried, for the shutdown line (bench/consumer-partitions reads it). */
static struct {
	uint64_t answers, parts, with_records, behind, bytes, parked, timed_out;
} fetch_stats;

static void fetch_release(struct req *rq)
{
	struct fetch_hold *h = rq->hold;

	if (!h)
		return;
	for (int i = 0; i < h->n; i++)
		fdref_put(h->slices[i].ref);
	h->n = 0;
	wr_release(&h->conv);
}

static void fetch_hold_add(struct req *rq, const struct fslice *s)
{
	struct fetch_hold *h = rq->hold;

	if (h->n == h->cap) {
		int cap = h->cap ? h->cap * 2 : 16;
		struct fslice *ns = req_alloc(rq, (size_t)cap, sizeof(*ns));

		if (h->n)
			memcpy(ns, h->slices, (size_t)h->n * sizeof(*ns));
		h->slices = ns;
		h->cap = cap;
	}
	h->slices[h->n++] = *s;
}

#define FETCH_RECORDS_HARD_MAX ((int64_t)1 << 30) /* record bytes of a response, first batch included */

/* read_committed: the aborted transactions overlapping [from, upper). */
static void fetch_aborted(struct req *rq, struct part *part, int64_t from, int64_t upper,
			  struct FetchResponsePartition *out)
{
	struct txnidx_entry *e;
	int n = txnidx_collect(part, from, upper, NULL, 0);

	out->AbortedTransactions.n = 0;
	if (n == 0)
		return;
	e = req_alloc(rq, (size_t)n, sizeof(*e));
	txnidx_collect(part, from, upper, e, n);
	out->AbortedTransactions.v = req_alloc(rq, (size_t)n, sizeof(*out->AbortedTransactions.v));
	for (int i = 0; i < n; i++) {
		out->AbortedTransactions.v[i].ProducerId = e[i].producer_id;
		out->AbortedTransactions.v[i].FirstOffset = e[i].first_offset;
	}
	out->AbortedTransactions.n = n;
}

/*
 * Fetch below v4 carries message sets (converted into the hold; the
 * partition's Records point into it once the response is complete: see
 * fetch_fix_conv), below v10 no zstd.  Returns true if it answered the
 * partition (and put the reference on s), false if s is served as it is.
 */
static bool fetch_old_format(struct req *rq, struct topic *t, const struct FetchRequestPartition *in, struct fslice *s,
			     int64_t max, bool min_one, struct FetchResponsePartition *out)
{
	struct fetch_hold *hold = rq->hold;
	int magic = downconvert_magic(rq->hdr.api_version);
	size_t start = hold->conv.len;
	int err = 0;

	if (t->cfg.compression_type == CONFIG_COMPRESSION_ZSTD || (magic == 2 && downconvert_has_zstd(s)))
		err = -ENOTSUP;
	else if (magic == 2)
		return false;
	else
		err = downconvert_slice(s, magic, in->FetchOffset, max, min_one, &hold->conv);
	fdref_put(s->ref);
	if (err) {
		out->ErrorCode = err == -ENOTSUP ? KERR_UNSUPPORTED_COMPRESSION_TYPE : KERR_KAFKA_STORAGE_ERROR;
		return true;
	}
	out->Records.len = (int32_t)(hold->conv.len - start);
	if (out->Records.len > 0) /* an offset into hold->conv until fetch_fix_conv */
		out->Records.p = (const uint8_t *)(uintptr_t)start;
	return true;
}

/* Turns the offsets fetch_old_format stored into pointers, now that hold->conv no longer moves. */
static void fetch_fix_conv(struct req *rq, struct FetchResponse *resp)
{
	struct fetch_hold *hold = rq->hold;

	if (rq->hdr.api_version >= 4)
		return;
	for (int32_t i = 0; i < resp->Responses.n; i++)
		for (int32_t j = 0; j < resp->Responses.v[i].Partitions.n; j++) {
			struct krecords *rec = &resp->Responses.v[i].Partitions.v[j].Records;

			if (rec->len > 0 && !rec->file.ref)
				rec->p = hold->conv.buf + (uintptr_t)rec->p;
		}
}

/* How far a fetch may read: a follower to the log end, a consumer to the HW (read_committed: the LSO). */
static int64_t fetch_upper(const struct broker *b, const struct FetchRequest *f, struct part *part,
			   const struct FetchResponsePartition *out)
{
	if (f->ReplicaId >= 0 && b->repl)
		return part_log_end_offset(part);
	return f->IsolationLevel == 1 ? out->LastStableOffset : out->HighWatermark;
}

/* Fills one partition; returns the record bytes it will carry. */
static int64_t fetch_partition(struct req *rq, const struct FetchRequest *f, struct topic *t,
			       const struct FetchRequestPartition *in, struct FetchResponsePartition *out, int64_t used)
{
	struct part *part = t ? registry_part(t, in->Partition) : NULL;
	struct fslice s = { 0 };
	int64_t limit = f->MaxBytes < rq->b->cfg.fetch_max_bytes ? f->MaxBytes : rq->b->cfg.fetch_max_bytes;
	int64_t left = limit - used, max;
	int err;

	FetchResponsePartition_init(out);
	out->PartitionIndex = in->Partition;
	out->AbortedTransactions.n = -1;
	if (!part) {
		out->ErrorCode = registry_part_error(t, in->Partition);
		out->HighWatermark = -1;
		return 0;
	}
	if (f->ReplicaId >= 0 &&
	    rq->b->repl) { /* a follower: its fetch offset is its durable log end (broker/replica.h) */
		out->ErrorCode = replica_on_follower_fetch(rq->b, t, in->Partition, part, f->ReplicaId,
							   in->CurrentLeaderEpoch, in->FetchOffset);
		if (out->ErrorCode)
			return 0;
	}
	out->HighWatermark = part_high_watermark(part);
	out->LastStableOffset = txnidx_last_stable_offset(part);
	out->LogStartOffset = part_log_start_offset(part);
	if (left <= 0 && used > 0)
		return 0;
	max = in->PartitionMaxBytes < left ? in->PartitionMaxBytes : left;
	err = part_read(part, in->FetchOffset, fetch_upper(rq->b, f, part, out), (int32_t)(max > 0 ? max : 0),
			used == 0, &s);
	if (err) {
		out->ErrorCode = err == -ERANGE ? KERR_OFFSET_OUT_OF_RANGE : KERR_KAFKA_STORAGE_ERROR;
		return 0;
	}
	if (!s.ref || s.len == 0 || used + (int64_t)s.len > FETCH_RECORDS_HARD_MAX) {
		fdref_put(s.ref); /* a first batch over the hard cap is never served */
		return 0;
	}
	if (rq->hdr.api_version < 10 && fetch_old_format(rq, t, in, &s, max, used == 0, out))
		return out->Records.len > 0 ? out->Records.len : 0;
	fetch_hold_add(rq, &s);
	if (f->IsolationLevel == 1) {
		int64_t upper = part_read_upper(part, in->FetchOffset, &s);

		fetch_aborted(rq, part, in->FetchOffset, upper < out->LastStableOffset ? upper : out->LastStableOffset,
			      out);
	}
	out->Records.len = (int32_t)s.len;
	out->Records.file = s;
	return s.len;
}

/* The response arrays, allocated on the first fill only. */
static struct FetchResponseTopic *fetch_topics(struct req *rq, const struct FetchRequest *f)
{
	struct fetch_hold *h = rq->hold;
	int32_t n = f->Topics.n > 0 ? f->Topics.n : 0;

	if (h->topics)
		return h->topics;
	h->topics = req_alloc(rq, (size_t)n, sizeof(*h->topics));
	for (int32_t i = 0; i < n; i++) {
		struct FetchResponseTopic *ot = &h->topics[i];

		ot->Topic = f->Topics.v[i].Topic;
		ot->Partitions.n = f->Topics.v[i].Partitions.n > 0 ? f->Topics.v[i].Partitions.n : 0;
		ot->Partitions.v = req_alloc(rq, (size_t)ot->Partitions.n, sizeof(*ot->Partitions.v));
	}
	return h->topics;
}

/* Builds the whole response (again, in place, after a wake-up); returns the record bytes in it. */
static int64_t fetch_fill(struct req *rq, const struct FetchRequest *f, struct FetchResponse *resp)
{
	int64_t bytes = 0;

	resp->Responses.n = f->Topics.n > 0 ? f->Topics.n : 0;
	resp->Responses.v = fetch_topics(rq, f);
	for (int32_t i = 0; i < resp->Responses.n; i++) {
		const struct FetchRequestTopic *it = &f->Topics.v[i];
		struct FetchResponseTopic *ot = &resp->Responses.v[i];
		bool allowed = authz_fetch(rq, f->ReplicaId, it->Topic);
		struct topic *t = allowed ? registry_find(rq->b->reg, it->Topic) : NULL;

		for (int32_t j = 0; j < ot->Partitions.n; j++) {
			bytes += fetch_partition(rq, f, t, &it->Partitions.v[j], &ot->Partitions.v[j], bytes);
			if (!t) /* cluster mode: led elsewhere? */
				ot->Partitions.v[j].ErrorCode =
					allowed ? registry_missing_error(rq->b->reg, it->Topic,
									 it->Partitions.v[j].Partition)
						: KERR_TOPIC_AUTHORIZATION_FAILED;
		}
	}
	fetch_fix_conv(rq, resp);
	return bytes;
}

static bool fetch_has_error(const struct FetchResponse *resp)
{
	if (resp->ErrorCode)
		return true;
	for (int32_t i = 0; i < resp->Responses.n; i++)
		for (int32_t j = 0; j < resp->Responses.v[i].Partitions.n; j++)
			if (resp->Responses.v[i].Partitions.v[j].ErrorCode)
				return true;
	return false;
}

static void fetch_unpark(struct req *rq)
{
	struct fetch_hold *h = rq->hold;

	fetch_park_remove(&h->park);
	loop_timer_cancel(rq->b->loop, &rq->timer);
}

/* Fills rq's response again after a wake-up or its timeout; true if it is to be answered now. */
static bool fetch_refill(struct req *rq, bool timed_out)
{
	struct fetch_hold *h = rq->hold;
	const struct FetchRequest *f = &h->eff;
	int64_t bytes;

	fetch_release(rq);
	req_reset_out(rq);
	bytes = fetch_fill(rq, f, rq->out);
	if (timed_out || bytes >= f->MinBytes || fetch_has_error(rq->out) || conn_is_closed(rq->c) ||
	    rq->arena.bytes > h->arena_parked + FETCH_PARK_GROWTH_MAX)
		return true;
	if (rq->arena.bytes > h->arena_charged) { /* read_committed's aborted lists */
		conn_slot_charge(rq->slot, (int64_t)(rq->arena.bytes - h->arena_charged));
		h->arena_charged = rq->arena.bytes;
	}
	return false;
}

/* Counts a final response: partitions, those with records, those left behind below their high watermark. */
static void fetch_count(const struct FetchRequest *f, const struct FetchResponse *resp)
{
	fetch_stats.answers++;
	for (int32_t i = 0; i < resp->Responses.n; i++)
		for (int32_t j = 0; j < resp->Responses.v[i].Partitions.n; j++) {
			const struct FetchResponsePartition *p = &resp->Responses.v[i].Partitions.v[j];

			fetch_stats.parts++;
			if (p->Records.len > 0) {
				fetch_stats.with_records++;
				fetch_stats.bytes += (uint64_t)p->Records.len;
				stats_topic_out(resp->Responses.v[i].Topic, (uint64_t)p->Records.len);
			} else if (!p->ErrorCode && p->HighWatermark > f->Topics.v[i].Partitions.v[j].FetchOffset) {
				fetch_stats.behind++;
			}
		}
}

/* The response is final: the fetch session learns what it tells. */
static void fetch_finish(struct req *rq)
{
	struct fetch_hold *h = rq->hold;

	fetch_count(&h->eff, rq->out);
	fetch_context_finish(rq->b->fetch_sessions, &h->ctx, &h->eff, rq->out, clock_mono_ms());
}

static void fetch_timeout(struct loop_timer *t)
{
	struct req *rq = (struct req *)((char *)t - offsetof(struct req, timer));

	fetch_unpark(rq);
	fetch_refill(rq, true);
	fetch_stats.timed_out++;
	fetch_finish(rq);
	req_reply(rq);
}

/* Parks rq on every partition it asked for (fetch_park.h). */
static void fetch_park(struct req *rq, const struct FetchRequest *f)
{
	struct fetch_hold *h = rq->hold;
	int32_t n = 0, k = 0;
	struct part **parts;

	for (int32_t i = 0; i < f->Topics.n; i++)
		n += f->Topics.v[i].Partitions.n > 0 ? f->Topics.v[i].Partitions.n : 0;
	parts = req_alloc(rq, (size_t)n, sizeof(*parts));
	for (int32_t i = 0; i < f->Topics.n; i++) {
		struct topic *t = registry_find(rq->b->reg, f->Topics.v[i].Topic);

		for (int32_t j = 0; j < f->Topics.v[i].Partitions.n; j++)
			parts[k++] = t ? registry_part(t, f->Topics.v[i].Partitions.v[j].Partition) : NULL;
	}
	fetch_stats.parked++;
	fetch_park_add(&h->park, rq, rq->c, req_alloc(rq, (size_t)n, sizeof(struct fetch_watch)), parts, n);
	h->arena_parked = h->arena_charged = rq->arena.bytes;
	conn_slot_charge(rq->slot, (int64_t)h->arena_charged);
	rq->park_deadline_ms = clock_mono_ms() + f->MaxWaitMs;
	rq->timer.fn = fetch_timeout;
	loop_timer_set(rq->b->loop, &rq->timer, rq->park_deadline_ms);
}

int h_fetch(struct req *rq, const void *in, void *out)
{
	struct FetchResponse *resp = out;
	struct fetch_hold *h;
	int64_t bytes;

	rq->hold = h = req_alloc(rq, 1, sizeof(struct fetch_hold));
	rq->on_free = fetch_release;
	resp->ErrorCode = fetch_context_begin(rq->b->fetch_sessions, rq, in, &h->ctx, &h->eff, clock_mono_ms());
	if (resp->ErrorCode)
		return H_REPLY; /* SessionId 0, no partitions */
	bytes = fetch_fill(rq, &h->eff, resp);
	if (bytes >= h->eff.MinBytes || h->eff.MaxWaitMs <= 0 || fetch_has_error(resp)) {
		fetch_finish(rq);
		return H_REPLY;
	}
	fetch_park(rq, &h->eff);
	return H_PARKED;
}

int fetch_sessions_start(struct broker *b)
{
	uint64_t seed = (uint64_t)clock_mono_ms();
	int err;

	if (getrandom(&seed, sizeof(seed), GRND_NONBLOCK) != sizeof(seed))
		seed ^= (uint64_t)(uintptr_t)b;
	b->fetch_sessions = calloc(1, sizeof(*b->fetch_sessions));
	if (!b->fetch_sessions)
		return -ENOMEM;
	err = fetch_session_cache_init(b->fetch_sessions, b->cfg.max_incremental_fetch_session_cache_slots,
				       b->cfg.min_incremental_fetch_session_eviction_ms, seed);
	if (err) {
		free(b->fetch_sessions);
		b->fetch_sessions = NULL;
	}
	return err;
}

void fetch_sessions_expire(struct broker *b, int64_t now_ms)
{
	int32_t n = fetch_session_expire(b->fetch_sessions, now_ms);

	if (n > 0)
		log_debug(LOGC_BROKER, "broker", "%d idle fetch sessions expired, %d left", n,
			  b->fetch_sessions->count);
}

void fetch_sessions_stop(struct broker *b)
{
	log_info("fetch answers: %llu, partitions %llu (%.1f per answer), with records %llu (%.1f per answer, "
		 "%.0f bytes per answer), left below their high watermark %llu; parked %llu, answered at their "
		 "timeout %llu",
		 (unsigned long long)fetch_stats.answers, (unsigned long long)fetch_stats.parts,
		 fetch_stats.answers ? (double)fetch_stats.parts / (double)fetch_stats.answers : 0.0,
		 (unsigned long long)fetch_stats.with_records,
		 fetch_stats.answers ? (double)fetch_stats.with_records / (double)fetch_stats.answers : 0.0,
		 fetch_stats.answers ? (double)fetch_stats.bytes / (double)fetch_stats.answers : 0.0,
		 (unsigned long long)fetch_stats.behind, (unsigned long long)fetch_stats.parked,
		 (unsigned long long)fetch_stats.timed_out);
	if (!b->fetch_sessions)
		return;
	fetch_session_cache_release(b->fetch_sessions);
	free(b->fetch_sessions);
	b->fetch_sessions = NULL;
}

void fetch_wake(struct broker *b)
{
	struct fetch_park *fp;

	(void)b;
	while ((fp = fetch_park_next_ready())) {
		struct req *rq = fp->rq;

		if (fetch_refill(rq, false)) {
			fetch_unpark(rq);
			fetch_finish(rq);
			req_reply(rq);
		}
	}
}
