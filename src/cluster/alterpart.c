/*
 * alterpart.c - a leader's ISR change sent to the controller
 * (alterpart.h).  One change: resolve the controller -> connect and send
 * -> answer (done) or a retry after the backoff; a timer bounds each
 * attempt.  The connection is made anew for each attempt, since the
 * controller may have moved meanwhile.  The connection's callbacks only
 * record what happened and fire the timer at once: the connection is
 * freed (and done called) from the timer, never inside its own callback.
 *
 *   IDLE --timer--> SENT (attempt) --answer--> ANSWERED --timer--> done
 *   SENT --lost / unreadable / NOT_CONTROLLER--> FAILED --timer--> IDLE (backoff)
 *   SENT --timer (no answer in 5 s)--> IDLE (backoff)
 */
#include "cluster/alterpart.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net/client.h"
#include "net/loop.h"
#include "proto/header.h"
#include "proto/kerr.h"
#include "proto_msgs.h"
#include "util/arena.h"
#include "util/clock.h"
#include "util/log.h"

#define ALTERPART_VERSION 1
#define ALTERPART_BACKOFF_MS_MIN 100
#define ALTERPART_BACKOFF_MS_MAX 2000
#define ALTERPART_ATTEMPT_MS 5000

struct alterpart {
	struct alterpart_cfg cfg;
	struct alterpart **head, *next, *prev; /* the list of changes under way */
	char topic[256];
	int32_t partition, leader_epoch, partition_epoch;
	struct znode_replicas isr;
	cluster_alter_partition_fn *done;
	void *arg;
	struct nclient *nc; /* the attempt under way, NULL between attempts */
	int32_t controller;
	int32_t corr;
	int32_t backoff_ms;
	struct loop_timer timer; /* the attempt's bound, the backoff, or "now" from a callback */
	enum { AP_IDLE, AP_SENT, AP_FAILED, AP_ANSWERED } state;
	const char *why; /* FAILED: what */
	int16_t err;     /* ANSWERED: the outcome, with the epoch and ISR written */
	int32_t new_partition_epoch;
	struct znode_replicas new_isr;
};

static void alterpart_attempt(struct alterpart *ap);

static void alterpart_end(struct alterpart *ap, int16_t err, int32_t partition_epoch, const int32_t *isr, int n)
{
	loop_timer_cancel(ap->cfg.loop, &ap->timer);
	nclient_free(ap->nc);
	ap->nc = NULL;
	if (ap->prev)
		ap->prev->next = ap->next;
	else
		*ap->head = ap->next;
	if (ap->next)
		ap->next->prev = ap->prev;
	ap->done(ap->arg, err, partition_epoch, isr, n);
	free(ap);
}

/* This attempt failed in a way worth retrying: close it and wait the backoff. */
static void alterpart_retry(struct alterpart *ap, const char *why)
{
	log_debug(LOGC_CLUSTER, "cluster", "AlterPartition of %s-%d to controller %d: %s; again in %d ms", ap->topic,
		  ap->partition, ap->controller, why, ap->backoff_ms);
	nclient_free(ap->nc);
	ap->nc = NULL;
	ap->state = AP_IDLE;
	loop_timer_set(ap->cfg.loop, &ap->timer, clock_mono_ms() + ap->backoff_ms);
	ap->backoff_ms = ap->backoff_ms * 2 > ALTERPART_BACKOFF_MS_MAX ? ALTERPART_BACKOFF_MS_MAX : ap->backoff_ms * 2;
}

static void alterpart_on_timer(struct loop_timer *t)
{
	struct alterpart *ap = (struct alterpart *)((char *)t - offsetof(struct alterpart, timer));

	switch (ap->state) {
	case AP_IDLE:
		alterpart_attempt(ap);
		break;
	case AP_SENT:
		alterpart_retry(ap, "no answer");
		break;
	case AP_FAILED:
		alterpart_retry(ap, ap->why);
		break;
	case AP_ANSWERED:
		alterpart_end(ap, ap->err, ap->new_partition_epoch, ap->new_isr.ids, ap->new_isr.n);
		break;
	}
}

/* From a connection callback: record the outcome and let the timer act on it now. */
static void alterpart_settle(struct alterpart *ap, int state, const char *why)
{
	if (ap->state != AP_SENT)
		return;
	ap->state = state;
	ap->why = why;
	loop_timer_set(ap->cfg.loop, &ap->timer, clock_mono_ms());
}

static void alterpart_on_state(void *arg, bool up)
{
	if (!up)
		alterpart_settle(arg, AP_FAILED, "connection lost");
}

/* The answer: the partition's outcome, or a retry for NOT_CONTROLLER. */
static void alterpart_answer(struct alterpart *ap, const struct AlterPartitionResponse *resp)
{
	const struct AlterPartitionResponsePartition *p = NULL;
	int16_t err = resp->ErrorCode;

	if (!err && resp->Topics.n == 1 && resp->Topics.v[0].Partitions.n == 1)
		p = &resp->Topics.v[0].Partitions.v[0];
	if (!err)
		err = p ? p->ErrorCode : KERR_UNKNOWN_SERVER_ERROR;
	if (err == KERR_NOT_CONTROLLER) {
		alterpart_settle(ap, AP_FAILED, "not the controller");
		return;
	}
	if (err)
		log_info("AlterPartition of %s-%d (leader epoch %d, partition epoch %d): controller %d answered %s",
			 ap->topic, ap->partition, ap->leader_epoch, ap->partition_epoch, ap->controller,
			 kerr_name(err));
	ap->err = err;
	ap->new_partition_epoch = err ? -1 : p->PartitionEpoch;
	ap->new_isr.n = 0;
	for (int32_t i = 0; !err && i < p->Isr.n && i < ZNODE_REPLICAS_MAX; i++)
		ap->new_isr.ids[ap->new_isr.n++] = p->Isr.v[i];
	alterpart_settle(ap, AP_ANSWERED, NULL);
}

