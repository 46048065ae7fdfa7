/*
 * api.c - the request pipeline: header, version check, decode, handler,
 * encode (see api.h), and the ApiKey -> handler table.
 *
 * Kafka's rules for what cannot be served: an ApiVersions request of an
 * unknown version is answered in v0 form with UNSUPPORTED_VERSION and the
 * ApiVersions range (never a closed socket: librdkafka would retry forever);
 * an unknown API key, an unsupported version of any other API or a body
 * that does not parse closes that connection only.
 */
#include "broker/api.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/broker.h"
#include "broker/handlers.h"
#include "broker/stats.h"
#include "broker/throttle.h"
#include "proto/kerr.h"
#include "util/clock.h"
#include "util/log.h"

const struct api_entry api_table[API_COUNT] = {
	[API_Produce] = { h_produce, 0, 8 },
	[API_Fetch] = { h_fetch, 0, 11 },
	[API_ListOffsets] = { h_list_offsets, 0, 7 },
	[API_Metadata] = { h_metadata, 0, 8 },
	[API_ApiVersions] = { h_api_versions, 0, 3 },
	[API_CreateTopics] = { h_create_topics, 0, 4 },
	[API_DeleteTopics] = { h_delete_topics, 0, 3 },
	/* the controller's requests: cluster mode only (api_served), the versions Kafka 2.8+ controllers send */
	[API_LeaderAndIsr] = { h_leader_and_isr, 5, 5 },
	[API_UpdateMetadata] = { h_update_metadata, 5, 7 },
	[API_StopReplica] = { h_stop_replica, 3, 3 },
	/* a broker's request to the controller; v0 has a header without client id, not taken */
	[API_ControlledShutdown] = { h_controlled_shutdown, 1, 3 },
	/* on the active controller, cluster mode only (h_elect.c) */
	[API_AlterPartition] = { h_alter_partition, 0, 2 },
	[API_ElectLeaders] = { h_elect_leaders, 0, 2 },
	[API_AlterPartitionReassignments] = { h_alter_partition_reassignments, 0, 0 },
	[API_ListPartitionReassignments] = { h_list_partition_reassignments, 0, 0 },
	[API_DeleteRecords] = { h_delete_records, 0, 1 },
	[API_OffsetForLeaderEpoch] = { h_offset_for_leader_epoch, 0, 4 },
	[API_DescribeConfigs] = { h_describe_configs, 0, 2 },
	[API_AlterConfigs] = { h_alter_configs, 0, 1 },
	[API_CreatePartitions] = { h_create_partitions, 0, 1 },
	[API_IncrementalAlterConfigs] = { h_incremental_alter_configs, 0, 1 },
	[API_DescribeLogDirs] = { h_describe_log_dirs, 0, 4 },
	[API_DescribeCluster] = { h_describe_cluster, 0, 0 },
	[API_InitProducerId] = { h_init_producer_id, 0, 4 },
	/* transactions (h_txn.c) */
	[API_AddPartitionsToTxn] = { h_add_partitions_to_txn, 0, 4 },
	[API_AddOffsetsToTxn] = { h_add_offsets_to_txn, 0, 3 },
	[API_EndTxn] = { h_end_txn, 0, 3 },
	[API_TxnOffsetCommit] = { h_txn_offset_commit, 0, 3 },
	[API_DescribeTransactions] = { h_describe_transactions, 0, 0 },
	[API_ListTransactions] = { h_list_transactions, 0, 1 },
	/* transactions, partition side (h_txnadmin.c) */
	[API_DescribeProducers] = { h_describe_producers, 0, 0 },
	[API_WriteTxnMarkers] = { h_write_txn_markers, 0, 1 },
	[API_FindCoordinator] = { h_find_coordinator, 0, 4 },
	[API_JoinGroup] = { h_join_group, 0, 9 },
	[API_SyncGroup] = { h_sync_group, 0, 5 },
	[API_Heartbeat] = { h_heartbeat, 0, 4 },
	[API_LeaveGroup] = { h_leave_group, 0, 5 },
	[API_OffsetCommit] = { h_offset_commit, 0, 8 },
	[API_OffsetFetch] = { h_offset_fetch, 0, 8 },
	[API_DescribeGroups] = { h_describe_groups, 0, 5 },
	[API_ListGroups] = { h_list_groups, 0, 4 },
	[API_DeleteGroups] = { h_delete_groups, 0, 2 },
	[API_OffsetDelete] = { h_offset_delete, 0, 0 },
	/* client quotas (h_quota.c) */
	[API_DescribeClientQuotas] = { h_describe_client_quotas, 0, 1 },
	[API_AlterClientQuotas] = { h_alter_client_quotas, 0, 1 },
	/* ACLs (h_acl.c) */
	[API_DescribeAcls] = { h_describe_acls, 0, 3 },
	[API_CreateAcls] = { h_create_acls, 0, 3 },
	[API_DeleteAcls] = { h_delete_acls, 0, 3 },
	/* SASL listeners (h_sasl.c) */
	[API_SaslHandshake] = { h_sasl_handshake, 0, 1 },
	[API_SaslAuthenticate] = { h_sasl_authenticate, 0, 2 },
	/* SCRAM credentials (h_scram.c) */
	[API_DescribeUserScramCredentials] = { h_describe_user_scram_credentials, 0, 0 },
	[API_AlterUserScramCredentials] = { h_alter_user_scram_credentials, 0, 0 },
};

