/*
 * h_offsets.c - ListOffsets: earliest (-2), latest (-1: the high
 * watermark, or the last stable offset for read_committed), max timestamp
 * (-3, v7+) and the first offset at or after a timestamp; v0 answers in
 * its own form (list_offsets_old_style).
 */
#include <stdint.h>

#include "broker/authz.h"
#include "broker/broker.h"
#include "broker/handlers.h"
#include "broker/registry.h"
#include "log/partition.h"
#include "log/txnidx.h"
#include "proto/kerr.h"
#include "util/clock.h"

#define LIST_OFFSETS_LATEST (-1)
#define LIST_OFFSETS_EARLIEST (-2)
#define LIST_OFFSETS_MAX_TIMESTAMP (-3)

static void list_offsets_partition(struct req *rq, int8_t isolation, struct topic *t,
				   const struct ListOffsetsRequestPartition *in,
				   struct ListOffsetsResponsePartition *out)
{
	struct part *part = t ? registry_part(t, in->PartitionIndex) : NULL;
	int64_t offset = -1, ts = -1;

	ListOffsetsResponsePartition_init(out);
	out->PartitionIndex = in->PartitionIndex;
	if (!part) {
		out->ErrorCode = registry_part_error(t, in->PartitionIndex);
		return;
	}
	switch (in->Timestamp) {
	case LIST_OFFSETS_LATEST:
		/* read_committed (v2+): the last stable offset */
		offset = isolation == 1 ? txnidx_last_stable_offset(part) : part_high_watermark(part);
		break;
	case LIST_OFFSETS_EARLIEST:
		offset = part_log_start_offset(part);
		break;
	case LIST_OFFSETS_MAX_TIMESTAMP:
		if (rq->hdr.api_version < 7) {
			out->ErrorCode = KERR_UNSUPPORTED_VERSION;
			return;
		}
		part_max_timestamp(part, &offset, &ts);
		break;
	default:
		if (in->Timestamp < 0) {
			out->ErrorCode = KERR_UNSUPPORTED_VERSION;
			return;
		}
		if (part_offset_for_time(part, in->Timestamp, &offset, &ts) < 0)
			offset = ts = -1;
	}
	out->Offset = offset;
	out->Timestamp = ts;
	out->LeaderEpoch = 0;
}

/*
 * ListOffsets v0: Kafka's legacy answer, up to MaxNumOffsets segment base
 * offsets (and the high watermark) before a time, newest first.
 */
static void list_offsets_old_style(struct req *rq, struct topic *t, const struct ListOffsetsRequestPartition *in,
				   struct ListOffsetsResponsePartition *out)
{
	struct part *part = t ? registry_part(t, in->PartitionIndex) : NULL;
	int max = in->MaxNumOffsets;

	ListOffsetsResponsePartition_init(out);
	out->PartitionIndex = in->PartitionIndex;
	if (!part) {
		out->ErrorCode = registry_part_error(t, in->PartitionIndex);
		return;
	}
	if (in->Timestamp < -2) {
		out->ErrorCode = KERR_UNSUPPORTED_VERSION;
		return;
	}
	if (max > part_segment_count(part) + 1)
		max = part_segment_count(part) + 1;
	out->OldStyleOffsets.v = req_alloc(rq, max > 0 ? (size_t)max : 1, sizeof(int64_t));
	out->OldStyleOffsets.n =
		max > 0 ? part_offsets_before(part, in->Timestamp, clock_wall_ms(), out->OldStyleOffsets.v, max) : 0;
}

int h_list_offsets(struct req *rq, const void *in, void *out)
{
	const struct ListOffsetsRequest *lreq = in;
	struct ListOffsetsResponse *resp = out;

	resp->Topics.n = lreq->Topics.n > 0 ? lreq->Topics.n : 0;
	resp->Topics.v = req_alloc(rq, (size_t)resp->Topics.n, sizeof(*resp->Topics.v));
	for (int32_t i = 0; i < resp->Topics.n; i++) {
		const struct ListOffsetsRequestTopic *it = &lreq->Topics.v[i];
		struct ListOffsetsResponseTopic *ot = &resp->Topics.v[i];
		bool allowed = authz_topic(rq, it->Name, ACL_OP_DESCRIBE);
		struct topic *t = allowed ? registry_find(rq->b->reg, it->Name) : NULL;

		ot->Name = it->Name;
		ot->Partitions.n = it->Partitions.n > 0 ? it->Partitions.n : 0;
		ot->Partitions.v = req_alloc(rq, (size_t)ot->Partitions.n, sizeof(*ot->Partitions.v));
		for (int32_t j = 0; j < ot->Partitions.n; j++) {
			if (rq->hdr.api_version == 0)
				list_offsets_old_style(rq, t, &it->Partitions.v[j], &ot->Partitions.v[j]);
			else
				list_offsets_partition(rq, lreq->IsolationLevel, t, &it->Partitions.v[j],
						       &ot->Partitions.v[j]);
			if (!t) /* cluster mode: led elsewhere? */
				ot->Partitions.v[j].ErrorCode =
					allowed ? registry_missing_error(rq->b->reg, it->Name,
									 it->Partitions.v[j].PartitionIndex)
						: KERR_TOPIC_AUTHORIZATION_FAILED;
		}
	}
	return H_REPLY;
}
