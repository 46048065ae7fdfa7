/*
 * replica_fetch.c - the followers' fetchers (Kafka's ReplicaFetcherThread,
 * on the event loop): one per leader broker this broker follows a
 * partition of, each one outbound connection (net/client.h) to the
 * endpoint the controller gave for that leader (LeaderAndIsr LiveLeaders).
 *
 * A fetcher has at most one Fetch in flight (v11, ReplicaId = broker.id,
 * IsolationLevel 0, no fetch session), naming every partition it follows
 * on that leader at its log end.  The answer's batches are appended byte
 * for byte (part_append_replica; a partial last batch, where the leader
 * cut the answer by bytes, is left for the next Fetch); under the durable policy the next Fetch
 * leaves only once the sync round covering them is done, so the offset it
 * carries is durable here and the leader may count it in the high
 * watermark.  Each partition's high watermark follows the leader's
 * (part_set_hw_limit).  An error for the whole answer or a lost
 * connection pauses the fetcher for replica.fetch.backoff.ms; an error for
 * one partition (OFFSET_OUT_OF_RANGE, a failed append) leaves only that
 * partition out of the Fetches for as long, as Kafka delays a partition,
 * so the others keep replicating.
 *
 *   idle --send--> in flight --answer--> [waiting for sync] --> idle
 *     ^                 |error/down
 *     +--- backoff <----+
 */
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/broker.h"
#include "broker/park.h"
#include "broker/registry.h"
#include "broker/replica_int.h"
#include "broker/syncer.h"
#include "log/partition.h"
#include "net/client.h"
#include "proto/header.h"
#include "proto/kerr.h"
#include "proto/records.h"
#include "util/arena.h"
#include "util/clock.h"
#include "util/log.h"

#define FETCH_VERSION 11
#define EPOCH_VERSION 4

struct repl_fetcher {
	struct repl_fetcher *next;
	struct repl *rp;
	int32_t leader;
	char host[256];
	int32_t port;
	struct nclient *nc;
	struct loop_timer backoff;
	bool inflight;        /* a request awaits its answer */
	int16_t inflight_api; /* which: API_Fetch or API_OffsetForLeaderEpoch */
	bool backing_off;     /* the backoff timer is armed */
	uint64_t sync_ticket; /* the round the next Fetch waits for, 0 none */
	int32_t corr;
	int64_t warned_ms; /* last error line (rate limit) */
};

static void fetcher_send(struct repl_fetcher *f);

/* The leaders' endpoint by id, NULL if the last LeaderAndIsr did not list it. */
static const struct replica_leader_ep *fetcher_endpoint(struct repl *rp, int32_t id)
{
	for (int32_t i = 0; i < rp->nleaders; i++)
		if (rp->leaders[i].id == id)
			return &rp->leaders[i];
	return NULL;
}

static void fetcher_backoff(struct repl_fetcher *f)
{
	f->inflight = false;
	if (f->backing_off)
		return;
	f->backing_off = true;
	loop_timer_set(f->rp->b->loop, &f->backoff, clock_mono_ms() + f->rp->b->cfg.replica_fetch_backoff_ms);
}

static void fetcher_on_backoff(struct loop_timer *t)
{
	struct repl_fetcher *f = (struct repl_fetcher *)((char *)t - offsetof(struct repl_fetcher, backoff));

	f->backing_off = false;
	fetcher_send(f);
}

static void fetcher_warn(struct repl_fetcher *f, const char *what, const char *topic, int32_t partition,
			 const char *why)
{
	int64_t now = clock_mono_ms();

	if (now - f->warned_ms < 5000)
		return;
	f->warned_ms = now;
	log_warn("replica fetcher for broker %d: %s '%s-%d': %s", f->leader, what, topic, partition, why);
}

/* ---- the request ---- */

struct fetcher_build {
	struct repl_fetcher *f;
	struct FetchRequest *req;
	struct arena *a;
	int32_t cap;
	int64_t now_ms;
	bool delayed; /* a partition was left out after an error */
};

