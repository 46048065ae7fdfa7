/*
 * txn_send.c - WriteTxnMarkers (v0) to the leaders of partitions on other
 * brokers, on behalf of the transaction coordinator (txn_send.h).
 */
#include "broker/txn_send.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/broker.h"
#include "cluster/cluster.h"
#include "coord/txn.h"
#include "log/marker.h"
#include "net/client.h"
#include "proto/header.h"
#include "proto/kerr.h"
#include "proto_msgs.h"
#include "util/log.h"

#define TXN_SEND_VERSION 0 /* not flexible: the answer is read by hand below */

/* One marker for one partition, queued or in flight. */
struct ts_entry {
	char *id; /* the transactional id, id_len bytes (may hold NUL) */
	int32_t id_len;
	struct marker m;
	char *topic;
	int32_t partition;
	struct ts_entry *next;
};

/* One destination broker. */
struct ts_dest {
	struct txn_send *ts;
	int32_t id;
	struct nclient *nc;
	struct ts_entry *queue, **tail; /* waiting for the next request */
	struct ts_entry *inflight;      /* in the request sent, in its order */
	int32_t corr;
	struct ts_dest *next;
};

struct txn_send {
	struct broker *b;
	struct ts_dest *dests;
	int32_t next_corr;
};

static void ts_entry_free(struct ts_entry *e)
{
	free(e->id);
	free(e->topic);
	free(e);
}

static void ts_list_free(struct ts_entry *list)
{
	for (struct ts_entry *e = list, *next; e; e = next) {
		next = e->next;
		ts_entry_free(e);
	}
}

/* Reports and frees every entry of list. */
static void ts_report_all(struct txn_send *ts, struct ts_entry *list, int16_t err)
{
	for (struct ts_entry *e = list, *next; e; e = next) {
		next = e->next;
		if (ts->b->txns)
			txn_coord_on_marker_sent(ts->b->txns, (struct kstr){ e->id, e->id_len }, e->m.producer_id,
						 e->topic, e->partition, err);
		ts_entry_free(e);
	}
}

/* Sends what is queued as one request, if nothing is in flight and the connection is up. */
static void ts_flush(struct ts_dest *d)
{
	struct WriteTxnMarkersRequest req;
	struct WriteTxnMarkersRequestMarker *mk;
	struct WriteTxnMarkersRequestTopic *tp;
	char client_id[40];
	struct wr w;
	int32_t n = 0, i = 0;
	size_t at;
	int rc;

	if (d->inflight || !d->queue || !nclient_up(d->nc))
		return;
	for (struct ts_entry *e = d->queue; e; e = e->next)
		n++;
	mk = calloc((size_t)n, sizeof(*mk));
	tp = calloc((size_t)n, sizeof(*tp));
	if (!mk || !tp)
		goto out;
	for (struct ts_entry *e = d->queue; e; e = e->next, i++) {
		tp[i] = (struct WriteTxnMarkersRequestTopic){ kstr_c(e->topic), { &e->partition, 1 } };
		mk[i] = (struct WriteTxnMarkersRequestMarker){
			e->m.producer_id, e->m.producer_epoch, e->m.commit, { &tp[i], 1 }, e->m.coordinator_epoch
		};
	}
	req.Markers = (struct WriteTxnMarkersRequestMarker_array){ mk, n };
	snprintf(client_id, sizeof(client_id), "txn-coordinator-%d", d->ts->b->node_id);
	wr_init(&w);
	d->corr = d->ts->next_corr++ & 0x7fffffff;
	at = header_write_request(&w, API_WriteTxnMarkers, TXN_SEND_VERSION, d->corr, kstr_c(client_id));
	WriteTxnMarkersRequest_encode(&w, TXN_SEND_VERSION, &req);
	wr_patch_i32(&w, at, (int32_t)(wr_total(&w) - (int64_t)at - 4));
	rc = w.err ? -ENOMEM : nclient_send(d->nc, &w);
	wr_release(&w);
	if (!rc) { /* the queue is now in flight */
		d->inflight = d->queue;
		d->queue = NULL;
		d->tail = &d->queue;
	}
out:
	free(mk);
	free(tp);
}

