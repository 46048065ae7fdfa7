/*
 * h_produce.c - Produce: validate each partition's batches, append them,
 * and answer according to acks.
 *
 * Durability policy (docs/durability.md): with Kafka's default flush
 * settings (log.flush.interval.messages and log.flush.interval.ms unset),
 * acks=all is answered only after an fdatasync of every partition it
 * wrote, group-committed by the syncer thread, or REQUEST_TIMED_OUT once
 * the request's TimeoutMs passes first; acks=0/1 are answered once the
 * data is in the page cache, and every append asks the syncer for a round
 * too, so that it becomes durable, and visible to consumers (the high
 * watermark follows the syncs), within a round.  Setting either flush
 * interval relaxes this to Kafka's own behaviour: page cache plus
 * periodic flushes, and a flush of each segment as it rolls.
 *
 * Idempotence (docs/idempotence.md): a batch with a producer id is checked
 * against the partition's producer state (log/pstate.h) before it is
 * appended; a retried duplicate is answered with its original offsets
 * (after the same fsync as any acks=all answer), never appended twice.
 * Requests run one at a time on the event-loop thread, so the check and
 * the append of one batch are never interleaved with another's.
 *
 * Transactions (KIP-890 part 1): a transactional batch is appended only
 * if the transaction coordinator has added this partition to the
 * producer's ongoing transaction (broker/txn_verify.h: a coordinator on
 * another broker is asked first, the request waiting for the answer),
 * unless the partition already holds that producer's open transaction at
 * that epoch.  A stray transactional batch would otherwise open a
 * transaction no coordinator will ever end, and hold the last stable
 * offset (and every read_committed consumer) at it for good.
 *
 * Replication (cluster mode): acks=all to a partition with other in-sync
 * replicas is answered once the high watermark (the durable end of every
 * ISR member) passes its batch, NOT_ENOUGH_REPLICAS before the append if
 * the ISR is smaller than min.insync.replicas (broker/replica.h).
 *
 * Produce v0-v2 may carry the legacy message formats 0/1: produce_convert
 * turns them into one v2 batch first (proto/msgset.h), as Kafka 3.x does.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "broker/authz.h"
#include "broker/broker.h"
#include "broker/fetch_park.h"
#include "broker/handlers.h"
#include "broker/park.h"
#include "broker/produce_check.h"
#include "broker/registry.h"
#include "broker/replica.h"
#include "broker/stats.h"
#include "broker/syncer.h"
#include "broker/txn_verify.h"
#include "log/partition.h"
#include "log/pstate.h"
#include "proto/codec.h"
#include "proto/kerr.h"
#include "proto/msgset.h"
#include "proto/records.h"
#include "proto/recompress.h"
#include "proto/validate.h"
#include "util/clock.h"
#include "util/log.h"

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
	case -ENOTSUP:
		return KERR_UNSUPPORTED_COMPRESSION_TYPE;
	default:
		return KERR_KAFKA_STORAGE_ERROR;
	}
}

/*
 * compression.type other than producer (Kafka's LogValidator): batches in
 * another codec are re-encoded in the topic's, into rq's arena, and
 * *records points at the result.  0 or -errno (-EMSGSIZE when a batch
 * grows past max.message.bytes).
 */
static int produce_recompress(struct req *rq, const struct topic *t, struct krecords *records)
{
	static const int codec_of[] = {
		[CONFIG_COMPRESSION_GZIP] = CODEC_GZIP,         [CONFIG_COMPRESSION_SNAPPY] = CODEC_SNAPPY,
		[CONFIG_COMPRESSION_LZ4] = CODEC_LZ4,           [CONFIG_COMPRESSION_ZSTD] = CODEC_ZSTD,
		[CONFIG_COMPRESSION_UNCOMPRESSED] = CODEC_NONE,
	};
	int32_t max = t->cfg.max_message_bytes;
	int codec, rc;
	struct wr w;

	if (t->cfg.compression_type == CONFIG_COMPRESSION_PRODUCER)
		return 0;
	codec = codec_of[t->cfg.compression_type];
	if (!recompress_needed(records->p, (size_t)records->len, codec))
		return 0;
	wr_init(&w);
	rc = recompress_blob(records->p, (size_t)records->len, codec, VALIDATE_INFLATE_MAX(max), (size_t)max, &w);
	if (!rc) {
		uint8_t *copy = req_alloc(rq, w.len, 1);

		memcpy(copy, w.buf, w.len);
		records->p = copy;
		records->len = (int32_t)w.len;
	}
	wr_release(&w);
	return rc;
}

