/*
 * h_epoch.c - OffsetForLeaderEpoch (KIP-101, KIP-279, KIP-320): where a
 * leader epoch ends in this broker's log.  A follower asks it before
 * fetching, to find where its own log diverged from the leader's (the
 * truncation rule is epochs_truncation_offset()); a consumer asks it after
 * a leader change, to learn whether the log it read from was truncated.
 *
 * Served by the partition's leader only (elsewhere NOT_LEADER_OR_FOLLOWER,
 * as Kafka's ReplicaManager does for every asker).  CurrentLeaderEpoch
 * (v2+, -1 = no check) fences the asker against the current leader epoch
 * Metadata gives: older is FENCED_LEADER_EPOCH, newer UNKNOWN_LEADER_EPOCH.
 * ReplicaId (v3+: a follower's broker id, -1 for a consumer) changes
 * nothing in the answer: Kafka too serves both from the leader's log with
 * no high watermark bound (a consumer never reads past the high watermark
 * anyway).  The answer is the largest epoch <= LeaderEpoch and its end
 * offset (epochs.h), or -1/-1 (UNDEFINED) when there is none.
 */
#include <stdint.h>

#include "broker/authz.h"
#include "broker/broker.h"
#include "broker/handlers.h"
#include "broker/registry.h"
#include "log/partition.h"
#include "proto/kerr.h"

/* FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH for an asker whose current epoch is not ours, else NONE. */
static int16_t epoch_fence(int32_t asked, int32_t current)
{
	if (asked == -1)
		return KERR_NONE; /* no check asked (any other value below ours is fenced, as in Kafka) */
	if (asked < current)
		return KERR_FENCED_LEADER_EPOCH;
	return asked > current ? KERR_UNKNOWN_LEADER_EPOCH : KERR_NONE;
}

static void epoch_partition(struct req *rq, struct kstr name, struct topic *t, int16_t denied,
			    const struct OffsetForLeaderPartition *in, struct EpochEndOffset *out)
{
	struct part *part = t ? registry_part(t, in->Partition) : NULL;
	int32_t epoch;
	int64_t end;

	EpochEndOffset_init(out);
	out->Partition = in->Partition;
	if (denied) {
		out->ErrorCode = denied;
		return;
	}
	if (!part) {
		out->ErrorCode = t ? registry_part_error(t, in->Partition)
				   : registry_missing_error(rq->b->reg, name, in->Partition);
		return;
	}
	out->ErrorCode = epoch_fence(in->CurrentLeaderEpoch, registry_leader_epoch(rq->b->reg, t, in->Partition));
	if (out->ErrorCode || !part_epoch_end_offset(part, in->LeaderEpoch, &epoch, &end))
		return; /* -1/-1: UNDEFINED */
	out->LeaderEpoch = epoch;
	out->EndOffset = end;
}

int h_offset_for_leader_epoch(struct req *rq, const void *in, void *out)
{
	const struct OffsetForLeaderEpochRequest *ereq = in;
	struct OffsetForLeaderEpochResponse *resp = out;

	resp->Topics.n = ereq->Topics.n > 0 ? ereq->Topics.n : 0;
	resp->Topics.v = req_alloc(rq, (size_t)resp->Topics.n, sizeof(*resp->Topics.v));
	for (int32_t i = 0; i < resp->Topics.n; i++) {
		const struct OffsetForLeaderTopic *it = &ereq->Topics.v[i];
		struct OffsetForLeaderTopicResult *ot = &resp->Topics.v[i];
		struct topic *t = registry_find(rq->b->reg, it->Topic);
		/* a follower needs ClusterAction, a consumer Describe on the topic (as Kafka authorizes it) */
		int16_t denied = ereq->ReplicaId >= 0 ? authz_cluster_kerr(rq, ACL_OP_CLUSTER_ACTION)
						      : authz_topic_kerr(rq, it->Topic, ACL_OP_DESCRIBE);

		ot->Topic = it->Topic;
		ot->Partitions.n = it->Partitions.n > 0 ? it->Partitions.n : 0;
		ot->Partitions.v = req_alloc(rq, (size_t)ot->Partitions.n, sizeof(*ot->Partitions.v));
		for (int32_t j = 0; j < ot->Partitions.n; j++)
			epoch_partition(rq, it->Topic, t, denied, &it->Partitions.v[j], &ot->Partitions.v[j]);
	}
	return H_REPLY;
}
