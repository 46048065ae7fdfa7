/*
 * txn_verify.c - KIP-890 verification of transactional Produce batches
 * with the transaction coordinator, here or on another broker
 * (txn_verify.h).
 *
 * A request that asked another broker waits in a FIFO of waits (struct
 * tv_wait).  Each question (struct tv_ask, one partition) sits in its
 * coordinator's queue, then in the one request in flight there, and once
 * answered in its wait's list of verdicts.  A wait that times out leaves
 * its questions behind: those still queued are dropped, those in flight
 * are answered into nothing.  Everything runs on the event loop; the
 * state is this file's, as there is one loop.
 */
#include "broker/txn_verify.h"

#include <assert.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/broker.h"
#include "cluster/mcache.h"
#include "coord/coord_topic.h"
#include "coord/txn.h"
#include "coord/txn_store.h"
#include "net/client.h"
#include "proto/header.h"
#include "proto/kerr.h"
#include "proto_msgs.h"
#include "util/clock.h"
#include "util/log.h"

#define TV_VERSION 4            /* AddPartitionsToTxn with VerifyOnly (KIP-890) */
#define TV_TIMEOUT_MS 30000     /* Kafka's request.timeout.ms for the inter-broker request */
#define TV_WAITS_MAX 4096       /* requests waiting at once; more are answered NOT_ENOUGH_REPLICAS */
#define TV_FRAME_MAX (16 << 20) /* largest answer read */
#define TV_OUT_MAX (16 << 20)   /* bytes buffered per coordinator connection */

struct tv_wait;

/* One partition asked about: queued, in flight, or answered (in its wait's verdicts). */
struct tv_ask {
	struct tv_wait *w; /* NULL once its request stopped waiting (still in flight) */
	char *id;          /* the transactional id, id_len bytes */
	int32_t id_len;
	int64_t producer_id;
	int16_t producer_epoch;
	char *topic;
	int32_t partition;
	int16_t err; /* the coordinator's verdict, once answered */
	struct tv_ask *next;
};

/* One request waiting for its answers. */
struct tv_wait {
	struct req *rq;
	int pending;          /* asks not answered yet */
	struct tv_ask *done;  /* answered asks */
	struct tv_wait *next; /* in arrival order */
};

/* One coordinator broker. */
struct tv_dest {
	int32_t id;
	char host[256]; /* its endpoint when connected */
	int32_t port;
	struct nclient *nc;
	struct tv_ask *queue, **tail; /* waiting for the next request */
	struct tv_ask *inflight;      /* in the request sent */
	int32_t corr;
	struct tv_dest *next;
};

static struct {
	struct broker *b;
	struct tv_dest *dests;
	struct tv_wait *waits; /* FIFO */
	int nwaits;
	struct tv_wait *asking;  /* the wait of the request being handled for the first time */
	struct tv_wait *running; /* the wait whose request runs again now */
	int32_t next_corr;
} tv;

int16_t txn_verify_kerr(int16_t coordinator_err)
{
	switch (coordinator_err) { /* Kafka's mapping for the producer (AddPartitionsToTxnManager, ReplicaManager) */
	case KERR_PRODUCER_FENCED:
		return KERR_INVALID_PRODUCER_EPOCH;
	case KERR_CLUSTER_AUTHORIZATION_FAILED: /* the leader may not ask: not verified */
		return KERR_INVALID_TXN_STATE;
	case KERR_CONCURRENT_TRANSACTIONS:
	case KERR_COORDINATOR_NOT_AVAILABLE:
	case KERR_COORDINATOR_LOAD_IN_PROGRESS:
	case KERR_NOT_COORDINATOR:
	case KERR_NETWORK_EXCEPTION:
		return KERR_NOT_ENOUGH_REPLICAS; /* retriable without a metadata refresh */
	default:
		return coordinator_err;
	}
}

static void tv_ask_free(struct tv_ask *a)
{
	free(a->id);
	free(a->topic);
	free(a);
}

static void tv_list_free(struct tv_ask *list)
{
	for (struct tv_ask *a = list, *next; a; a = next) {
		next = a->next;
		tv_ask_free(a);
	}
}

/*
 * Where id's coordinator is: 0 here (a single node, or this broker leads
 * id's partition of __transaction_state), 1 on broker *node, or
 * COORDINATOR_NOT_AVAILABLE (negated) while nobody leads it.
 */