/* Adds r to the request if it follows f's leader and its log is here. */
static void fetcher_add_part(struct repl *rp, struct replica *r, void *arg)
{
	struct fetcher_build *fb = arg;
	struct FetchRequest *req = fb->req;
	struct FetchRequestTopic *ft = NULL;
	struct FetchRequestPartition *fp;
	struct part *part;

	if (r->leader != fb->f->leader || r->leader == rp->b->node_id || r->truncating || !(part = repl_part(rp, r)))
		return;
	if (r->fetch_retry_ms > fb->now_ms) {
		fb->delayed = true;
		return;
	}
	for (int32_t i = 0; i < req->Topics.n && !ft; i++)
		if (strcmp(req->Topics.v[i].Topic.p, r->topic) == 0)
			ft = &req->Topics.v[i];
	if (!ft) {
		if (req->Topics.n == fb->cap)
			return; /* cannot happen: cap is the count of states */
		ft = &req->Topics.v[req->Topics.n++];
		ft->Topic = kstr_c(r->topic); /* NUL-terminated: compared with strcmp above */
		ft->Partitions.v = arena_calloc(fb->a, (size_t)fb->cap, sizeof(*ft->Partitions.v));
		if (!ft->Partitions.v) {
			req->Topics.n--;
			return;
		}
	}
	fp = &ft->Partitions.v[ft->Partitions.n++];
	FetchRequestPartition_init(fp);
	fp->Partition = r->partition;
	fp->CurrentLeaderEpoch = r->leader_epoch;
	fp->FetchOffset = part_log_end_offset(part);
	fp->LogStartOffset = part_log_start_offset(part);
	fp->PartitionMaxBytes = rp->b->cfg.replica_fetch_max_bytes;
}

static void fetcher_count(struct repl *rp, struct replica *r, void *arg)
{
	(void)rp;
	(void)r;
	(*(int32_t *)arg)++;
}

/* Encodes and sends request req of api (version) on f's connection; false if it could not be sent. */
static bool fetcher_send_frame(struct repl_fetcher *f, int16_t api, int16_t version, const void *req)
{
	char client_id[32];
	struct wr w;
	size_t at;
	bool sent;

	wr_init(&w);
	snprintf(client_id, sizeof(client_id), "replica-fetcher-%d", f->rp->b->node_id);
	f->corr = (f->corr + 1) & 0x7fffffff;
	at = header_write_request(&w, api, version, f->corr, kstr_c(client_id));
	proto_apis[api].req_encode(&w, version, req);
	wr_patch_i32(&w, at, (int32_t)(wr_total(&w) - (int64_t)at - 4));
	sent = !w.err && nclient_send(f->nc, &w) == 0;
	wr_release(&w);
	if (sent) {
		f->inflight = true;
		f->inflight_api = api;
	}
	return sent;
}

/* ---- truncation before fetching (OffsetForLeaderEpoch) ---- */

struct fetcher_epochs {
	struct repl_fetcher *f;
	struct OffsetForLeaderEpochRequest *req;
	struct arena *a;
	int32_t cap;
	bool failed; /* a local truncation failed: back off */
};

/*
 * Adds r to the OffsetForLeaderEpoch request if it follows f's leader and
 * waits to truncate.  A log without leader epochs cuts back to its high
 * watermark at once, as Kafka's followers do, and asks nothing.
 */
