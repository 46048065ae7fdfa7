/*
 * cshut.c - a ControlledShutdown (v3) to the controller before a clean
 * shutdown (cshut.h).  One request, one bounded wait: the controller
 * answers at once (the partitions this broker leads that have no other
 * live ISR member, which go offline; the others move to another ISR
 * member), so the bound only guards against a controller that is gone or
 * stuck.  The answer comes before the controller's pass has written those
 * partitions' states, so after it the broker waits (same bound) until the
 * UpdateMetadata that follows shows it leading none of them: then their
 * new leaders (or leader -1) are in ZooKeeper before the registration
 * goes, and clients retrying find the new leader.  That wait is one retry backoff at most: a
 * controller that lost its place answers but writes nothing.
 */
#include "broker/cshut.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "broker/broker.h"
#include "cluster/cluster.h"
#include "cluster/mcache.h"
#include "net/client.h"
#include "net/loop.h"
#include "proto/header.h"
#include "proto/kerr.h"
#include "proto_msgs.h"
#include "util/arena.h"
#include "util/buf.h"
#include "util/clock.h"
#include "util/log.h"

#define CSHUT_VERSION 3
#define CSHUT_CORR 1
#define CSHUT_POLL_MS 20

static struct {
	struct broker *b;
	void (*done)(struct broker *b);
	struct nclient *nc;
	struct loop_timer timer;
	int32_t controller;
	int64_t t0;
	int64_t deadline;
	bool answered; /* waiting for the metadata cache to show no partition led here */
	bool running;
} cshut;

static void cshut_end(void)
{
	if (!cshut.running)
		return;
	cshut.running = false;
	loop_timer_cancel(cshut.b->loop, &cshut.timer);
	cshut.done(cshut.b);
}

/* True while the metadata cache has a partition led by this broker. */
static bool cshut_leads(const struct broker *b)
{
	const struct mcache *mc = b->mcache;

	for (int t = 0; mc && t < mc->ntopics; t++)
		for (int32_t p = 0; p < mc->topics[t].nparts; p++)
			if (mc->topics[t].parts[p].leader == b->node_id)
				return true;
	return false;
}

static int cshut_send(struct broker *b, const struct cluster_broker *cb);
static const struct cluster_broker *cshut_controller(struct broker *b, int32_t id);

/*
 * No answer yet and another broker is controller now (the one asked went
 * away): ask the new one (this broker itself included), as Kafka's broker
 * retries with the controller it finds; while none is elected, wait.
 * False if this broker is the last one: its partitions cannot move.
 */
static bool cshut_follow_controller(void)
{
	struct broker *b = cshut.b;
	int32_t now = cluster_controller_id(b->cluster);
	const struct cluster_broker *bs, *cb;
	int live = cluster_brokers(b->cluster, &bs);

	if (now == cshut.controller || now < 0)
		return true; /* the same, or an election under way */
	cb = now != b->node_id || live > 1 ? cshut_controller(b, now) : NULL;
	nclient_free(cshut.nc);
	cshut.nc = NULL;
	if (!cb || cshut_send(b, cb)) {
		log_info("controlled shutdown: controller %d went away and no other broker can take the partitions; "
			 "shutting down without it",
			 cshut.controller);
		return false;
	}
	log_info("controlled shutdown: controller %d went away; asking controller %d", cshut.controller, now);
	cshut.controller = now;
	return true;
}

static void cshut_on_timer(struct loop_timer *t)
{
	(void)t;
	if (!cshut.answered && clock_mono_ms() < cshut.deadline) {
		if (cshut_follow_controller())
			loop_timer_set(cshut.b->loop, &cshut.timer, clock_mono_ms() + CSHUT_POLL_MS);
		else
			cshut_end();
		return;
	}
	if (cshut.answered && !cshut_leads(cshut.b)) {
		log_info("controlled shutdown: leading no partition after %lld ms",
			 (long long)(clock_mono_ms() - cshut.t0));
		cshut_end();
		return;
	}
	if (cshut.answered && clock_mono_ms() < cshut.deadline) {
		loop_timer_set(cshut.b->loop, &cshut.timer, clock_mono_ms() + CSHUT_POLL_MS);
		return;
	}
	log_warn("controlled shutdown: %s within %lld ms; shutting down",
		 cshut.answered ? "partitions still led here" : "no answer from the controller",
		 (long long)(clock_mono_ms() - cshut.t0));
	cshut_end();
}

static void cshut_on_state(void *arg, bool up)
{
	(void)arg;
	if (!up && cshut.running)
		log_warn("controlled shutdown: connection to controller %d lost; trying again", cshut.controller);
}