static int tv_where(const struct broker *b, struct kstr id, int32_t *node)
{
	const struct mcache_topic *mt;

	if (!b->cluster || !b->mcache)
		return 0;
	mt = mcache_topic(b->mcache, TXN_STORE_TOPIC, (int32_t)strlen(TXN_STORE_TOPIC));
	if (!mt || mt->nparts < 1 || (*node = mt->parts[coord_partition_for(id, mt->nparts)].leader) < 0)
		return -KERR_COORDINATOR_NOT_AVAILABLE;
	return *node != b->node_id;
}

/* The local coordinator's verdict (what it answers AddPartitionsToTxn v4 VerifyOnly with). */
static int16_t tv_local(const struct broker *b, struct kstr id, int64_t producer_id, int16_t producer_epoch,
			struct kstr topic, int32_t partition)
{
	if (!b->txns || !txn_coord_attached(b->txns)) /* a single node: no transaction was ever started here */
		return b->cluster ? KERR_COORDINATOR_NOT_AVAILABLE : KERR_INVALID_PRODUCER_ID_MAPPING;
	return txn_verify_partition(b->txns, id, producer_id, producer_epoch, topic, partition);
}

/* ---- the request to a coordinator and its answer ---- */

/* Index of the transaction ask a belongs to among the first n of txns, -1 if none; -2 if its id is there for another producer epoch. */
static int32_t tv_group_of(const struct AddPartitionsToTxnTransaction *txns, int32_t n, const struct tv_ask *a)
{
	for (int32_t g = 0; g < n; g++) {
		if (!kstr_eq(txns[g].TransactionalId, (struct kstr){ a->id, a->id_len }))
			continue;
		return txns[g].ProducerId == a->producer_id && txns[g].ProducerEpoch == a->producer_epoch ? g : -2;
	}
	return -1;
}

/*
 * The queued asks as one request's transactions (calloc'd: *txns, *topics;
 * gidx[i] the transaction of the i-th ask, -2 for an ask left for the next
 * request: its id is there with another producer or epoch, and the answer
 * is matched by id).  Returns the number of transactions.
 */
static int32_t tv_build(struct tv_dest *d, struct AddPartitionsToTxnTransaction *txns,
			struct AddPartitionsToTxnTransactionTopic *topics, int32_t *gidx)
{
	int32_t ntxns = 0, i = 0, at = 0;

	for (struct tv_ask *a = d->queue; a; a = a->next, i++) {
		int32_t g = tv_group_of(txns, ntxns, a);

		if (g == -1) {
			g = ntxns++;
			AddPartitionsToTxnTransaction_init(&txns[g]);
			txns[g].TransactionalId = (struct kstr){ a->id, a->id_len };
			txns[g].ProducerId = a->producer_id;
			txns[g].ProducerEpoch = a->producer_epoch;
			txns[g].VerifyOnly = true;
		}
		gidx[i] = g;
		if (g >= 0)
			txns[g].Topics.n++;
	}
	for (int32_t g = 0; g < ntxns; g++) { /* each transaction's topics side by side */
		txns[g].Topics.v = topics + at;
		at += txns[g].Topics.n;
		txns[g].Topics.n = 0;
	}
	i = 0;
	for (struct tv_ask *a = d->queue; a; a = a->next, i++)
		if (gidx[i] >= 0)
			txns[gidx[i]].Topics.v[txns[gidx[i]].Topics.n++] =
				(struct AddPartitionsToTxnTransactionTopic){ kstr_c(a->topic), { &a->partition, 1 } };
	return ntxns;
}

/* Moves the asks of the request just sent (gidx >= 0) from the queue to the in-flight list. */
static void tv_move_sent(struct tv_dest *d, const int32_t *gidx)
{
	struct tv_ask **pp = &d->queue, **in = &d->inflight;
	int32_t i = 0;

	while (*pp) {
		struct tv_ask *a = *pp;

		if (gidx[i++] < 0) {
			pp = &a->next;
			continue;
		}
		*pp = a->next;
		a->next = NULL;
		*in = a;
		in = &a->next;
	}
	d->tail = pp;
}