static void alterpart_on_frame(void *arg, const uint8_t *frame, int32_t len)
{
	struct alterpart *ap = arg;
	struct AlterPartitionResponse resp;
	struct arena a;
	struct rd r;
	int32_t corr;

	rd_init(&r, frame, (size_t)len);
	arena_init(&a, (size_t)len * 4 + 4096);
	if (header_read_response(&r, API_AlterPartition, ALTERPART_VERSION, &corr) || corr != ap->corr ||
	    AlterPartitionResponse_decode(&r, &a, ALTERPART_VERSION, &resp))
		alterpart_settle(ap, AP_FAILED, "unreadable answer");
	else
		alterpart_answer(ap, &resp);
	arena_release(&a);
}

/* The request frame of ap.  0 or -ENOMEM. */
static int alterpart_frame(struct alterpart *ap, struct wr *w)
{
	struct AlterPartitionRequestPartition part;
	struct AlterPartitionRequestTopic topic;
	struct AlterPartitionRequest req;
	char client_id[32];
	size_t at;

	AlterPartitionRequest_init(&req);
	AlterPartitionRequestTopic_init(&topic);
	AlterPartitionRequestPartition_init(&part);
	req.BrokerId = ap->cfg.broker_id;
	req.BrokerEpoch = ap->cfg.broker_epoch;
	req.Topics = (struct AlterPartitionRequestTopic_array){ &topic, 1 };
	topic.TopicName = kstr_c(ap->topic);
	topic.Partitions = (struct AlterPartitionRequestPartition_array){ &part, 1 };
	part.PartitionIndex = ap->partition;
	part.LeaderEpoch = ap->leader_epoch;
	part.PartitionEpoch = ap->partition_epoch;
	part.NewIsr = (struct int32_array){ ap->isr.ids, ap->isr.n };
	snprintf(client_id, sizeof(client_id), "broker-%d-alter-partition", ap->cfg.broker_id);
	wr_init(w);
	at = header_write_request(w, API_AlterPartition, ALTERPART_VERSION, ap->corr, kstr_c(client_id));
	AlterPartitionRequest_encode(w, ALTERPART_VERSION, &req);
	wr_patch_i32(w, at, (int32_t)(wr_total(w) - (int64_t)at - 4));
	return w->err ? -ENOMEM : 0;
}

static void alterpart_attempt(struct alterpart *ap)
{
	const struct cluster_broker *cb = ap->cfg.controller(ap->cfg.controller_arg);
	struct nclient_cfg ncfg = { .out_max = 1 << 20,
				    .frame_max = 16 << 20,
				    .on_state = alterpart_on_state,
				    .on_frame = alterpart_on_frame,
				    .arg = ap };
	struct wr w;

	if (!cb) {
		ap->controller = -1;
		alterpart_retry(ap, "no controller known");
		return;
	}
	ap->controller = cb->id;
	ncfg.host = cb->inter_host;
	ncfg.port = cb->inter_port;
	ncfg.sec = ap->cfg.sec;
	ap->corr++;
	if (nclient_new(ap->cfg.loop, &ncfg, &ap->nc)) {
		ap->nc = NULL;
		alterpart_retry(ap, "cannot connect");
		return;
	}
	if (alterpart_frame(ap, &w) || nclient_send(ap->nc, &w)) {
		wr_release(&w);
		alterpart_retry(ap, "cannot send");
		return;
	}
	wr_release(&w);
	ap->state = AP_SENT;
	loop_timer_set(ap->cfg.loop, &ap->timer, clock_mono_ms() + ALTERPART_ATTEMPT_MS);
}

int alterpart_start(const struct alterpart_cfg *cfg, const char *topic, int32_t partition, int32_t leader_epoch,
		    int32_t partition_epoch, const int32_t *isr, int n, cluster_alter_partition_fn *done, void *arg,
		    struct alterpart **head)
{
	struct alterpart *ap;

	if (n <= 0 || n > ZNODE_REPLICAS_MAX || strlen(topic) >= sizeof(ap->topic))
		return -EINVAL;
	ap = calloc(1, sizeof(*ap));
	if (!ap)
		return -ENOMEM;
	ap->cfg = *cfg;
	strcpy(ap->topic, topic);
	ap->partition = partition;
	ap->leader_epoch = leader_epoch;
	ap->partition_epoch = partition_epoch;
	ap->isr.n = n;
	memcpy(ap->isr.ids, isr, sizeof(*isr) * (size_t)n);
	ap->done = done;
	ap->arg = arg;
	ap->backoff_ms = ALTERPART_BACKOFF_MS_MIN;
	loop_timer_init(&ap->timer, alterpart_on_timer);
	ap->head = head;
	ap->next = *head;
	if (*head)
		(*head)->prev = ap;
	*head = ap;
	alterpart_attempt(ap);
	return 0;
}

void alterpart_cancel(struct alterpart *ap)
{
	alterpart_end(ap, KERR_REQUEST_TIMED_OUT, -1, NULL, 0);
}