static struct topic *produce_topic(struct broker *b, struct kstr name, int16_t *kerr)
{
	struct topic *t = registry_find(b->reg, name);

	*kerr = KERR_NONE;
	if (topic_name_internal(name)) {
		*kerr = KERR_INVALID_TOPIC_EXCEPTION; /* only the coordinators write there, as in Kafka */
		return NULL;
	}
	if (t)
		return t;
	if (!topic_name_valid(name)) {
		*kerr = KERR_INVALID_TOPIC_EXCEPTION;
		return NULL;
	}
	*kerr = KERR_UNKNOWN_TOPIC_OR_PARTITION; /* or its auto-creation failed (h_produce: made before) */
	return NULL;
}

/* Rate-limited warning for producer-state rejections (client-triggered). */
static void produce_idem_warn(struct req *rq, const struct topic *t, int32_t partition, const struct batch_hdr *h,
			      const char *why)
{
	static int64_t last_ms;
	int64_t now = clock_mono_ms();

	if (now - last_ms < 1000)
		return;
	last_ms = now;
	log_warn("%s: produce to '%s-%d' rejected: %s (producer id %lld epoch %d sequence %d)", conn_peer(rq->c),
		 t->name, partition, why, (long long)h->producer_id, h->producer_epoch, h->base_sequence);
}

/* The partition holds h's producer's open transaction at h's epoch: verified when its first batch was appended. */
static bool produce_txn_open(struct part *part, const struct batch_hdr *h)
{
	const struct pstate_entry *e = pstate_find(part_pstate(part), h->producer_id);

	return e && e->epoch == h->producer_epoch && e->txn_first_offset >= 0;
}

/* KIP-890: a transactional batch h may be appended (else out->ErrorCode is set). */
static bool produce_txn_verified(struct req *rq, const struct topic *t, struct part *part,
				 const struct ProduceRequestPartition *in, const struct batch_hdr *h,
				 struct ProduceResponsePartition *out)
{
	const struct ProduceRequest *preq = rq->in;

	if (produce_txn_open(part, h))
		return true;
	out->ErrorCode = txn_verify_produce(rq, preq->TransactionalId, h->producer_id, h->producer_epoch,
					    kstr_c(t->name), in->Index);
	return out->ErrorCode == KERR_NONE;
}

/*
 * KIP-890, before anything is done: asks the transaction coordinators on
 * other brokers about every transactional batch the client may write to
 * a partition led here whose transaction the partition does not hold yet.
 * H_PARKED if rq waits for their answers (it then runs again from the
 * start).
 */
static int produce_txn_ask(struct req *rq, const struct ProduceRequest *preq)
{
	for (int32_t i = 0; i < preq->TopicData.n; i++) {
		struct kstr name = preq->TopicData.v[i].Name;
		struct topic *t =
			authz_produce(rq, preq->TransactionalId, name) ? NULL : registry_find(rq->b->reg, name);

		for (int32_t j = 0; t && j < preq->TopicData.v[i].PartitionData.n; j++) {
			const struct ProduceRequestPartition *in = &preq->TopicData.v[i].PartitionData.v[j];
			struct part *part = registry_part(t, in->Index);
			struct batch_hdr h;

			if (!part || in->Records.len <= 0 ||
			    records_batch_parse(in->Records.p, (size_t)in->Records.len, &h) || h.producer_id < 0 ||
			    !records_is_transactional(&h) || records_is_control(&h) || produce_txn_open(part, &h))
				continue;
			txn_verify_ask(rq, preq->TransactionalId, h.producer_id, h.producer_epoch, kstr_c(t->name),
				       in->Index);
		}
	}
	return txn_verify_wait(rq, preq->TimeoutMs);
}

/*
 * Checks the batch of an idempotent producer against the partition's
 * producer state.  Returns true if the records may be appended (also for
 * producerId -1: no checks, whatever the sequence says); false with out
 * filled in: an error, or a duplicate's original offsets (*dup set).
 */