extern struct broker *api_broker; /* set by server.c */

void *req_alloc(struct req *rq, size_t count, size_t size)
{
	void *p = arena_calloc(&rq->arena, count ? count : 1, size);

	if (!p) {
		log_error("out of memory allocating %zu x %zu bytes for a request", count, size);
		abort();
	}
	return p;
}

struct kstr req_printf(struct req *rq, const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	int n;
	char *p;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n < 0)
		n = 0;
	if ((size_t)n >= sizeof(buf))
		n = (int)sizeof(buf) - 1;
	p = req_alloc(rq, (size_t)n + 1, 1);
	memcpy(p, buf, (size_t)n);
	return (struct kstr){ p, n };
}

const char *req_cstr(struct req *rq, struct kstr s)
{
	int32_t len = s.len > 0 ? s.len : 0;
	char *p = req_alloc(rq, (size_t)len + 1, 1);

	if (len)
		memcpy(p, s.p, (size_t)len);
	return p;
}

/* A Fetch from a follower broker (ReplicaId >= 0): counted as FetchFollower, as Kafka does. */
static bool req_from_follower(const struct req *rq)
{
	return rq->hdr.api_key == API_Fetch && rq->in && !rq->refused &&
	       ((const struct FetchRequest *)rq->in)->ReplicaId >= 0;
}

static void req_free(struct req *rq)
{
	stats_request(rq->hdr.api_key, rq->hdr.api_version, clock_mono_us() - rq->start_us, rq->refused,
		      req_from_follower(rq));
	if (rq->on_free)
		rq->on_free(rq);
	conn_put(rq->c);
	arena_release(&rq->arena);
	free(rq->frame);
	free(rq);
}

void req_reset_out(struct req *rq)
{
	const struct proto_api *pa = &proto_apis[rq->hdr.api_key];

	memset(rq->out, 0, pa->resp_size);
	pa->resp_init(rq->out);
}

static void req_send(struct req *rq, struct wr *w)
{
	if (w->err) {
		log_error("%s: out of memory encoding a response", conn_peer(rq->c));
		conn_close(rq->c, "response encoding failed");
		wr_release(w);
		return;
	}
	wr_patch_i32(w, 0, (int32_t)(wr_total(w) - 4));
	conn_slot_done(rq->c, rq->slot, w);
	wr_release(w);
}

static void req_send_reply(struct req *rq)
{
	const struct proto_api *pa = &proto_apis[rq->hdr.api_key];
	struct wr w;

	wr_init(&w);
	header_write_response(&w, rq->hdr.api_key, rq->hdr.api_version, rq->hdr.correlation_id);
	stats_response_errors(rq->hdr.api_key, rq->hdr.api_version, rq->out);
	pa->resp_encode(&w, rq->hdr.api_version, rq->out);
	req_send(rq, &w);
	req_free(rq);
}