static void fetcher_add_epoch(struct repl *rp, struct replica *r, void *arg)
{
	struct fetcher_epochs *fe = arg;
	struct OffsetForLeaderTopic *ft;
	struct part *part;
	int err;

	if (r->leader != fe->f->leader || !r->truncating || !(part = repl_part(rp, r)) || fe->req->Topics.n == fe->cap)
		return;
	if (part_latest_epoch(part) < 0) {
		if (part_high_watermark(part) < part_log_end_offset(part))
			log_info("replica: '%s-%d' truncates to %" PRId64 " (log end %" PRId64
				 "): no leader epochs, its high watermark",
				 r->topic, r->partition, part_high_watermark(part), part_log_end_offset(part));
		if ((err = part_truncate_to(part, part_high_watermark(part)))) {
			fetcher_warn(fe->f, "truncation of", r->topic, r->partition, strerror(-err));
			fe->failed = true;
			return;
		}
		r->truncating = false;
		return;
	}
	ft = &fe->req->Topics.v[fe->req->Topics.n];
	OffsetForLeaderTopic_init(ft);
	ft->Topic = kstr_c(r->topic);
	ft->Partitions.v = arena_calloc(fe->a, 1, sizeof(*ft->Partitions.v));
	if (!ft->Partitions.v)
		return;
	ft->Partitions.n = 1;
	OffsetForLeaderPartition_init(ft->Partitions.v);
	ft->Partitions.v->Partition = r->partition;
	ft->Partitions.v->CurrentLeaderEpoch = r->leader_epoch;
	ft->Partitions.v->LeaderEpoch = part_latest_epoch(part);
	fe->req->Topics.n++;
}

/*
 * Asks f's leader where the epochs of the partitions waiting to truncate
 * end (one entry per partition).  True if a request left, or a local
 * truncation failed (f backs off); false: nothing waits, fetch.
 */
static bool fetcher_send_epochs(struct repl_fetcher *f, struct arena *a, int32_t cap)
{
	struct OffsetForLeaderEpochRequest req;
	struct fetcher_epochs fe = { .f = f, .req = &req, .a = a, .cap = cap };

	OffsetForLeaderEpochRequest_init(&req);
	req.ReplicaId = f->rp->b->node_id;
	req.Topics.v = arena_calloc(a, (size_t)(cap ? cap : 1), sizeof(*req.Topics.v));
	if (!req.Topics.v)
		return false;
	repl_foreach(f->rp, fetcher_add_epoch, &fe);
	if (fe.failed || (req.Topics.n > 0 && !fetcher_send_frame(f, API_OffsetForLeaderEpoch, EPOCH_VERSION, &req))) {
		fetcher_backoff(f);
		return true;
	}
	return req.Topics.n > 0;
}

/* One partition of the answer: cuts the log where it agrees with the leader's.  0, or -1 (back off). */
static int fetcher_epoch_partition(struct repl_fetcher *f, const char *topic, const struct EpochEndOffset *in)
{
	struct replica *r = replica_find(f->rp->b, topic, in->Partition);
	struct part *part = r && r->leader == f->leader && r->truncating ? repl_part(f->rp, r) : NULL;
	int64_t offset, leo;
	bool done;
	int err;

	if (!part)
		return 0;
	if (in->ErrorCode) {
		fetcher_warn(f, "OffsetForLeaderEpoch of", topic, in->Partition, kerr_name(in->ErrorCode));
		return -1;
	}
	done = part_truncation_offset(part, in->LeaderEpoch, in->EndOffset, &offset);
	leo = part_log_end_offset(part);
	if (offset < leo)
		log_info("replica: '%s-%d' truncates to %" PRId64 " (log end %" PRId64
			 "): leader %d has epoch %d ending at %" PRId64,
			 r->topic, r->partition, offset, leo, r->leader, in->LeaderEpoch, in->EndOffset);
	/* at the log end too when not done: the epochs starting there go, so the next question differs */
	if (offset < leo || !done) {
		if ((err = part_truncate_to(part, offset))) {
			fetcher_warn(f, "truncation of", topic, in->Partition, strerror(-err));
			return -1;
		}
	}
	r->truncating = !done; /* not done: ask again with the latest epoch left */
	return 0;
}

