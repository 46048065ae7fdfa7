/*
 * h_produce.c - Produce: validate each partition's batches, append them,
 * and answer according to acks.
 *
 * Durability policy (docs/durability.md): with Kafka's default flush
 * settings (log.flush.interval.messages and log.flush.interval.ms unset),
 * acks=all is answered only after an fdatasync of every partition it
 * wrote, group-committed by the syncer thread; acks=1 is answered once
 * the data is in the page cache.  Setting either flush interval relaxes
 * acks=all to Kafka's own behaviour: page cache plus periodic flushes.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "broker/broker.h"
#include "broker/handlers.h"
#include "broker/registry.h"
#include "broker/syncer.h"
#include "log/partition.h"
#include "proto/kerr.h"
#include "proto/records.h"
#include "util/clock.h"
#include "util/log.h"

/* Parked acks=all requests, in ticket order (tickets only grow). */
static struct req *produce_parked_head, *produce_parked_tail;

static bool produce_sync_on_ack(const struct broker_cfg *cfg)
{
	return cfg->log_flush_interval_messages == INT64_MAX && cfg->log_flush_interval_ms < 0;
}

static int16_t produce_kerr(int err)
{
	switch (err) {
	case -EBADMSG:
		return KERR_CORRUPT_MESSAGE;
	case -EMSGSIZE:
		return KERR_MESSAGE_TOO_LARGE;
	case -EPROTO:
		return KERR_UNSUPPORTED_FOR_MESSAGE_FORMAT;
	case -EINVAL:
		return KERR_INVALID_RECORD;
	default:
		return KERR_KAFKA_STORAGE_ERROR;
	}
}

static struct topic *produce_topic(struct broker *b, struct kstr name, int16_t *kerr)
{
	struct topic *t = registry_find(b->reg, name);
	struct topic_cfg tc;

	*kerr = KERR_NONE;
	if (t)
		return t;
	if (!topic_name_valid(name)) {
		*kerr = KERR_INVALID_TOPIC_EXCEPTION;
		return NULL;
	}
	*kerr = KERR_UNKNOWN_TOPIC_OR_PARTITION;
	if (!b->cfg.auto_create_topics_enable || (name.len > 1 && name.p[0] == '_' && name.p[1] == '_'))
		return NULL;
	topic_cfg_init(&tc, &b->cfg);
	if (registry_create(b->reg, name, b->cfg.num_partitions, &tc, &t) < 0)
		t = NULL;
	topic_cfg_release(&tc);
	if (t)
		*kerr = KERR_NONE;
	return t;
}

/* Appends one partition's records; returns the fsync ticket needed (0 = none). */
static uint64_t produce_partition(struct req *rq, int16_t acks, struct topic *t,
				  const struct ProduceRequestPartition *in, struct ProduceResponsePartition *out)
{
	struct broker *b = rq->b;
	struct part *part = registry_part(t, in->Index);
	struct part_append_info info;
	int count = 0, err;

	if (!part) {
		out->ErrorCode = KERR_UNKNOWN_TOPIC_OR_PARTITION;
		return 0;
	}
	if (in->Records.len <= 0) {
		out->ErrorCode = KERR_CORRUPT_MESSAGE;
		return 0;
	}
	err = records_validate(in->Records.p, (size_t)in->Records.len, t->cfg.max_message_bytes, &count);
	if (!err)
		/* the records are a view into rq->frame, which this request owns */
		err = part_append(part, (uint8_t *)in->Records.p, (size_t)in->Records.len, clock_wall_ms(), &info);
	if (err) {
		out->ErrorCode = produce_kerr(err);
		if (out->ErrorCode == KERR_KAFKA_STORAGE_ERROR)
			log_error("append to '%s-%d' failed: %s", t->name, in->Index, strerror(-err));
		return 0;
	}
	b->appended = true;
	out->BaseOffset = info.base_offset;
	out->LogAppendTimeMs = t->cfg.message_timestamp_type == CONFIG_TS_LOG_APPEND_TIME ? info.log_append_time : -1;
	out->LogStartOffset = info.log_start_offset;
	if (acks == -1 && produce_sync_on_ack(&b->cfg))
		return syncer_want(b->syncer, part);
	if (part_unflushed_messages(part) >= b->cfg.log_flush_interval_messages ||
	    part_unflushed_messages(part) >= t->cfg.flush_messages)
		syncer_want(b->syncer, part);
	return 0;
}

static uint64_t produce_topic_data(struct req *rq, int16_t acks, const struct ProduceRequestTopic *in,
				   struct ProduceResponseTopic *out)
{
	int16_t kerr;
	struct topic *t = produce_topic(rq->b, in->Name, &kerr);
	uint64_t ticket = 0;