static bool produce_idem_check(struct req *rq, const struct topic *t, struct part *part,
			       const struct ProduceRequestPartition *in, struct ProduceResponsePartition *out,
			       bool *dup)
{
	struct pstate_batch orig;
	struct batch_hdr h;
	const char *why;

	*dup = false;
	if (records_batch_parse(in->Records.p, (size_t)in->Records.len, &h) || h.producer_id < 0 ||
	    records_is_control(&h))
		return true; /* no producer checks (control batches are refused by produce_check) */
	if (h.size != in->Records.len || h.producer_epoch < 0 || h.base_sequence < 0) {
		/* Kafka: one batch per partition from an idempotent producer */
		out->ErrorCode = rq->hdr.api_version >= 8 ? KERR_INVALID_RECORD : KERR_CORRUPT_MESSAGE;
		why = "an idempotent produce must hold exactly one batch with epoch and sequence >= 0";
		goto out_reject;
	}
	switch (pstate_check(part_pstate(part), &h, &orig)) {
	case PSTATE_APPEND:
		if (!records_is_transactional(&h) || produce_txn_verified(rq, t, part, in, &h, out))
			return true;
		why = "the partition is not in an ongoing transaction of this producer";
		goto out_reject;
	case PSTATE_DUPLICATE:
		*dup = true;
		out->BaseOffset = orig.first_offset;
		out->LogAppendTimeMs = t->cfg.message_timestamp_type == CONFIG_TS_LOG_APPEND_TIME ? orig.max_ts : -1;
		out->LogStartOffset = part_log_start_offset(part);
		log_debug(LOGC_PROTO, "proto", "%s: '%s-%d': duplicate of offset %lld (producer id %lld sequence %d)",
			  conn_peer(rq->c), t->name, in->Index, (long long)orig.first_offset, (long long)h.producer_id,
			  h.base_sequence);
		return false;
	case PSTATE_OUT_OF_ORDER:
		out->ErrorCode = KERR_OUT_OF_ORDER_SEQUENCE_NUMBER;
		why = "out of order sequence number";
		break;
	case PSTATE_STALE_EPOCH:
		out->ErrorCode = KERR_INVALID_PRODUCER_EPOCH;
		why = "producer epoch is older than the current one";
		break;
	case PSTATE_UNKNOWN_PRODUCER:
	default:
		out->ErrorCode = KERR_UNKNOWN_PRODUCER_ID;
		why = "no state for this producer id and the sequence is not 0";
		break;
	}
out_reject:
	out->ErrorMessage = kstr_c(why);
	produce_idem_warn(rq, t, in->Index, &h, why);
	return false;
}

#define PRODUCE_INFLATE_MAX (64 << 20) /* a legacy message set, decompressed */

/*
 * Produce v0-v2 may carry legacy message sets (magic 0/1): they become one
 * v2 batch in the request's arena (proto/msgset.h), as Kafka 3.x converts
 * them on append.  zstd needs Produce v7 (KIP-110).  Returns 0 or the
 * error produce_kerr() maps.
 */
static int produce_convert(struct req *rq, struct bytes *rec)
{
	struct wr w;
	uint8_t *p;
	int rc;

	if (rq->hdr.api_version < 7 && records_has_codec(rec->p, (size_t)rec->len, CODEC_ZSTD))
		return -ENOTSUP;
	if (rq->hdr.api_version >= 3 || !msgset_is_legacy(rec->p, (size_t)rec->len))
		return 0;
	wr_init(&w);
	rc = msgset_to_batch(rec->p, (size_t)rec->len, PRODUCE_INFLATE_MAX, &w);
	if (!rc) {
		p = req_alloc(rq, w.len, 1);
		memcpy(p, w.buf, w.len);
		*rec = (struct bytes){ p, (int32_t)w.len };
	}
	wr_release(&w);
	return rc;
}

