/*
 * channel.c - the controller's per-broker channels (channel.h).
 *
 * Each channel holds, per API key it sent, one encoded frame: waiting
 * (not yet written), in flight (written, answer awaited under its
 * correlation id) or done.  On a lost connection every in-flight frame
 * goes back to waiting and leaves again when the connection is up.
 */
#include "cluster/channel.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net/client.h"
#include "proto/header.h"
#include "proto/kerr.h"
#include "proto_msgs.h"
#include "util/log.h"

#define CHANNEL_APIS 3 /* LeaderAndIsr, StopReplica, UpdateMetadata */

enum chan_state { CH_NONE, CH_WAITING, CH_INFLIGHT };

struct chan_req {
	enum chan_state state;
	int16_t api_key, version;
	int32_t corr;
	struct wr frame;
};

struct chan {
	struct channel *ch;
	int32_t id;
	char host[ZNODE_HOST_MAX];
	int32_t port;
	struct nclient *nc;
	struct chan_req reqs[CHANNEL_APIS];
};

struct channel {
	struct loop *loop;
	int32_t self_id;
	const struct nclient_sec *sec;
	int32_t next_corr;
	struct chan **chans;
	int nchans;
};

static int chan_slot(int16_t api_key)
{
	return api_key == API_LeaderAndIsr ? 0 : api_key == API_StopReplica ? 1 : 2;
}

/* Writes every waiting request, LeaderAndIsr first (logs before metadata that points at them). */
static void chan_flush(struct chan *c)
{
	for (int i = 0; i < CHANNEL_APIS && nclient_up(c->nc); i++) {
		struct chan_req *r = &c->reqs[i];

		if (r->state != CH_WAITING)
			continue;
		if (nclient_send(c->nc, &r->frame) == 0)
			r->state = CH_INFLIGHT;
	}
}

static void chan_on_state(void *arg, bool up)
{
	struct chan *c = arg;

	for (int i = 0; i < CHANNEL_APIS; i++)
		if (c->reqs[i].state == CH_INFLIGHT)
			c->reqs[i].state = CH_WAITING;
	if (up)
		chan_flush(c);
}

static void chan_on_frame(void *arg, const uint8_t *frame, int32_t len)
{
	struct chan *c = arg;
	struct rd r;
	int32_t corr;

	rd_init(&r, frame, (size_t)len);
	corr = rd_i32(&r);
	for (int i = 0; i < CHANNEL_APIS; i++) {
		struct chan_req *q = &c->reqs[i];
		int16_t err;

		if (q->state != CH_INFLIGHT || q->corr != corr)
			continue;
		if (proto_is_flexible(q->api_key, q->version))
			rd_uvarint(&r); /* response header v1: an empty tagged-field section */
		err = rd_i16(&r);       /* every one of these responses starts with ErrorCode */
		if (err)
			log_warn("controller: broker %d answered %s with %s", c->id, proto_apis[q->api_key].name,
				 kerr_name(err));
		q->state = CH_NONE;
		wr_release(&q->frame);
		return;
	}
}

static struct chan *chan_open(struct channel *ch, const struct cluster_broker *b)
{
	struct chan *c = calloc(1, sizeof(*c));
	struct nclient_cfg cfg = {
		.host = b->inter_host,
		.port = b->inter_port,
		.sec = ch->sec,
		.out_max = 256 << 20,
		.frame_max = 64 << 20,
		.on_state = chan_on_state,
		.on_frame = chan_on_frame,
	};

	if (!c)
		return NULL;
	c->ch = ch;
	c->id = b->id;
	strcpy(c->host, b->inter_host);
	c->port = b->inter_port;
	cfg.arg = c;
	if (nclient_new(ch->loop, &cfg, &c->nc)) {
		log_error("controller: cannot open a channel to broker %d (%s:%d)", b->id, b->inter_host,
			  b->inter_port);
		free(c);
		return NULL;
	}
	return c;
}

static void chan_close(struct chan *c)
{
	nclient_free(c->nc);
	for (int i = 0; i < CHANNEL_APIS; i++)
		wr_release(&c->reqs[i].frame);
	free(c);
}

int channel_new(struct loop *loop, int32_t self_id, const struct nclient_sec *sec, struct channel **out)
{
	struct channel *ch = calloc(1, sizeof(*ch));

	if (!ch)
		return -ENOMEM;
	ch->loop = loop;
	ch->sec = sec;
	ch->self_id = self_id;
	ch->next_corr = 1;
	*out = ch;
	return 0;
}

void channel_reset(struct channel *ch)
{
	for (int i = 0; i < ch->nchans; i++)
		chan_close(ch->chans[i]);
	free(ch->chans);
	ch->chans = NULL;
	ch->nchans = 0;
}

void channel_free(struct channel *ch)
{
	if (!ch)
		return;
	channel_reset(ch);
	free(ch);
}

static struct chan *channel_find(struct channel *ch, int32_t id)
{
	for (int i = 0; i < ch->nchans; i++)
		if (ch->chans[i]->id == id)
			return ch->chans[i];
	return NULL;
}

void channel_set_brokers(struct channel *ch, const struct cluster_broker *b, int n)
{
	struct chan **next = calloc((size_t)(n > 0 ? n : 1), sizeof(*next));
	int k = 0;

	if (!next)
		return;
	for (int i = 0; i < n; i++) {
		struct chan *c = channel_find(ch, b[i].id);

		if (c && (strcmp(c->host, b[i].inter_host) || c->port != b[i].inter_port)) {
			c = NULL; /* re-registered elsewhere: the old channel goes below */
		}
		if (!c)
			c = chan_open(ch, &b[i]);
		else
			c->id = -1 - c->id; /* kept: hidden from the close loop below */
		if (c)
			next[k++] = c;
	}
	for (int i = 0; i < ch->nchans; i++)
		if (ch->chans[i]->id >= 0)
			chan_close(ch->chans[i]);
	for (int i = 0; i < k; i++)
		if (next[i]->id < 0)
			next[i]->id = -1 - next[i]->id;
	free(ch->chans);
	ch->chans = next;
	ch->nchans = k;
}

int channel_send(struct channel *ch, int32_t id, int16_t api_key, int16_t version, const void *msg)
{
	struct chan *c = channel_find(ch, id);
	struct chan_req *q;
	char client_id[32];
	size_t at;

	if (!c)
		return -ENOENT;
	q = &c->reqs[chan_slot(api_key)];
	wr_release(&q->frame);
	wr_init(&q->frame);
	snprintf(client_id, sizeof(client_id), "controller-%d", ch->self_id);
	q->api_key = api_key;
	q->version = version;
	q->corr = ch->next_corr++ & 0x7fffffff;
	at = header_write_request(&q->frame, api_key, version, q->corr, kstr_c(client_id));
	proto_apis[api_key].req_encode(&q->frame, version, msg);
	wr_patch_i32(&q->frame, at, (int32_t)(wr_total(&q->frame) - (int64_t)at - 4));
	if (q->frame.err) {
		wr_release(&q->frame);
		q->state = CH_NONE;
		return -ENOMEM;
	}
	q->state = CH_WAITING;
	chan_flush(c);
	return 0;
}