	out->Name = in->Name;
	out->PartitionResponses.n = in->PartitionData.n > 0 ? in->PartitionData.n : 0;
	out->PartitionResponses.v = req_alloc(rq, (size_t)out->PartitionResponses.n, sizeof(*out->PartitionResponses.v));
	for (int32_t i = 0; i < out->PartitionResponses.n; i++) {
		struct ProduceResponsePartition *op = &out->PartitionResponses.v[i];
		uint64_t tk;

		ProduceResponsePartition_init(op);
		op->Index = in->PartitionData.v[i].Index;
		op->BaseOffset = -1;
		if (!t) {
			op->ErrorCode = kerr;
			continue;
		}
		tk = produce_partition(rq, acks, t, &in->PartitionData.v[i], op);
		ticket = tk > ticket ? tk : ticket;
	}
	return ticket;
}

int h_produce(struct req *rq, const void *in, void *out)
{
	const struct ProduceRequest *preq = in;
	struct ProduceResponse *resp = out;
	uint64_t ticket = 0;

	if (rq->hdr.api_version < 3)
		return H_CLOSE; /* message formats v0/v1 are not stored (as Kafka 4) */
	resp->Responses.n = preq->TopicData.n > 0 ? preq->TopicData.n : 0;
	resp->Responses.v = req_alloc(rq, (size_t)resp->Responses.n, sizeof(*resp->Responses.v));
	for (int32_t i = 0; i < resp->Responses.n; i++) {
		ProduceResponseTopic_init(&resp->Responses.v[i]);
		if (preq->Acks != 0 && preq->Acks != 1 && preq->Acks != -1) {
			struct ProduceResponseTopic *ot = &resp->Responses.v[i];

			ot->Name = preq->TopicData.v[i].Name;
			ot->PartitionResponses.n = preq->TopicData.v[i].PartitionData.n > 0 ? preq->TopicData.v[i].PartitionData.n : 0;
			ot->PartitionResponses.v = req_alloc(rq, (size_t)ot->PartitionResponses.n, sizeof(*ot->PartitionResponses.v));
			for (int32_t j = 0; j < ot->PartitionResponses.n; j++) {
				ProduceResponsePartition_init(&ot->PartitionResponses.v[j]);
				ot->PartitionResponses.v[j].Index = preq->TopicData.v[i].PartitionData.v[j].Index;
				ot->PartitionResponses.v[j].ErrorCode = KERR_INVALID_REQUIRED_ACKS;
				ot->PartitionResponses.v[j].BaseOffset = -1;
			}
			continue;
		}
		uint64_t tk = produce_topic_data(rq, preq->Acks, &preq->TopicData.v[i], &resp->Responses.v[i]);

		ticket = tk > ticket ? tk : ticket;
	}
	if (preq->Acks == 0)
		return H_NOREPLY;
	if (!ticket || syncer_done(rq->b->syncer) >= ticket)
		return H_REPLY;
	rq->park_ticket = ticket;
	rq->park_next = NULL;
	if (produce_parked_tail)
		produce_parked_tail->park_next = rq;
	else
		produce_parked_head = rq;
	produce_parked_tail = rq;
	return H_PARKED;
}

/* Marks every successful partition of a parked response as not durable. */
static void produce_fail_sync(struct ProduceResponse *resp)
{
	for (int32_t i = 0; i < resp->Responses.n; i++)
		for (int32_t j = 0; j < resp->Responses.v[i].PartitionResponses.n; j++) {
			struct ProduceResponsePartition *op = &resp->Responses.v[i].PartitionResponses.v[j];

			if (op->ErrorCode == KERR_NONE)
				op->ErrorCode = KERR_KAFKA_STORAGE_ERROR;
		}
}

void produce_on_synced(struct broker *b)
{
	uint64_t done = syncer_done(b->syncer);

	while (produce_parked_head && produce_parked_head->park_ticket <= done) {
		struct req *rq = produce_parked_head;

		produce_parked_head = rq->park_next;
		if (!produce_parked_head)
			produce_parked_tail = NULL;
		if (syncer_failed(b->syncer, rq->park_ticket))
			produce_fail_sync(rq->out);
		req_reply(rq);
	}
}

void produce_drop_parked(void)
{
	while (produce_parked_head) {
		struct req *rq = produce_parked_head;

		produce_parked_head = rq->park_next;
		req_noreply(rq);
	}
	produce_parked_tail = NULL;
}

void produce_flush_policy(struct broker *b, int64_t now_ms)
{
	static int64_t last_ms;
	struct topic **topics;
	int n;

	if (b->cfg.log_flush_interval_ms < 0 || now_ms - last_ms < b->cfg.log_flush_interval_ms)
		return;
	last_ms = now_ms;
	topics = registry_topics(b->reg, &n);
	for (int i = 0; i < n; i++)
		for (int32_t p = 0; p < topics[i]->nparts; p++)
			if (part_unflushed_messages(topics[i]->parts[p]) > 0)
				syncer_want(b->syncer, topics[i]->parts[p]);
}
