/*
 * throttle.c - applies the client quotas (quota.h) to each request as it
 * is answered, as Kafka does:
 *
 *   Produce counts the request's bytes against producer_byte_rate, Fetch
 *   (from consumers, not replicas) the response's record bytes against
 *   consumer_byte_rate, and every request its handler time against
 *   request_percentage;
 *   the throttle time is the largest of those that apply; it goes into
 *   the response's ThrottleTimeMs and the connection is muted (not read)
 *   for that long;
 *   from the versions of KIP-219 on, the answer leaves at once and the
 *   client waits out the throttle time itself; before them the broker
 *   holds the answer back for the throttle time.
 */
#include "broker/throttle.h"

#include <string.h>

#include "broker/broker.h"
#include "broker/quota.h"
#include "util/clock.h"

/* The first version of each API whose client backs off by itself (KIP-219); 0 for the rest. */
static const int16_t throttle_kip219[API_COUNT] = {
	[API_Produce] = 6,          [API_Fetch] = 8,           [API_ListOffsets] = 3,        [API_Metadata] = 6,
	[API_OffsetCommit] = 4,     [API_OffsetFetch] = 4,     [API_FindCoordinator] = 2,    [API_JoinGroup] = 3,
	[API_Heartbeat] = 2,        [API_LeaveGroup] = 2,      [API_SyncGroup] = 2,          [API_DescribeGroups] = 2,
	[API_ListGroups] = 2,       [API_ApiVersions] = 2,     [API_CreateTopics] = 3,       [API_DeleteTopics] = 2,
	[API_DeleteRecords] = 1,    [API_InitProducerId] = 1,  [API_AddPartitionsToTxn] = 1, [API_AddOffsetsToTxn] = 1,
	[API_EndTxn] = 1,           [API_TxnOffsetCommit] = 1, [API_DescribeConfigs] = 2,    [API_AlterConfigs] = 1,
	[API_CreatePartitions] = 1, [API_DescribeLogDirs] = 1, [API_DeleteGroups] = 1,
};

static int64_t fetch_record_bytes(const struct FetchResponse *out)
{
	int64_t n = 0;

	for (int32_t t = 0; t < out->Responses.n; t++)
		for (int32_t p = 0; p < out->Responses.v[t].Partitions.n; p++) {
			const struct krecords *r = &out->Responses.v[t].Partitions.v[p].Records;

			n += r->file.ref ? r->file.len : (r->len > 0 ? r->len : 0);
		}
	return n;
}

/* Records value against (kind)'s quota for this client, if one applies; the throttle time. */
static int64_t throttle_kind(struct req *rq, int kind, double value, int64_t now_ms)
{
	char client[QUOTA_NAME_MAX + 1];
	struct quota_entity e;
	double bound;
	int32_t n = rq->hdr.client_id.len > 0 ? rq->hdr.client_id.len : 0;
	int64_t ms;

	if (n > QUOTA_NAME_MAX)
		n = QUOTA_NAME_MAX;
	memcpy(client, rq->hdr.client_id.p ? rq->hdr.client_id.p : "", (size_t)n);
	client[n] = '\0';
	if (!quota_resolve(kind, QUOTA_USER_ANONYMOUS, client, &bound, &e)) {
		e = (struct quota_entity){ .user = QUOTA_ABSENT, .client = QUOTA_NAME };
		memcpy(e.client_name, client, (size_t)n + 1);
		bound = 0; /* measured for /metrics, never throttled */
	}
	ms = quota_record(kind, &e, value, bound, now_ms);
	quota_note_throttle(kind, &e, ms);
	return ms;
}

int64_t throttle_apply(struct req *rq, bool reply)
{
	const struct proto_api *pa = &proto_apis[rq->hdr.api_key];
	int64_t now_us = clock_mono_us(), now_ms = now_us / 1000, ms;
	int16_t v = rq->hdr.api_version;

	ms = throttle_kind(rq, QUOTA_REQUEST, (double)rq->handler_us * 1e-4, now_ms);
	if (rq->hdr.api_key == API_Produce) {
		int64_t p = throttle_kind(rq, QUOTA_PRODUCE, (double)rq->frame_len + 4, now_ms);

		ms = p > ms ? p : ms;
	} else if (rq->hdr.api_key == API_Fetch && ((const struct FetchRequest *)rq->in)->ReplicaId < 0 && reply) {
		int64_t f = throttle_kind(rq, QUOTA_FETCH, (double)fetch_record_bytes(rq->out), now_ms);

		ms = f > ms ? f : ms;
	}
	if (ms <= 0)
		return 0;
	if (ms > INT32_MAX)
		ms = INT32_MAX;
	if (reply && pa->throttle_min >= 0 && v >= pa->throttle_min) {
		int32_t *field = (int32_t *)((char *)rq->out + pa->throttle_off);

		if (*field < ms)
			*field = (int32_t)ms;
	}
	conn_mute(rq->c, ms);
	return reply && v < throttle_kip219[rq->hdr.api_key] ? ms : 0;
}