/* The OffsetForLeaderEpoch answer: truncates, then fetches (or asks again). */
static void fetcher_on_epochs(struct repl_fetcher *f, struct rd *r)
{
	struct OffsetForLeaderEpochResponse resp;
	bool failed = false;
	struct arena a;

	arena_init(&a, 0);
	OffsetForLeaderEpochResponse_init(&resp);
	if (proto_apis[API_OffsetForLeaderEpoch].resp_decode(r, &a, EPOCH_VERSION, &resp)) {
		fetcher_warn(f, "OffsetForLeaderEpoch answer for", "*", -1, "malformed");
		failed = true;
	}
	for (int32_t i = 0; !failed && i < resp.Topics.n; i++) {
		const struct OffsetForLeaderTopicResult *t = &resp.Topics.v[i];
		char name[256];

		snprintf(name, sizeof(name), "%.*s", t->Topic.len, t->Topic.p);
		for (int32_t j = 0; j < t->Partitions.n; j++)
			failed |= fetcher_epoch_partition(f, name, &t->Partitions.v[j]) < 0;
	}
	arena_release(&a);
	if (failed)
		fetcher_backoff(f);
	else
		fetcher_send(f);
}

/* ---- fetching ---- */

/*
 * Sends the next request of f, unless one is in flight or it waits: the
 * OffsetForLeaderEpoch of partitions that must truncate first, else the
 * Fetch of every other partition followed on f's leader.
 */
static void fetcher_send(struct repl_fetcher *f)
{
	struct broker *b = f->rp->b;
	struct FetchRequest req;
	struct fetcher_build fb = { .f = f, .req = &req, .now_ms = clock_mono_ms() };
	struct arena a;

	if (f->inflight || f->backing_off || f->sync_ticket || !nclient_up(f->nc))
		return;
	arena_init(&a, 0);
	fb.a = &a;
	repl_foreach(f->rp, fetcher_count, &fb.cap);
	if (fetcher_send_epochs(f, &a, fb.cap))
		goto out;
	FetchRequest_init(&req);
	req.ReplicaId = b->node_id;
	req.MaxWaitMs = b->cfg.replica_fetch_wait_max_ms;
	req.MinBytes = b->cfg.replica_fetch_min_bytes;
	req.MaxBytes = b->cfg.replica_fetch_response_max_bytes;
	req.IsolationLevel = 0;
	req.SessionId = 0;
	req.SessionEpoch = -1;
	req.Topics.v = arena_calloc(&a, (size_t)(fb.cap ? fb.cap : 1), sizeof(*req.Topics.v));
	if (req.Topics.v)
		repl_foreach(f->rp, fetcher_add_part, &fb);
	if (req.Topics.n > 0) {
		if (!fetcher_send_frame(f, API_Fetch, FETCH_VERSION, &req))
			fetcher_backoff(f);
	} else if (fb.delayed) {
		fetcher_backoff(f); /* every partition waits after an error: ask again then */
	}
out:
	arena_release(&a);
}

/* ---- the answer ---- */

/*
 * The whole batches at the start of p: a leader cuts its answer by bytes,
 * so the last batch may be partial (the next Fetch starts at it).
 */
static size_t fetcher_whole_batches(const uint8_t *p, size_t len)
{
	size_t off = 0;
	struct batch_hdr h;

	while (off < len && records_batch_parse(p + off, len - off, &h) == 0)
		off += (size_t)h.size;
	return off < len && records_batch_parse(p + off, len - off, &h) != -EAGAIN ? len : off;
}

/* An error for r alone: warned (rate limited) and r left out of the Fetches for replica.fetch.backoff.ms. */
static void fetcher_partition_failed(struct repl_fetcher *f, struct replica *r, const char *what, const char *why)
{
	fetcher_warn(f, what, r->topic, r->partition, why);
	r->fetch_retry_ms = clock_mono_ms() + f->rp->b->cfg.replica_fetch_backoff_ms;
}

/*
 * One partition of the answer: appends its batches, takes the leader's high
 * watermark.  Returns the sync round that makes the append durable (0 none);
 * an error delays this partition only (fetcher_partition_failed).
 */