/*
 * The request whose handler runs now, and since when: its time on the loop
 * until it is answered counts for request_percentage.  A request answered
 * later (parked) counts none: the handler may even free it before
 * returning, so nothing is written to it after.
 */
static struct req *req_running;
static int64_t req_running_us;

static void req_note_handler_time(struct req *rq)
{
	if (rq == req_running)
		rq->handler_us = clock_mono_us() - req_running_us;
}

static void req_throttled(struct loop_timer *t);

/* Replies held back for their throttle time (versions before KIP-219), so shutdown can free them. */
static struct req **req_held;
static int req_nheld, req_capheld;

static void req_hold(struct req *rq, int64_t ms)
{
	if (req_nheld == req_capheld) {
		int cap = req_capheld ? req_capheld * 2 : 16;
		struct req **n = realloc(req_held, (size_t)cap * sizeof(*n));

		if (!n) {
			req_send_reply(rq); /* answered now rather than lost */
			return;
		}
		req_held = n;
		req_capheld = cap;
	}
	req_held[req_nheld++] = rq;
	loop_timer_cancel(rq->b->loop, &rq->timer);
	loop_timer_init(&rq->timer, req_throttled);
	loop_timer_set(rq->b->loop, &rq->timer, clock_mono_ms() + ms);
}

static void req_unhold(struct req *rq)
{
	for (int i = 0; i < req_nheld; i++)
		if (req_held[i] == rq) {
			req_held[i] = req_held[--req_nheld];
			return;
		}
}

static void req_throttled(struct loop_timer *t)
{
	struct req *rq = (struct req *)((char *)t - offsetof(struct req, timer));

	req_unhold(rq);
	req_send_reply(rq);
}

void req_drop_held(void)
{
	while (req_nheld > 0) {
		struct req *rq = req_held[--req_nheld];

		loop_timer_cancel(rq->b->loop, &rq->timer);
		conn_slot_done(rq->c, rq->slot, NULL);
		req_free(rq);
	}
	free(req_held);
	req_held = NULL;
	req_capheld = 0;
}

void req_reply(struct req *rq)
{
	int64_t hold_ms;

	req_note_handler_time(rq);
	hold_ms = throttle_apply(rq, true);

	if (hold_ms <= 0) {
		req_send_reply(rq);
		return;
	}
	/* a client older than KIP-219 gets its answer when the throttle time is over */
	req_hold(rq, hold_ms);
}

void req_reply_after(struct req *rq, int64_t ms)
{
	req_note_handler_time(rq);
	if (ms <= 0)
		req_send_reply(rq);
	else
		req_hold(rq, ms);
}

void req_noreply(struct req *rq)
{
	req_note_handler_time(rq);
	throttle_apply(rq, false);
	conn_slot_done(rq->c, rq->slot, NULL);
	req_free(rq);
}

/* ApiVersions of a version we do not know: v0 body, UNSUPPORTED_VERSION. */
static void req_reply_apiversions_unsupported(struct req *rq)
{
	struct ApiVersionsResponse resp;
	struct ApiVersion key = {
		.ApiKey = API_ApiVersions,
		.MinVersion = api_table[API_ApiVersions].min,
		.MaxVersion = api_table[API_ApiVersions].max,
	};
	struct wr w;

	ApiVersionsResponse_init(&resp);
	resp.ErrorCode = KERR_UNSUPPORTED_VERSION;
	resp.ApiKeys.v = &key;
	resp.ApiKeys.n = 1;
	wr_init(&w);
	header_write_response(&w, API_ApiVersions, 0, rq->hdr.correlation_id);
	ApiVersionsResponse_encode(&w, 0, &resp);
	req_send(rq, &w);
	req_free(rq);
}