/* Sends what is queued as one request, if nothing is in flight and the connection is up. */
static void tv_flush(struct tv_dest *d)
{
	struct AddPartitionsToTxnRequest req;
	struct AddPartitionsToTxnTransaction *txns;
	struct AddPartitionsToTxnTransactionTopic *topics;
	int32_t *gidx, n = 0;
	char client_id[40];
	struct wr w;
	size_t at;

	if (d->inflight || !d->queue || !nclient_up(d->nc))
		return;
	for (struct tv_ask *a = d->queue; a; a = a->next)
		n++;
	txns = calloc((size_t)n, sizeof(*txns));
	topics = calloc((size_t)n, sizeof(*topics));
	gidx = calloc((size_t)n, sizeof(*gidx));
	if (!txns || !topics || !gidx)
		goto out; /* tried again at the next ask or answer */
	AddPartitionsToTxnRequest_init(&req);
	req.Transactions = (struct AddPartitionsToTxnTransaction_array){ txns, tv_build(d, txns, topics, gidx) };
	snprintf(client_id, sizeof(client_id), "broker-%d-txn-verification", tv.b->node_id);
	wr_init(&w);
	d->corr = tv.next_corr++ & 0x7fffffff;
	at = header_write_request(&w, API_AddPartitionsToTxn, TV_VERSION, d->corr, kstr_c(client_id));
	AddPartitionsToTxnRequest_encode(&w, TV_VERSION, &req);
	wr_patch_i32(&w, at, (int32_t)(wr_total(&w) - (int64_t)at - 4));
	if (!w.err && !nclient_send(d->nc, &w)) {
		log_debug(LOGC_TXN, "txn", "verification of %d transaction(s) sent to broker %d", req.Transactions.n,
			  d->id);
		tv_move_sent(d, gidx);
	}
	wr_release(&w);
out:
	free(txns);
	free(topics);
	free(gidx);
}

/* Records the verdict err of a (answered, off every list), for its wait if it still has one. */
static void tv_answer(struct tv_ask *a, int16_t err)
{
	struct tv_wait *w = a->w;

	if (!w) {
		tv_ask_free(a);
		return;
	}
	a->err = err;
	a->next = w->done;
	w->done = a;
	w->pending--;
}

/* The partition's code in resp for a, or NETWORK_EXCEPTION if the answer has none. */
static int16_t tv_result_of(const struct AddPartitionsToTxnResponse *resp, const struct tv_ask *a)
{
	if (resp->ErrorCode)
		return resp->ErrorCode;
	for (int32_t i = 0; i < resp->ResultsByTransaction.n; i++) {
		const struct AddPartitionsToTxnResult *r = &resp->ResultsByTransaction.v[i];

		if (!kstr_eq(r->TransactionalId, (struct kstr){ a->id, a->id_len }))
			continue;
		for (int32_t j = 0; j < r->TopicResults.n; j++) {
			const struct AddPartitionsToTxnTopicResult *t = &r->TopicResults.v[j];

			if (!kstr_eq_c(t->Name, a->topic))
				continue;
			for (int32_t k = 0; k < t->ResultsByPartition.n; k++)
				if (t->ResultsByPartition.v[k].PartitionIndex == a->partition)
					return t->ResultsByPartition.v[k].PartitionErrorCode;
		}
	}
	return KERR_NETWORK_EXCEPTION;
}

static void tv_run_ready(void);

/* Answers every ask of list with its result in resp (NULL: NETWORK_EXCEPTION). */
static void tv_answer_all(struct tv_ask *list, const struct AddPartitionsToTxnResponse *resp)
{
	for (struct tv_ask *a = list, *next; a; a = next) {
		next = a->next;
		a->next = NULL;
		tv_answer(a, resp ? tv_result_of(resp, a) : KERR_NETWORK_EXCEPTION);
	}
}

static void tv_on_frame(void *arg, const uint8_t *frame, int32_t len)
{
	struct tv_dest *d = arg;
	struct AddPartitionsToTxnResponse resp;
	struct tv_ask *list = d->inflight;
	struct arena ar;
	struct rd r;
	int32_t corr;
	bool ok;

	rd_init(&r, frame, (size_t)len);
	if (!list || header_read_response(&r, API_AddPartitionsToTxn, TV_VERSION, &corr) || corr != d->corr)
		return; /* an answer to a request from before a reconnect */
	d->inflight = NULL;
	arena_init(&ar, 0);
	AddPartitionsToTxnResponse_init(&resp);
	ok = !AddPartitionsToTxnResponse_decode(&r, &ar, TV_VERSION, &resp);
	if (!ok)
		log_warn("verification answer of broker %d malformed", d->id);
	tv_answer_all(list, ok ? &resp : NULL);
	arena_release(&ar);
	tv_flush(d);
	tv_run_ready();
}