static int64_t fetcher_partition(struct repl_fetcher *f, const char *topic, const struct FetchResponsePartition *in)
{
	struct broker *b = f->rp->b;
	struct replica *r = replica_find(b, topic, in->PartitionIndex);
	struct part *part = r && r->leader == f->leader && !r->truncating ? repl_part(f->rp, r) : NULL;
	struct part_append_info info;
	int64_t ticket = 0;
	size_t len;
	int err;

	if (!part)
		return 0; /* no longer followed here: the next Fetch leaves it out */
	if (in->ErrorCode) {
		fetcher_partition_failed(f, r, "fetch of", kerr_name(in->ErrorCode));
		return 0;
	}
	if (in->Records.len > 0 && (len = fetcher_whole_batches(in->Records.p, (size_t)in->Records.len)) > 0) {
		err = part_append_replica(part, in->Records.p, len, clock_wall_ms(), &info);
		if (err) {
			fetcher_partition_failed(f, r, "append to", strerror(-err));
			return 0;
		}
		if (park_sync_on_ack(&b->cfg) || info.rolled)
			ticket = (int64_t)syncer_want(b->syncer, part);
	}
	part_set_hw_limit(part, in->HighWatermark);
	r->leader_hw = in->HighWatermark;
	return park_sync_on_ack(&b->cfg) ? ticket : 0;
}

static void fetcher_on_frame(void *arg, const uint8_t *frame, int32_t len)
{
	struct repl_fetcher *f = arg;
	struct FetchResponse resp;
	int64_t ticket = 0;
	bool failed = false;
	struct arena a;
	struct rd r;
	int32_t corr;

	rd_init(&r, frame, (size_t)len);
	if (!f->inflight ||
	    header_read_response(&r, f->inflight_api, f->inflight_api == API_Fetch ? FETCH_VERSION : EPOCH_VERSION,
				 &corr) ||
	    corr != f->corr)
		return; /* an answer to a request from before a reconnect */
	f->inflight = false;
	if (f->inflight_api == API_OffsetForLeaderEpoch) {
		fetcher_on_epochs(f, &r);
		return;
	}
	arena_init(&a, 0);
	FetchResponse_init(&resp);
	if (proto_apis[API_Fetch].resp_decode(&r, &a, FETCH_VERSION, &resp) || resp.ErrorCode) {
		fetcher_warn(f, "answer for", "*", -1, resp.ErrorCode ? kerr_name(resp.ErrorCode) : "malformed");
		failed = true;
	}
	for (int32_t i = 0; !failed && i < resp.Responses.n; i++) {
		const struct FetchResponseTopic *t = &resp.Responses.v[i];
		char name[256];

		snprintf(name, sizeof(name), "%.*s", t->Topic.len, t->Topic.p);
		for (int32_t j = 0; j < t->Partitions.n; j++) {
			int64_t tk = fetcher_partition(f, name, &t->Partitions.v[j]);

			ticket = tk > ticket ? tk : ticket;
		}
	}
	arena_release(&a);
	if (ticket > 0 && (uint64_t)ticket > syncer_done(f->rp->b->syncer))
		f->sync_ticket = (uint64_t)ticket; /* the next Fetch tells the leader what is durable here */
	if (failed)
		fetcher_backoff(f);
	else
		fetcher_send(f);
}

static void fetcher_on_state(void *arg, bool up)
{
	struct repl_fetcher *f = arg;

	f->inflight = false;
	if (up)
		fetcher_send(f);
	else
		fetcher_backoff(f);
}

void repl_fetchers_on_synced(struct repl *rp)
{
	uint64_t done = syncer_done(rp->b->syncer);

	for (struct repl_fetcher *f = rp->fetchers; f; f = f->next) {
		if (!f->sync_ticket || f->sync_ticket > done)
			continue;
		f->sync_ticket = 0;
		if (syncer_failed(rp->b->syncer, done)) {
			fetcher_backoff(f); /* the log dir is offline: nothing more is durable here */
			continue;
		}
		fetcher_send(f);
	}
}

/* ---- the set of fetchers ---- */

static void fetcher_free(struct repl_fetcher *f)
{
	loop_timer_cancel(f->rp->b->loop, &f->backoff);
	nclient_free(f->nc);
	free(f);
}