static void cshut_on_frame(void *arg, const uint8_t *frame, int32_t len)
{
	struct ControlledShutdownResponse resp;
	struct arena a;
	struct rd r;
	int32_t corr;

	(void)arg;
	if (!cshut.running || cshut.answered)
		return;
	rd_init(&r, frame, (size_t)len);
	arena_init(&a, (size_t)len * 4 + 4096);
	if (header_read_response(&r, API_ControlledShutdown, CSHUT_VERSION, &corr) || corr != CSHUT_CORR ||
	    ControlledShutdownResponse_decode(&r, &a, CSHUT_VERSION, &resp))
		log_warn("controlled shutdown: unreadable answer from controller %d", cshut.controller);
	else if (resp.ErrorCode)
		log_warn("controlled shutdown: controller %d answered %s", cshut.controller, kerr_name(resp.ErrorCode));
	else
		cshut.answered = true;
	if (cshut.answered)
		log_info("controlled shutdown: controller %d answered in %lld ms, %d remaining partitions",
			 cshut.controller, (long long)(clock_mono_ms() - cshut.t0), (int)resp.RemainingPartitions.n);
	arena_release(&a);
	if (cshut.answered) { /* the cache's wait: one backoff at most (a controller that cannot write) */
		int64_t until = clock_mono_ms() + cshut.b->cfg.controlled_shutdown_retry_backoff_ms;

		cshut.deadline = until < cshut.deadline ? until : cshut.deadline;
		cshut_on_timer(&cshut.timer);
	} /* ends now, or polls until the cache shows the partitions moved */
	else
		cshut_end();
}

/* The registered endpoint of the controller, or NULL. */
static const struct cluster_broker *cshut_controller(struct broker *b, int32_t id)
{
	const struct cluster_broker *bs;
	int n = cluster_brokers(b->cluster, &bs);

	for (int i = 0; i < n; i++)
		if (bs[i].id == id)
			return &bs[i];
	return NULL;
}

/* Queues the request on a connection to cb.  0 or -errno. */
static int cshut_send(struct broker *b, const struct cluster_broker *cb)
{
	struct ControlledShutdownRequest req = { .BrokerId = b->node_id,
						 .BrokerEpoch = cluster_broker_epoch(b->cluster) };
	struct nclient_cfg cfg = { .host = cb->inter_host,
				   .port = cb->inter_port,
				   .sec = b->inter_sec,
				   .out_max = 1 << 20,
				   .frame_max = 64 << 20,
				   .on_state = cshut_on_state,
				   .on_frame = cshut_on_frame };
	char client_id[32];
	struct wr w;
	size_t at;
	int err = nclient_new(b->loop, &cfg, &cshut.nc);

	if (err)
		return err;
	snprintf(client_id, sizeof(client_id), "broker-%d", b->node_id);
	wr_init(&w);
	at = header_write_request(&w, API_ControlledShutdown, CSHUT_VERSION, CSHUT_CORR, kstr_c(client_id));
	ControlledShutdownRequest_encode(&w, CSHUT_VERSION, &req);
	wr_patch_i32(&w, at, (int32_t)(wr_total(&w) - (int64_t)at - 4));
	err = w.err ? -ENOMEM : nclient_send(cshut.nc, &w);
	wr_release(&w);
	return err;
}

bool cshut_start(struct broker *b, void (*done)(struct broker *b))
{
	const struct cluster_broker *cb;
	int64_t bound = (int64_t)b->cfg.controlled_shutdown_max_retries * b->cfg.controlled_shutdown_retry_backoff_ms;

	if (cshut.running || cshut.nc || !b->cluster || !b->cfg.controlled_shutdown_enable)
		return false;
	cshut.controller = cluster_controller_id(b->cluster);
	cb = cshut.controller >= 0 ? cshut_controller(b, cshut.controller) : NULL;
	if (!cb || bound <= 0) {
		log_info("controlled shutdown: no controller reachable; shutting down without it");
		return false;
	}
	if (cshut_send(b, cb)) {
		log_warn("controlled shutdown: cannot send to controller %d; shutting down without it",
			 cshut.controller);
		cshut_stop();
		return false;
	}
	cshut.b = b;
	cshut.done = done;
	cshut.t0 = clock_mono_ms();
	cshut.deadline = cshut.t0 + bound;
	cshut.answered = false;
	cshut.running = true;
	loop_timer_init(&cshut.timer, cshut_on_timer);
	loop_timer_set(b->loop, &cshut.timer, clock_mono_ms() + CSHUT_POLL_MS);
	log_info("controlled shutdown: asking controller %d (%s:%d), broker epoch %lld, waiting up to %lld ms",
		 cshut.controller, cb->inter_host, cb->inter_port, (long long)cluster_broker_epoch(b->cluster),
		 (long long)bound);
	return true;
}

void cshut_stop(void)
{
	if (cshut.running)
		loop_timer_cancel(cshut.b->loop, &cshut.timer);
	cshut.running = false;
	nclient_free(cshut.nc);
	cshut.nc = NULL;
}