static void tv_on_state(void *arg, bool up)
{
	struct tv_dest *d = arg;
	struct tv_ask *lost = d->inflight, *queued = d->queue;

	if (up) {
		tv_flush(d);
		return;
	}
	d->inflight = d->queue = NULL; /* retriable for the producer: the coordinator may have moved */
	d->tail = &d->queue;
	tv_answer_all(lost, NULL);
	tv_answer_all(queued, NULL);
	tv_run_ready();
}

/*
 * The connection to broker id, made on first use, and made again if the
 * broker registered another endpoint (only when idle, and not from a
 * re-run, which may be inside one of its callbacks); NULL if it is not
 * registered.
 */
static struct tv_dest *tv_dest_get(int32_t id)
{
	struct nclient_cfg cfg = { .out_max = TV_OUT_MAX, .frame_max = TV_FRAME_MAX, .sec = tv.b->inter_sec };
	struct tv_dest *d, **pp;

	if (!broker_endpoint_inter(tv.b, id, &cfg.host, &cfg.port) || strlen(cfg.host) >= sizeof(d->host))
		return NULL;
	for (pp = &tv.dests; (d = *pp) != NULL; pp = &d->next) {
		if (d->id != id)
			continue;
		if (tv.running || d->inflight || d->queue || (d->port == cfg.port && !strcmp(d->host, cfg.host)))
			return d;
		*pp = d->next; /* moved: made again below */
		nclient_free(d->nc);
		free(d);
		break;
	}
	if (!(d = calloc(1, sizeof(*d))))
		return NULL;
	cfg.on_state = tv_on_state;
	cfg.on_frame = tv_on_frame;
	cfg.arg = d;
	d->id = id;
	strcpy(d->host, cfg.host);
	d->port = cfg.port;
	d->tail = &d->queue;
	if (nclient_new(tv.b->loop, &cfg, &d->nc)) {
		free(d);
		return NULL;
	}
	d->next = tv.dests;
	tv.dests = d;
	return d;
}

/* ---- waiting requests ---- */

static void tv_wait_free(struct tv_wait *w)
{
	tv_list_free(w->done);
	free(w);
}

/* w stops waiting: its queued asks are dropped, those in flight answered into nothing. */
static void tv_detach(struct tv_wait *w)
{
	for (struct tv_dest *d = tv.dests; d; d = d->next) {
		struct tv_ask **pp = &d->queue;

		for (struct tv_ask *a = d->inflight; a; a = a->next)
			if (a->w == w)
				a->w = NULL;
		while (*pp) {
			struct tv_ask *a = *pp;

			if (a->w != w) {
				pp = &a->next;
				continue;
			}
			*pp = a->next;
			tv_ask_free(a);
		}
		d->tail = pp;
	}
	w->pending = 0;
}

/* True if a wait before w in the FIFO is of the same connection (its request runs first). */
static bool tv_behind(const struct tv_wait *w)
{
	for (const struct tv_wait *o = tv.waits; o != w; o = o->next)
		if (o->rq->c == w->rq->c)
			return true;
	return false;
}

/* Takes w out of the FIFO and runs its request again from the start, with its verdicts. */
static void tv_rerun(struct tv_wait *w)
{
	struct req *rq = w->rq;
	struct tv_wait **pp = &tv.waits;

	while (*pp != w)
		pp = &(*pp)->next;
	*pp = w->next;
	tv.nwaits--;
	loop_timer_cancel(rq->b->loop, &rq->timer);
	tv.running = w;
	req_reset_out(rq);
	req_run_handler(rq, api_table[rq->hdr.api_key].handler);
	tv.running = NULL;
	tv_wait_free(w);
}

/* Runs again every request whose answers are all in, in arrival order per connection. */
static void tv_run_ready(void)
{
	struct tv_wait *w = tv.waits;

	if (tv.running)
		return; /* a re-run's own asks or answers: the outer call goes on */
	while (w) {
		if (w->pending || tv_behind(w)) {
			w = w->next;
			continue;
		}
		tv_rerun(w);
		w = tv.waits; /* the FIFO changed */
	}
}

static void tv_timed_out(struct loop_timer *t)
{
	struct req *rq = (struct req *)((char *)t - offsetof(struct req, timer));

	for (struct tv_wait *w = tv.waits; w; w = w->next)
		if (w->rq == rq && w->pending) {
			log_debug(LOGC_TXN, "txn", "%s: transaction verification timed out", conn_peer(rq->c));
			tv_detach(w); /* its partitions without a verdict get NOT_ENOUGH_REPLICAS */
		}
	tv_run_ready();
}

