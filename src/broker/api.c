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

#include <stdlib.h>

#include "broker/broker.h"
#include "broker/handlers.h"
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
	req_send_encoded(rq, &w);
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

static void req_run(struct req *rq, struct rd *r)
{
	const struct proto_api *pa = &proto_apis[rq->hdr.api_key];

	rq->in = req_alloc(rq, 1, pa->req_size);
	rq->out = req_alloc(rq, 1, pa->resp_size);
	if (pa->req_decode(r, &rq->arena, rq->hdr.api_version, rq->in) < 0) {
		req_close(rq, "malformed request body");
		return;
	}
	pa->resp_init(rq->out);
	log_debug(LOGC_PROTO, "proto", "%s: %s v%d corr %d", conn_peer(rq->c), pa->name, rq->hdr.api_version,
		  rq->hdr.correlation_id);
	req_run_handler(rq, api_table[rq->hdr.api_key].handler);
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
		req_close(rq, "malformed request header");
		return;
	}
	if (conn_auth(c) != CONN_AUTH_DONE && rq->hdr.api_key != API_ApiVersions &&
	    rq->hdr.api_key != API_SaslHandshake && rq->hdr.api_key != API_SaslAuthenticate) {
		req_close(rq, "request before SASL authentication");
		return;
	}
	if (conn_auth(c) == CONN_AUTH_DONE && conn_auth_expiry_ms(c) && rq->hdr.api_key != API_SaslHandshake &&
	    clock_mono_ms() >= conn_auth_expiry_ms(c)) {
		req_close(rq, "SASL session expired without re-authentication (connections.max.reauth.ms)");
		return;
	}
	if (!req_api_ok(rq->b, &rq->hdr)) {
		if (rq->hdr.api_key == API_ApiVersions)
			req_reply_apiversions_unsupported(rq);
		else
			req_close(rq, "unsupported api key or version");
		return;
	}
	req_run(rq, &r);
}