bool api_served(const struct broker *b, int16_t api_key)
{
	bool inter_broker = api_key == API_LeaderAndIsr || api_key == API_UpdateMetadata ||
			    api_key == API_StopReplica || api_key == API_ControlledShutdown ||
			    api_key == API_AlterPartition || api_key == API_ElectLeaders ||
			    api_key == API_AlterPartitionReassignments || api_key == API_ListPartitionReassignments;

	return api_key >= 0 && api_key < API_COUNT && api_table[api_key].handler && (!inter_broker || b->cluster);
}

static bool req_api_ok(const struct broker *b, const struct req_header *h)
{
	return api_served(b, h->api_key) && h->api_version >= api_table[h->api_key].min &&
	       h->api_version <= api_table[h->api_key].max;
}

static void req_reject(struct req *rq, const char *why)
{
	log_warn("%s: %s (api key %d version %d, client '%.*s')", conn_peer(rq->c), why, rq->hdr.api_key,
		 rq->hdr.api_version, rq->hdr.client_id.len > 0 ? rq->hdr.client_id.len : 0,
		 rq->hdr.client_id.p ? rq->hdr.client_id.p : "");
	rq->refused = true;
	conn_slot_done(rq->c, rq->slot, NULL);
	conn_close(rq->c, why);
	req_free(rq);
}

static void req_run(struct req *rq, struct rd *r)
{
	const struct proto_api *pa = &proto_apis[rq->hdr.api_key];

	rq->in = req_alloc(rq, 1, pa->req_size);
	rq->out = req_alloc(rq, 1, pa->resp_size);
	if (pa->req_decode(r, &rq->arena, rq->hdr.api_version, rq->in) < 0) {
		req_reject(rq, "malformed request body");
		return;
	}
	pa->resp_init(rq->out);
	log_debug(LOGC_PROTO, "proto", "%s: %s v%d corr %d", conn_peer(rq->c), pa->name, rq->hdr.api_version,
		  rq->hdr.correlation_id);
	req_running = rq;
	req_running_us = clock_mono_us();
	req_finish(rq, api_table[rq->hdr.api_key].handler(rq, rq->in, rq->out));
	req_running = NULL;
}

void req_finish(struct req *rq, int res)
{
	switch (res) {
	case H_REPLY:
		req_reply(rq);
		break;
	case H_NOREPLY:
		req_noreply(rq);
		break;
	case H_CLOSE:
		req_reject(rq, "request refused");
		break;
	case H_PARKED:
		break;
	}
}

void api_on_request(struct conn *c, struct conn_slot *slot, uint8_t *frame, int32_t len)
{
	struct req *rq;
	struct rd r;

	if (sasl_raw_token(api_broker, c, slot, frame, len))
		return;
	rq = calloc(1, sizeof(*rq));
	if (!rq) {
		free(frame);
		conn_slot_done(c, slot, NULL);
		conn_close(c, "out of memory");
		return;
	}
	rq->b = api_broker;
	rq->start_us = clock_mono_us();
	rq->c = conn_get(c);
	rq->slot = slot;
	rq->frame = frame;
	rq->frame_len = len;
	arena_init(&rq->arena, 0);
	loop_timer_init(&rq->timer, NULL);
	rd_init(&r, frame, (size_t)len);
	if (header_decode(&r, &rq->hdr) < 0) {
		req_reject(rq, "malformed request header");
		return;
	}
	if (conn_auth(c) != CONN_AUTH_DONE && rq->hdr.api_key != API_ApiVersions &&
	    rq->hdr.api_key != API_SaslHandshake && rq->hdr.api_key != API_SaslAuthenticate) {
		req_reject(rq, "request before SASL authentication");
		return;
	}
	if (conn_auth(c) == CONN_AUTH_DONE && conn_auth_expiry_ms(c) && rq->hdr.api_key != API_SaslHandshake &&
	    clock_mono_ms() >= conn_auth_expiry_ms(c)) {
		req_reject(rq, "SASL session expired without re-authentication (connections.max.reauth.ms)");
		return;
	}
	if (!req_api_ok(rq->b, &rq->hdr)) {
		if (rq->hdr.api_key == API_ApiVersions)
			req_reply_apiversions_unsupported(rq);
		else
			req_reject(rq, "unsupported api key or version");
		return;
	}
	req_run(rq, &r);
}