/* ---- the API ---- */

void txn_verify_ask(struct req *rq, struct kstr txn_id, int64_t producer_id, int16_t producer_epoch, struct kstr topic,
		    int32_t partition)
{
	struct broker *b = rq->b;
	struct tv_dest *d;
	struct tv_ask *a;
	int32_t node = -1;

	if (!b->cfg.transaction_partition_verification_enable || !txn_id.p || (tv.running && tv.running->rq == rq) ||
	    tv_where(b, txn_id, &node) != 1)
		return; /* answered without asking (txn_verify_produce) */
	tv.b = b;
	if (!tv.asking && (tv.nwaits >= TV_WAITS_MAX || !(tv.asking = calloc(1, sizeof(*tv.asking)))))
		return; /* NOT_ENOUGH_REPLICAS: retried */
	tv.asking->rq = rq;
	if (!(d = tv_dest_get(node)))
		return; /* not registered (yet): NOT_ENOUGH_REPLICAS */
	a = calloc(1, sizeof(*a));
	if (!a || !(a->id = malloc((size_t)txn_id.len + 1)) || !(a->topic = malloc((size_t)topic.len + 1))) {
		if (a)
			tv_ask_free(a);
		return;
	}
	memcpy(a->id, txn_id.p, (size_t)txn_id.len);
	a->id_len = txn_id.len;
	memcpy(a->topic, topic.p, (size_t)topic.len);
	a->topic[topic.len] = '\0';
	a->producer_id = producer_id;
	a->producer_epoch = producer_epoch;
	a->partition = partition;
	a->w = tv.asking;
	tv.asking->pending++;
	*d->tail = a;
	d->tail = &a->next;
}

int txn_verify_wait(struct req *rq, int32_t timeout_ms)
{
	struct tv_wait *w = tv.asking, **pp = &tv.waits;

	if (!w)
		return H_REPLY;
	assert(w->rq == rq);
	tv.asking = NULL;
	while (*pp)
		pp = &(*pp)->next;
	*pp = w;
	tv.nwaits++;
	if (timeout_ms <= 0 || timeout_ms > TV_TIMEOUT_MS)
		timeout_ms = TV_TIMEOUT_MS;
	if (!w->pending)
		timeout_ms = 0; /* nothing could be asked (no connection): it runs again at once */
	rq->timer.fn = tv_timed_out;
	loop_timer_set(rq->b->loop, &rq->timer, clock_mono_ms() + timeout_ms);
	for (struct tv_dest *d = tv.dests; d; d = d->next)
		tv_flush(d);
	return H_PARKED;
}

int16_t txn_verify_produce(struct req *rq, struct kstr txn_id, int64_t producer_id, int16_t producer_epoch,
			   struct kstr topic, int32_t partition)
{
	const struct broker *b = rq->b;
	int32_t node = -1;
	int where;

	if (!txn_id.p)
		return KERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED; /* as Kafka: transactional records need the id */
	if (!b->cfg.transaction_partition_verification_enable)
		return KERR_NONE;
	where = tv_where(b, txn_id, &node);
	if (where < 0)
		return txn_verify_kerr((int16_t)-where);
	if (where == 0)
		return txn_verify_kerr(tv_local(b, txn_id, producer_id, producer_epoch, topic, partition));
	for (const struct tv_ask *a = tv.running && tv.running->rq == rq ? tv.running->done : NULL; a; a = a->next)
		if (a->producer_id == producer_id && a->producer_epoch == producer_epoch && a->partition == partition &&
		    kstr_eq_c(topic, a->topic) && kstr_eq(txn_id, (struct kstr){ a->id, a->id_len }))
			return txn_verify_kerr(a->err);
	return KERR_NOT_ENOUGH_REPLICAS; /* not asked (too many waiting) or no answer in time: retried */
}

void txn_verify_stop(struct broker *b)
{
	while (tv.waits) {
		struct tv_wait *w = tv.waits;

		tv.waits = w->next;
		loop_timer_cancel(b->loop, &w->rq->timer);
		req_noreply(w->rq);
		tv_wait_free(w);
	}
	tv.nwaits = 0;
	while (tv.dests) {
		struct tv_dest *d = tv.dests;

		tv.dests = d->next;
		nclient_free(d->nc);
		tv_list_free(d->inflight);
		tv_list_free(d->queue);
		free(d);
	}
}