/* Appends one partition's records; returns the fsync ticket needed (0 = none). */
static uint64_t produce_partition(struct req *rq, int16_t acks, struct topic *t, const struct ProduceRequestTopic *pin,
				  const struct ProduceRequestPartition *in, struct ProduceResponsePartition *out)
{
	struct broker *b = rq->b;
	struct part *part = registry_part(t, in->Index);
	struct part_append_info info;
	int64_t now_ms = clock_wall_ms();
	struct ProduceRequestPartition rin = *in;              /* Records re-encoded for compression.type */
	struct bytes rec = { in->Records.p, in->Records.len }; /* message formats 0/1 converted to v2 */
	int err = 0;
	bool dup;

	if (!part) {
		out->ErrorCode = registry_part_error(t, in->Index);
		return 0;
	}
	if (in->Records.len <= 0) {
		out->ErrorCode = KERR_CORRUPT_MESSAGE;
		return 0;
	}
	if (acks == -1 && replica_isr_size(b, t->name, in->Index) < t->cfg.min_insync_replicas) {
		/* Kafka checks before appending; a single node's in-sync replica set is this broker alone */
		out->ErrorCode = KERR_NOT_ENOUGH_REPLICAS;
		return 0;
	}
	err = produce_convert(rq, &rec);
	if (err) {
		out->ErrorCode = produce_kerr(err);
		return 0;
	}
	/* the records are a view into rq->frame (or rq's arena), which this request owns */
	if (!produce_check(rq, t, (uint8_t *)rec.p, (size_t)rec.len, now_ms, out))
		return 0;
	rin.Records.p = rec.p;
	rin.Records.len = rec.len;
	err = produce_recompress(rq, t, &rin.Records);
	if (err) {
		out->ErrorCode = produce_kerr(err);
		return 0;
	}
	if (!produce_idem_check(rq, t, part, &rin, out, &dup)) {
		/* a duplicate is acknowledged like its original: once durable (on every in-sync replica) */
		if (dup && acks == -1 && replica_acks_all_waits(b, t->name, in->Index)) {
			replica_wait_add(rq, pin->Name, in->Index, part_log_end_offset(part), &out->ErrorCode, false);
			return 0;
		}
		return dup && acks == -1 && park_sync_on_ack(&b->cfg) ? syncer_want(b->syncer, part) : 0;
	}
	err = part_append(part, (uint8_t *)rin.Records.p, (size_t)rin.Records.len, now_ms, &info);
	if (err) {
		out->ErrorCode = produce_kerr(err);
		if (out->ErrorCode == KERR_KAFKA_STORAGE_ERROR)
			log_error("append to '%s-%d' failed: %s", t->name, in->Index, strerror(-err));
		return 0;
	}
	fetch_park_notify(part);
	stats_topic_in((struct kstr){ t->name, (int32_t)strlen(t->name) }, (uint64_t)rin.Records.len,
		       (uint64_t)(info.last_offset - info.base_offset + 1));
	out->BaseOffset = info.base_offset;
	out->LogAppendTimeMs = t->cfg.message_timestamp_type == CONFIG_TS_LOG_APPEND_TIME ? info.log_append_time : -1;
	out->LogStartOffset = info.log_start_offset;
	if (acks == -1 && replica_acks_all_waits(b, t->name, in->Index)) {
		/* answered once the high watermark (the ISR's durable end) covers it: replica.h */
		replica_wait_add(rq, pin->Name, in->Index, info.last_offset + 1, &out->ErrorCode, false);
		if (park_sync_on_ack(&b->cfg))
			syncer_want(b->syncer, part);
		part_start_writeback(part, 0);
		return 0;
	}
	if (park_sync_on_ack(&b->cfg)) {
		uint64_t ticket = syncer_want(b->syncer, part);

		if (acks != -1)
			return 0;
		part_start_writeback(part, 0);
		return ticket;
	}
	if (info.rolled || part_unflushed_messages(part) >= b->cfg.log_flush_interval_messages ||
	    part_unflushed_messages(part) >= t->cfg.flush_messages)
		syncer_want(b->syncer, part);
	return 0;
}

static uint64_t produce_topic_data(struct req *rq, int16_t acks, const struct ProduceRequestTopic *in,
				   struct ProduceResponseTopic *out)
{
	int16_t kerr = authz_produce(rq, ((const struct ProduceRequest *)rq->in)->TransactionalId, in->Name);
	struct topic *t = kerr ? NULL : produce_topic(rq->b, in->Name, &kerr);
	uint64_t ticket = 0;