static struct repl_fetcher *fetcher_new(struct repl *rp, const struct replica_leader_ep *ep)
{
	struct repl_fetcher *f = calloc(1, sizeof(*f));
	struct nclient_cfg cfg = {
		.host = ep->host,
		.port = ep->port,
		.out_max = 1 << 20,
		.frame_max = rp->b->cfg.replica_fetch_response_max_bytes + (64 << 20),
		.on_state = fetcher_on_state,
		.on_frame = fetcher_on_frame,
		.sec = rp->b->inter_sec,
	};

	if (!f)
		return NULL;
	if (ep->port <= 0) {
		log_warn("replica fetcher for broker %d: it has no endpoint of the inter-broker listener %s", ep->id,
			 rp->b->inter_listener);
		free(f);
		return NULL;
	}
	f->rp = rp;
	f->leader = ep->id;
	snprintf(f->host, sizeof(f->host), "%s", ep->host);
	f->port = ep->port;
	loop_timer_init(&f->backoff, fetcher_on_backoff);
	cfg.arg = f;
	if (nclient_new(rp->b->loop, &cfg, &f->nc)) {
		free(f);
		return NULL;
	}
	log_info("replica fetcher for broker %d at %s:%d started", f->leader, f->host, f->port);
	return f;
}

struct fetcher_need {
	int32_t *ids;
	int32_t n;
};

static void fetcher_collect(struct repl *rp, struct replica *r, void *arg)
{
	struct fetcher_need *need = arg;

	if (r->leader < 0 || r->leader == rp->b->node_id || !repl_ids_has(&r->replicas, rp->b->node_id))
		return;
	for (int32_t i = 0; i < need->n; i++)
		if (need->ids[i] == r->leader)
			return;
	need->ids[need->n++] = r->leader;
}

static void fetcher_count_all(struct repl *rp, struct replica *r, void *arg)
{
	fetcher_count(rp, r, arg);
}

void repl_fetchers_sync(struct repl *rp)
{
	struct fetcher_need need = { 0 };
	int32_t cap = 0;

	repl_foreach(rp, fetcher_count_all, &cap);
	need.ids = calloc((size_t)(cap ? cap : 1), sizeof(*need.ids));
	if (!need.ids)
		return;
	repl_foreach(rp, fetcher_collect, &need);
	for (struct repl_fetcher **pp = &rp->fetchers; *pp;) { /* gone, or moved elsewhere */
		struct repl_fetcher *f = *pp;
		const struct replica_leader_ep *ep = fetcher_endpoint(rp, f->leader);
		bool keep = false;

		for (int32_t i = 0; ep && !strcmp(ep->host, f->host) && ep->port == f->port && i < need.n; i++)
			if (need.ids[i] == f->leader) {
				need.ids[i] = -1; /* has its fetcher */
				keep = true;
			}
		if (keep) {
			pp = &f->next;
			continue;
		}
		*pp = f->next;
		log_info("replica fetcher for broker %d stopped", f->leader);
		fetcher_free(f);
	}
	for (int32_t i = 0; i < need.n; i++) {
		const struct replica_leader_ep *ep = need.ids[i] >= 0 ? fetcher_endpoint(rp, need.ids[i]) : NULL;
		struct repl_fetcher *f = ep ? fetcher_new(rp, ep) : NULL;

		if (f) {
			f->next = rp->fetchers;
			rp->fetchers = f;
		}
	}
	repl_fetchers_kick(rp); /* partitions added to a busy fetcher join its next Fetch */
	free(need.ids);
}

void repl_fetchers_kick(struct repl *rp)
{
	for (struct repl_fetcher *f = rp->fetchers; f; f = f->next)
		fetcher_send(f);
}

void repl_fetchers_free(struct repl *rp)
{
	while (rp->fetchers) {
		struct repl_fetcher *f = rp->fetchers;

		rp->fetchers = f->next;
		fetcher_free(f);
	}
}