static void ts_on_state(void *arg, bool up)
{
	struct ts_dest *d = arg;
	struct ts_entry *lost = d->inflight, *queued = d->queue;

	if (up) {
		ts_flush(d);
		return;
	}
	d->inflight = d->queue = NULL; /* the leaders may have moved: the coordinator looks them up again */
	d->tail = &d->queue;
	ts_report_all(d->ts, lost, KERR_NETWORK_EXCEPTION);
	ts_report_all(d->ts, queued, KERR_NETWORK_EXCEPTION);
}

/* The answer for one entry: its partition's error code, read in request order. */
static int16_t ts_read_one(struct rd *r)
{
	int16_t err = KERR_NETWORK_EXCEPTION;
	int32_t ntopics, nparts;

	rd_i64(r);
	ntopics = rd_count(r, rd_i32(r), 6, false);
	for (int32_t t = 0; !r->err && t < ntopics; t++) {
		rd_kstr16(r);
		nparts = rd_count(r, rd_i32(r), 6, false);
		for (int32_t p = 0; !r->err && p < nparts; p++) {
			rd_i32(r);
			err = rd_i16(r);
		}
	}
	return r->err ? KERR_NETWORK_EXCEPTION : err;
}

static void ts_on_frame(void *arg, const uint8_t *frame, int32_t len)
{
	struct ts_dest *d = arg;
	struct ts_entry *list = d->inflight;
	struct rd r;
	int32_t n;

	rd_init(&r, frame, (size_t)len);
	if (!list || rd_i32(&r) != d->corr)
		return;
	d->inflight = NULL;
	n = rd_count(&r, rd_i32(&r), 12, false);
	for (int32_t i = 0; list; i++) {
		struct ts_entry *e = list;
		int16_t err = !r.err && i < n ? ts_read_one(&r) : KERR_NETWORK_EXCEPTION;

		list = e->next;
		e->next = NULL;
		if (err)
			log_debug(LOGC_TXN, "txn", "WriteTxnMarkers to broker %d: '%s-%d': %s", d->id, e->topic,
				  e->partition, kerr_name(err));
		ts_report_all(d->ts, e, err);
	}
	ts_flush(d);
}

static struct ts_dest *ts_dest_get(struct txn_send *ts, int32_t id)
{
	const struct cluster_broker *v;
	struct nclient_cfg cfg = { .out_max = 64 << 20, .frame_max = 64 << 20, .sec = ts->b->inter_sec };
	struct ts_dest *d;
	int n = ts->b->cluster ? cluster_brokers(ts->b->cluster, &v) : 0, i;

	for (d = ts->dests; d; d = d->next)
		if (d->id == id)
			return d;
	for (i = 0; i < n && v[i].id != id; i++)
		;
	if (i == n || !(d = calloc(1, sizeof(*d))))
		return NULL;
	cfg.host = v[i].inter_host;
	cfg.port = v[i].inter_port;
	cfg.on_state = ts_on_state;
	cfg.on_frame = ts_on_frame;
	cfg.arg = d;
	d->ts = ts;
	d->id = id;
	d->tail = &d->queue;
	if (nclient_new(ts->b->loop, &cfg, &d->nc)) {
		free(d);
		return NULL;
	}
	d->next = ts->dests;
	ts->dests = d;
	return d;
}

int txn_send_marker(struct txn_send *ts, int32_t leader, struct kstr id, const struct marker *m, const char *topic,
		    int32_t partition)
{
	struct ts_dest *d = ts_dest_get(ts, leader);
	struct ts_entry *e;

	if (!d)
		return -ENOENT;
	e = calloc(1, sizeof(*e));
	if (!e || !(e->id = malloc((size_t)id.len + 1)) || !(e->topic = strdup(topic))) {
		if (e)
			ts_entry_free(e);
		return -ENOMEM;
	}
	memcpy(e->id, id.p, (size_t)id.len);
	e->id[id.len] = '\0';
	e->id_len = id.len;
	e->m = *m;
	e->partition = partition;
	*d->tail = e;
	d->tail = &e->next;
	ts_flush(d);
	return 0;
}

int txn_send_new(struct broker *b, struct txn_send **out)
{
	struct txn_send *ts = calloc(1, sizeof(*ts));

	if (!ts)
		return -ENOMEM;
	ts->b = b;
	*out = ts;
	return 0;
}

void txn_send_free(struct txn_send *ts)
{
	if (!ts)
		return;
	while (ts->dests) {
		struct ts_dest *d = ts->dests;

		ts->dests = d->next;
		nclient_free(d->nc);
		ts_list_free(d->inflight);
		ts_list_free(d->queue);
		free(d);
	}
	free(ts);
}