	out->Name = in->Name;
	out->PartitionResponses.n = in->PartitionData.n > 0 ? in->PartitionData.n : 0;
	out->PartitionResponses.v =
		req_alloc(rq, (size_t)out->PartitionResponses.n, sizeof(*out->PartitionResponses.v));
	for (int32_t i = 0; i < out->PartitionResponses.n; i++) {
		struct ProduceResponsePartition *op = &out->PartitionResponses.v[i];
		uint64_t tk;

		ProduceResponsePartition_init(op);
		op->Index = in->PartitionData.v[i].Index;
		op->BaseOffset = -1;
		if (!t) {
			op->ErrorCode = kerr == KERR_UNKNOWN_TOPIC_OR_PARTITION
						? registry_missing_error(rq->b->reg, in->Name, op->Index)
						: kerr;
			continue;
		}
		tk = produce_partition(rq, acks, t, in, &in->PartitionData.v[i], op);
		ticket = tk > ticket ? tk : ticket;
	}
	return ticket;
}

/* Gives every partition answered with success kerr instead (its data is not known durable). */
static void produce_unack(struct req *rq, int16_t kerr)
{
	struct ProduceResponse *resp = rq->out;

	for (int32_t i = 0; i < resp->Responses.n; i++)
		for (int32_t j = 0; j < resp->Responses.v[i].PartitionResponses.n; j++) {
			struct ProduceResponsePartition *op = &resp->Responses.v[i].PartitionResponses.v[j];

			if (op->ErrorCode == KERR_NONE)
				op->ErrorCode = kerr;
		}
}

/* A failed fsync round (the log dir is offline from now on). */
static void produce_fail_sync(struct req *rq)
{
	produce_unack(rq, KERR_KAFKA_STORAGE_ERROR);
}

/* TimeoutMs passed before the round was done (as Kafka answers acks=all when the ISR lags). */
static void produce_timed_out(struct req *rq)
{
	produce_unack(rq, KERR_REQUEST_TIMED_OUT);
}

int h_produce(struct req *rq, const void *in, void *out)
{
	const struct ProduceRequest *preq = in;
	struct ProduceResponse *resp = out;
	struct autocreate *w = NULL;
	uint64_t ticket = 0;

	for (int32_t i = 0; i < preq->TopicData.n; i++)
		autocreate_begin(rq, preq->TopicData.v[i].Name, &w);
	if (w)
		return H_PARKED; /* run again once they are made (off the loop) */
	if (produce_txn_ask(rq, preq) == H_PARKED)
		return H_PARKED; /* run again once the coordinators answered */

	resp->Responses.n = preq->TopicData.n > 0 ? preq->TopicData.n : 0;
	resp->Responses.v = req_alloc(rq, (size_t)resp->Responses.n, sizeof(*resp->Responses.v));
	for (int32_t i = 0; i < resp->Responses.n; i++) {
		ProduceResponseTopic_init(&resp->Responses.v[i]);
		if (preq->Acks != 0 && preq->Acks != 1 && preq->Acks != -1) {
			struct ProduceResponseTopic *ot = &resp->Responses.v[i];

			ot->Name = preq->TopicData.v[i].Name;
			ot->PartitionResponses.n =
				preq->TopicData.v[i].PartitionData.n > 0 ? preq->TopicData.v[i].PartitionData.n : 0;
			ot->PartitionResponses.v =
				req_alloc(rq, (size_t)ot->PartitionResponses.n, sizeof(*ot->PartitionResponses.v));
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
	if (rq->hold) /* partitions with other in-sync replicas: replica_wait_add */
		return replica_park(rq, ticket, preq->TimeoutMs, produce_fail_sync);
	return park_until_synced_within(rq, ticket, produce_fail_sync, preq->TimeoutMs, produce_timed_out);
}

void produce_flush_policy(struct broker *b, int64_t now_ms)
{
	struct topic **topics;
	int n;

	topics = registry_topics(b->reg, &n);
	for (int i = 0; i < n; i++) {
		struct topic *t = topics[i];

		/* flush.ms follows log.flush.interval.ms; INT64_MAX: never by time */
		if (t->cfg.flush_ms == INT64_MAX || now_ms - t->flush_round_ms < t->cfg.flush_ms)
			continue;
		t->flush_round_ms = now_ms;
		for (int32_t p = 0; p < t->nparts; p++)
			if (t->parts[p] && part_unflushed_messages(t->parts[p]) > 0)
				syncer_want(b->syncer, t->parts[p]);
	}
}
