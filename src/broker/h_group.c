/*
 * h_group.c - the group APIs: JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetCommit, OffsetFetch, DescribeGroups,
 * ListGroups, DeleteGroups, OffsetDelete.
 *
 * The handlers translate between the wire structs and the coordinator
 * (coord/group.h).  On a single node this broker is the coordinator of
 * every group: the internal topic __consumer_offsets is created on the
 * first group request (as Kafka does on the first FindCoordinator), with
 * offsets.topic.num.partitions partitions, cleanup.policy=compact and no
 * time retention (compaction is not implemented, so retention must not
 * delete the latest offsets), and read back at start-up.
 *
 * In cluster mode the first FindCoordinator that needs the topic writes it
 * to ZooKeeper like any topic (replication factor
 * offsets.topic.replication.factor, clamped to the live brokers), and a
 * group's coordinator is the leader of its partition
 * (coord_partition_for()): the broker loads a partition's groups when it
 * becomes its leader and forgets them when it stops (groups_on_role), and
 * an OffsetCommit is answered once the partition's high watermark covers
 * it, as an acks=all produce (replica.h).
 *
 * JoinGroup and SyncGroup park until the coordinator answers through
 * h_group_join_done / h_group_sync_done (possibly before group_join()
 * returns: the handler then must not touch rq again).  OffsetCommit is
 * answered after its append, and under the durable flush policy (see
 * broker/park.h) only once the fsync round covering it is done.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "broker/authz.h"
#include "broker/broker.h"
#include "broker/creator.h"
#include "broker/handlers.h"
#include "broker/park.h"
#include "broker/registry.h"
#include "broker/replica.h"
#include "broker/syncer.h"
#include "cluster/mcache.h"
#include "coord/group.h"
#include "coord/group_store.h"
#include "log/partition.h"
#include "proto/kerr.h"
#include "util/clock.h"
#include "util/log.h"

#define GROUP_OFFSET_METADATA_MAX_BYTES 4096                  /* Kafka's offset.metadata.max.bytes */
#define GROUP_AUTHORIZED_OPS ((1 << 3) | (1 << 6) | (1 << 8)) /* READ, DELETE, DESCRIBE */

/* ---- start, stop and the coordinator preamble ---- */

static struct kstr h_group_kdup(struct req *rq, struct kstr s)
{
	if (!s.p || s.len < 0)
		return KSTR_NULL;
	return (struct kstr){ arena_strndup(&rq->arena, s.p, (size_t)s.len), s.len };
}

static struct bytes h_group_bdup(struct req *rq, struct bytes b)
{
	uint8_t *p;

	if (!b.p || b.len <= 0)
		return (struct bytes){ (const uint8_t *)"", 0 };
	p = req_alloc(rq, (size_t)b.len, 1);
	memcpy(p, b.p, (size_t)b.len);
	return (struct bytes){ p, b.len };
}

static void h_group_join_done(void *waiter, const struct group_join_result *res)
{
	struct req *rq = waiter;
	struct JoinGroupResponse *out = rq->out;

	out->ErrorCode = res->error;
	out->GenerationId = res->generation;
	out->ProtocolType = h_group_kdup(rq, res->protocol_type);
	out->ProtocolName = h_group_kdup(rq, res->protocol_name);
	if (!out->ProtocolName.p && rq->hdr.api_version < 7)
		out->ProtocolName = KSTR("");
	out->Leader = h_group_kdup(rq, res->leader);
	out->MemberId = h_group_kdup(rq, res->member_id);
	out->Members.n = res->nmembers;
	out->Members.v = req_alloc(rq, (size_t)res->nmembers, sizeof(*out->Members.v));
	for (int32_t i = 0; i < res->nmembers; i++) {
		out->Members.v[i].MemberId = h_group_kdup(rq, res->members[i].member_id);
		out->Members.v[i].GroupInstanceId = h_group_kdup(rq, res->members[i].group_instance_id);
		out->Members.v[i].Metadata = h_group_bdup(rq, res->members[i].metadata);
	}
	req_reply(rq);
}

static void h_group_sync_done(void *waiter, const struct group_sync_result *res)
{
	struct req *rq = waiter;
	struct SyncGroupResponse *out = rq->out;

	out->ErrorCode = res->error;
	out->ProtocolType = h_group_kdup(rq, res->protocol_type);
	out->ProtocolName = h_group_kdup(rq, res->protocol_name);
	out->Assignment = h_group_bdup(rq, res->assignment);
	req_reply(rq);
}

/* coord_topic.part of __consumer_offsets: looked up on every write, never cached */
static struct part *h_group_offsets_part(void *arg, int32_t partition)
{
	struct broker *b = arg;
	struct topic *t = registry_find(b->reg, KSTR(GROUP_STORE_TOPIC));

	return t ? registry_part(t, partition) : NULL;
}

static int h_group_attach_cluster(struct broker *b);

/*
 * Opens __consumer_offsets and loads the groups.  -EAGAIN while the topic
 * is being made (begun here when create, off the event loop: creator.h):
 * the coordinator answers COORDINATOR_NOT_AVAILABLE meanwhile, which
 * clients retry after looking the coordinator up again.
 */
static int h_group_attach(struct broker *b, bool create)
{
	struct topic *t = registry_find(b->reg, KSTR(GROUP_STORE_TOPIC));
	struct reg_build *build;
	struct topic_cfg tc;
	char segment[24], err_msg[256];
	int err = 0;

	if (b->cluster)
		return h_group_attach_cluster(b);
	if (!t && !create)
		return 0;
	if (!t) {
		snprintf(segment, sizeof(segment), "%d", b->cfg.offsets_topic_segment_bytes);
		err = topic_cfg_init(&tc, &b->cfg);
		if (!err)
			err = topic_cfg_set(&tc, "cleanup.policy", "compact", err_msg, sizeof(err_msg));
		if (!err)
			err = topic_cfg_set(&tc, "segment.bytes", segment, err_msg, sizeof(err_msg));
		if (!err)
			err = topic_cfg_set(&tc, "retention.ms", "-1", err_msg, sizeof(err_msg));
		if (!err)
			err = creator_create(b->creator, KSTR(GROUP_STORE_TOPIC), b->cfg.offsets_topic_num_partitions,
					     &tc, &build);
		topic_cfg_release(&tc);
		if (err) {
			log_error("cannot create %s: %s", GROUP_STORE_TOPIC, strerror(-err));
			return err;
		}
		log_info("creating %s with %d partitions", GROUP_STORE_TOPIC, b->cfg.offsets_topic_num_partitions);
		return -EAGAIN;
	}
	if (t->creating)
		return -EAGAIN;
	return group_coord_attach(b->groups, &(struct coord_topic){ h_group_offsets_part, b, t->nparts });
}

/* Cluster mode: attaches once the topic is here and its partition count known; then takes the roles held. */
static int h_group_attach_cluster(struct broker *b)
{
	struct topic *t = registry_find(b->reg, KSTR(GROUP_STORE_TOPIC));
	const struct mcache_topic *mt =
		b->mcache ? mcache_topic(b->mcache, GROUP_STORE_TOPIC, sizeof(GROUP_STORE_TOPIC) - 1) : NULL;
	int err;

	if (!t || t->creating || !mt || mt->nparts < 1)
		return -EAGAIN; /* the controller's LeaderAndIsr and UpdateMetadata make and name it */
	err = group_coord_attach_unowned(b->groups, &(struct coord_topic){ h_group_offsets_part, b, mt->nparts });
	for (int32_t p = 0; !err && p < mt->nparts; p++) {
		struct replica *r = replica_find(b, GROUP_STORE_TOPIC, p);

		if (r && r->leader == b->node_id && r->applied_epoch == r->leader_epoch)
			group_coord_set_leader(b->groups, p, true);
	}
	return err;
}

void groups_on_role(struct broker *b, const char *topic, int32_t partition, bool leader)
{
	if (!b->groups || strcmp(topic, GROUP_STORE_TOPIC) != 0)
		return;
	if (!group_coord_attached(b->groups)) {
		h_group_attach_cluster(b); /* takes every role held, this one too */
		return;
	}
	group_coord_set_leader(b->groups, partition, leader);
}

int groups_start(struct broker *b)
{
	static const struct group_coord_ops ops = { h_group_join_done, h_group_sync_done };
	struct group_coord_cfg gcfg = {
		.initial_rebalance_delay_ms = b->cfg.group_initial_rebalance_delay_ms,
		.min_session_timeout_ms = b->cfg.group_min_session_timeout_ms,
		.max_session_timeout_ms = b->cfg.group_max_session_timeout_ms,
		.max_size = b->cfg.group_max_size,
		.offsets_retention_ms = (int64_t)b->cfg.offsets_retention_minutes * 60000,
		.retention_check_interval_ms = b->cfg.offsets_retention_check_interval_ms,
	};
	int err = group_coord_new(b->loop, &gcfg, &ops, &b->groups);

	if (!err)
		err = replica_on_role(groups_on_role);
	/* b->cluster is made later (server_cluster_start): a restarted cluster broker must not load
	 * every partition of its local replica and coordinate them all, so tell the mode by the config */
	if (!err && !b->cfg.zookeeper_connect)
		err = h_group_attach(b, false);
	return err; /* cluster mode: attached once the controller named the topic's leaders */
}

void groups_stop(struct broker *b)
{
	group_coord_free(b->groups);
	b->groups = NULL;
}

/* The shared preamble: the coordinator, with __consumer_offsets open; NULL if it cannot be. */
struct group_coord *groups_coord(struct broker *b)
{
	if (registry_dir_failed(b->reg))
		return NULL; /* offsets appended but never synced must not be served */
	if (!group_coord_attached(b->groups) && h_group_attach(b, true) < 0)
		return NULL;
	return group_coord_attached(b->groups) ? b->groups : NULL;
}

int32_t groups_partition_for(struct broker *b, struct kstr group)
{
	const struct mcache_topic *mt =
		b->cluster && b->mcache ? mcache_topic(b->mcache, GROUP_STORE_TOPIC, sizeof(GROUP_STORE_TOPIC) - 1)
					: NULL;
	struct group_coord *gc;

	if (b->cluster && b->mcache) /* the group's coordinator may be elsewhere; the topic made as configured */
		return coord_partition_for(group,
					   mt && mt->nparts > 0 ? mt->nparts : b->cfg.offsets_topic_num_partitions);
	gc = groups_coord(b); /* begins making the topic if needed */
	struct topic *t = gc ? NULL : registry_find(b->reg, KSTR(GROUP_STORE_TOPIC));

	if (gc)
		return group_coord_partition(gc, group);
	return t && t->creating && t->nparts_next > 0 ? group_store_partition_for(group, t->nparts_next) : -1;
}

static struct group_coord *h_group_coord(struct req *rq)
{
	return groups_coord(rq->b);
}

/* ---- JoinGroup, SyncGroup, Heartbeat, LeaveGroup ---- */

/* Kafka's client host: "/" + the peer's address without the port. */
static struct kstr h_group_client_host(struct req *rq)
{
	const char *peer = conn_peer(rq->c), *colon = strrchr(peer, ':');
	size_t n = colon ? (size_t)(colon - peer) : strlen(peer);
	char *s = req_alloc(rq, n + 2, 1);

	s[0] = '/';
	memcpy(s + 1, peer, n);
	return (struct kstr){ s, (int32_t)n + 1 };
}

int h_join_group(struct req *rq, const void *in, void *out)
{
	const struct JoinGroupRequest *j = in;
	struct group_coord *gc = h_group_coord(rq);
	struct group_protocol_arg *protos;
	struct group_join_args a = {
		.group_id = j->GroupId,
		.member_id = j->MemberId,
		.group_instance_id = j->GroupInstanceId,
		.protocol_type = j->ProtocolType,
		.client_id = rq->hdr.client_id,
		.client_host = h_group_client_host(rq),
		.session_timeout_ms = j->SessionTimeoutMs,
		.rebalance_timeout_ms = rq->hdr.api_version >= 1 ? j->RebalanceTimeoutMs : j->SessionTimeoutMs,
		.require_known_member_id = rq->hdr.api_version >= 4,
	};

	if (!gc || authz_group_kerr(rq, j->GroupId, ACL_OP_READ)) {
		((struct JoinGroupResponse *)out)->ErrorCode =
			gc ? KERR_GROUP_AUTHORIZATION_FAILED : KERR_COORDINATOR_NOT_AVAILABLE;
		((struct JoinGroupResponse *)out)->ProtocolName = KSTR("");
		return H_REPLY;
	}
	a.nprotocols = j->Protocols.n > 0 ? j->Protocols.n : 0;
	protos = req_alloc(rq, (size_t)a.nprotocols, sizeof(*protos));
	for (int32_t i = 0; i < a.nprotocols; i++)
		protos[i] = (struct group_protocol_arg){ j->Protocols.v[i].Name, j->Protocols.v[i].Metadata };
	a.protocols = protos;
	group_join(gc, &a, rq); /* may reply (and free rq) before it returns */
	return H_PARKED;
}

int h_sync_group(struct req *rq, const void *in, void *out)
{
	const struct SyncGroupRequest *s = in;
	struct group_coord *gc = h_group_coord(rq);
	struct group_sync_assignment *as;
	struct group_sync_args a = {
		.group_id = s->GroupId,
		.member_id = s->MemberId,
		.group_instance_id = s->GroupInstanceId,
		.protocol_type = s->ProtocolType,
		.protocol_name = s->ProtocolName,
		.generation = s->GenerationId,
	};

	if (!gc || authz_group_kerr(rq, s->GroupId, ACL_OP_READ)) {
		((struct SyncGroupResponse *)out)->ErrorCode =
			gc ? KERR_GROUP_AUTHORIZATION_FAILED : KERR_COORDINATOR_NOT_AVAILABLE;
		return H_REPLY;
	}
	a.nassignments = s->Assignments.n > 0 ? s->Assignments.n : 0;
	as = req_alloc(rq, (size_t)a.nassignments, sizeof(*as));
	for (int32_t i = 0; i < a.nassignments; i++)
		as[i] = (struct group_sync_assignment){ s->Assignments.v[i].MemberId, s->Assignments.v[i].Assignment };
	a.assignments = as;
	group_sync(gc, &a, rq); /* may reply (and free rq) before it returns */
	return H_PARKED;
}

int h_heartbeat(struct req *rq, const void *in, void *out)
{
	const struct HeartbeatRequest *h = in;
	struct HeartbeatResponse *resp = out;
	struct group_coord *gc = h_group_coord(rq);

	if (!h->GroupId.p || h->GroupId.len == 0)
		resp->ErrorCode = KERR_INVALID_GROUP_ID;
	else if (!(resp->ErrorCode = authz_group_kerr(rq, h->GroupId, ACL_OP_READ)))
		resp->ErrorCode = gc ? group_heartbeat(gc, h->GroupId, h->MemberId, h->GroupInstanceId, h->GenerationId)
				     : KERR_COORDINATOR_NOT_AVAILABLE;
	return H_REPLY;
}

int h_leave_group(struct req *rq, const void *in, void *out)
{
	const struct LeaveGroupRequest *l = in;
	struct LeaveGroupResponse *resp = out;
	struct group_coord *gc = h_group_coord(rq);

	if (!l->GroupId.p || l->GroupId.len == 0 || !gc) {
		resp->ErrorCode = gc ? KERR_INVALID_GROUP_ID : KERR_COORDINATOR_NOT_AVAILABLE;
		return H_REPLY;
	}
	if ((resp->ErrorCode = authz_group_kerr(rq, l->GroupId, ACL_OP_READ)))
		return H_REPLY;
	if (rq->hdr.api_version < 3) {
		resp->ErrorCode = group_leave(gc, l->GroupId, l->MemberId, KSTR_NULL);
		return H_REPLY;
	}
	resp->Members.n = l->Members.n > 0 ? l->Members.n : 0;
	resp->Members.v = req_alloc(rq, (size_t)resp->Members.n, sizeof(*resp->Members.v));
	for (int32_t i = 0; i < resp->Members.n; i++) {
		const struct LeaveGroupRequestMember *m = &l->Members.v[i];

		resp->Members.v[i].MemberId = m->MemberId;
		resp->Members.v[i].GroupInstanceId = m->GroupInstanceId;
		resp->Members.v[i].ErrorCode = group_leave(gc, l->GroupId, m->MemberId, m->GroupInstanceId);
	}
	return H_REPLY;
}

/* ---- OffsetCommit ---- */

static struct OffsetCommitResponseTopic *h_group_commit_shape(struct req *rq, const struct OffsetCommitRequest *c,
							      struct OffsetCommitResponse *resp, int16_t err)
{
	resp->Topics.n = c->Topics.n > 0 ? c->Topics.n : 0;
	resp->Topics.v = req_alloc(rq, (size_t)resp->Topics.n, sizeof(*resp->Topics.v));
	for (int32_t i = 0; i < resp->Topics.n; i++) {
		struct OffsetCommitResponseTopic *ot = &resp->Topics.v[i];

		ot->Name = c->Topics.v[i].Name;
		ot->Partitions.n = c->Topics.v[i].Partitions.n > 0 ? c->Topics.v[i].Partitions.n : 0;
		ot->Partitions.v = req_alloc(rq, (size_t)ot->Partitions.n, sizeof(*ot->Partitions.v));
		for (int32_t j = 0; j < ot->Partitions.n; j++) {
			ot->Partitions.v[j].PartitionIndex = c->Topics.v[i].Partitions.v[j].PartitionIndex;
			ot->Partitions.v[j].ErrorCode = err;
		}
	}
	return resp->Topics.v;
}

/* A failed fsync round: the commits are not durable. */
static void h_group_commit_fail(struct req *rq)
{
	struct OffsetCommitResponse *resp = rq->out;

	for (int32_t i = 0; i < resp->Topics.n; i++)
		for (int32_t j = 0; j < resp->Topics.v[i].Partitions.n; j++)
			if (resp->Topics.v[i].Partitions.v[j].ErrorCode == KERR_NONE)
				resp->Topics.v[i].Partitions.v[j].ErrorCode = KERR_COORDINATOR_NOT_AVAILABLE;
}

/*
 * Cluster mode: the commits are answered once the high watermark of their
 * __consumer_offsets partition passes need, as an acks=all produce.
 */
static int h_group_commit_wait(struct req *rq, int32_t partition, int64_t need, uint64_t ticket)
{
	struct OffsetCommitResponse *resp = rq->out;

	for (int32_t i = 0; i < resp->Topics.n; i++)
		for (int32_t j = 0; j < resp->Topics.v[i].Partitions.n; j++)
			if (resp->Topics.v[i].Partitions.v[j].ErrorCode == KERR_NONE)
				replica_wait_add(rq, KSTR(GROUP_STORE_TOPIC), partition, need,
						 &resp->Topics.v[i].Partitions.v[j].ErrorCode, true);
	if (!rq->hold)
		return park_until_synced(rq, ticket, h_group_commit_fail);
	return replica_park(rq, ticket, rq->b->cfg.offsets_commit_timeout_ms, h_group_commit_fail);
}

/* Validates each partition; collects the acceptable ones into offs (OUT: count). */
static int h_group_commit_collect(struct req *rq, const struct OffsetCommitRequest *c,
				  struct OffsetCommitResponse *resp, struct group_offset *offs)
{
	int64_t now = clock_wall_ms();
	int n = 0;

	for (int32_t i = 0; i < resp->Topics.n; i++) {
		const struct OffsetCommitRequestTopic *it = &c->Topics.v[i];
		char *name = it->Name.p ? arena_strndup(&rq->arena, it->Name.p, (size_t)it->Name.len) : NULL;

		for (int32_t j = 0; j < resp->Topics.v[i].Partitions.n; j++) {
			const struct OffsetCommitRequestPartition *ip = &it->Partitions.v[j];
			struct group_offset *o = &offs[n];

			if (!authz_topic(rq, it->Name, ACL_OP_READ)) {
				resp->Topics.v[i].Partitions.v[j].ErrorCode = KERR_TOPIC_AUTHORIZATION_FAILED;
				continue;
			}
			if (!name || !registry_part_known(rq->b->reg, it->Name, ip->PartitionIndex)) {
				resp->Topics.v[i].Partitions.v[j].ErrorCode = KERR_UNKNOWN_TOPIC_OR_PARTITION;
				continue;
			}
			if (ip->CommittedMetadata.len > GROUP_OFFSET_METADATA_MAX_BYTES) {
				resp->Topics.v[i].Partitions.v[j].ErrorCode = KERR_OFFSET_METADATA_TOO_LARGE;
				continue;
			}
			o->topic = name;
			o->partition = ip->PartitionIndex;
			o->offset = ip->CommittedOffset;
			o->leader_epoch = ip->CommittedLeaderEpoch;
			o->metadata = ip->CommittedMetadata.p ? arena_strndup(&rq->arena, ip->CommittedMetadata.p,
									      (size_t)ip->CommittedMetadata.len)
							      : NULL;
			o->commit_ts_ms = ip->CommitTimestamp >= 0 ? ip->CommitTimestamp : now;
			n++;
		}
	}
	return n;
}

int h_offset_commit(struct req *rq, const void *in, void *out)
{
	const struct OffsetCommitRequest *c = in;
	struct OffsetCommitResponse *resp = out;
	struct group_coord *gc = h_group_coord(rq);
	struct group *grp = NULL;
	struct group_offset *offs;
	struct part *part = NULL;
	int16_t err = gc ? KERR_NONE : KERR_COORDINATOR_NOT_AVAILABLE;
	uint64_t ticket = 0;
	int n, total = 0;

	if (!err)
		err = authz_group_kerr(rq, c->GroupId, ACL_OP_READ);
	if (!err)
		err = group_commit_check(gc, c->GroupId, c->MemberId, c->GroupInstanceId, c->GenerationIdOrMemberEpoch,
					 &grp);
	h_group_commit_shape(rq, c, resp, err);
	if (err)
		return H_REPLY;
	for (int32_t i = 0; i < resp->Topics.n; i++)
		total += resp->Topics.v[i].Partitions.n;
	offs = req_alloc(rq, (size_t)total, sizeof(*offs));
	n = h_group_commit_collect(rq, c, resp, offs);
	if (n && group_commit(gc, grp, offs, n, &part) < 0) {
		h_group_commit_fail(rq);
		return H_REPLY;
	}
	if (part && park_sync_on_ack(&rq->b->cfg))
		ticket = syncer_want(rq->b->syncer, part);
	if (part && rq->b->repl)
		return h_group_commit_wait(rq, group_coord_partition(gc, c->GroupId), part_log_end_offset(part),
					   ticket);
	return park_until_synced(rq, ticket, h_group_commit_fail);
}

/* ---- OffsetFetch ---- */

/* One partition's answer, the same for every OffsetFetch version. */
struct h_group_fetched {
	int32_t partition;
	int64_t offset;
	int32_t leader_epoch;
	struct kstr metadata;
	int16_t error;
};

static void h_group_fetch_one(const struct group *grp, struct kstr topic, int32_t partition, bool require_stable,
			      struct h_group_fetched *f)
{
	const struct group_offset *o = grp ? group_store_offset_get(group_offsets(grp), topic, partition) : NULL;

	*f = (struct h_group_fetched){ partition, -1, -1, KSTR(""), KERR_NONE };
	if (grp && require_stable && group_store_offset_pending(group_offsets(grp), topic, partition)) {
		f->error = KERR_UNSTABLE_OFFSET_COMMIT;
		return;
	}
	if (o) {
		f->offset = o->offset;
		f->leader_epoch = o->leader_epoch;
		f->metadata = kstr_c(o->metadata);
	}
}

/*
 * Answers for a list of topics (names[i], parts[i]) or, when ntopics < 0,
 * for every committed offset of grp.  OUT: *names_out, *counts_out and one
 * array of answers per topic, all from the request arena.  Returns the
 * number of topics.
 */
static int32_t h_group_fetch_group(struct req *rq, const struct group *grp, const struct kstr *names,
				   const struct int32_array *parts, int32_t ntopics, bool require_stable,
				   struct kstr **names_out, struct h_group_fetched ***answers, int32_t **counts)
{
	const struct group_offsets *go = grp ? group_offsets(grp) : NULL;

	if (ntopics < 0) { /* all: one topic per run of equal names in the sorted table */
		ntopics = 0;
		for (int i = 0; go && i < go->n; i++)
			ntopics += i == 0 || strcmp(go->v[i].topic, go->v[i - 1].topic);
		*names_out = req_alloc(rq, (size_t)ntopics, sizeof(**names_out));
		*answers = req_alloc(rq, (size_t)ntopics, sizeof(**answers));
		*counts = req_alloc(rq, (size_t)ntopics, sizeof(**counts));
		for (int i = 0, t = -1; go && i < go->n; i++) {
			if (i == 0 || strcmp(go->v[i].topic, go->v[i - 1].topic)) {
				t++;
				(*names_out)[t] = kstr_c(go->v[i].topic);
				(*answers)[t] = req_alloc(rq, (size_t)go->n, sizeof(***answers));
			}
			h_group_fetch_one(grp, (*names_out)[t], go->v[i].partition, require_stable,
					  &(*answers)[t][(*counts)[t]++]);
		}
		return ntopics;
	}
	*names_out = req_alloc(rq, (size_t)ntopics, sizeof(**names_out));
	*answers = req_alloc(rq, (size_t)ntopics, sizeof(**answers));
	*counts = req_alloc(rq, (size_t)ntopics, sizeof(**counts));
	for (int32_t t = 0; t < ntopics; t++) {
		int32_t n = parts[t].n > 0 ? parts[t].n : 0;

		(*names_out)[t] = names[t];
		(*counts)[t] = n;
		(*answers)[t] = req_alloc(rq, (size_t)n, sizeof(***answers));
		for (int32_t j = 0; j < n; j++)
			h_group_fetch_one(grp, names[t], parts[t].v[j], require_stable, &(*answers)[t][j]);
	}
	return ntopics;
}

/* OffsetFetch v0-7: one group. */
static void h_group_fetch_v0(struct req *rq, struct group_coord *gc, const struct OffsetFetchRequest *f,
			     struct OffsetFetchResponse *resp)
{
	int32_t nt = f->Topics.n;
	struct kstr *names = req_alloc(rq, (size_t)(nt > 0 ? nt : 0), sizeof(*names)), *outn;
	struct int32_array *parts = req_alloc(rq, (size_t)(nt > 0 ? nt : 0), sizeof(*parts));
	struct h_group_fetched **ans;
	int32_t *counts;

	for (int32_t i = 0; i < nt; i++) {
		names[i] = f->Topics.v[i].Name;
		parts[i] = f->Topics.v[i].PartitionIndexes;
	}
	nt = h_group_fetch_group(rq, group_find(gc, f->GroupId), names, parts, nt, f->RequireStable, &outn, &ans,
				 &counts);
	resp->Topics.n = nt;
	resp->Topics.v = req_alloc(rq, (size_t)nt, sizeof(*resp->Topics.v));
	for (int32_t i = 0; i < nt; i++) {
		struct OffsetFetchResponseTopic *ot = &resp->Topics.v[i];

		ot->Name = outn[i];
		ot->Partitions.n = counts[i];
		ot->Partitions.v = req_alloc(rq, (size_t)counts[i], sizeof(*ot->Partitions.v));
		for (int32_t j = 0; j < counts[i]; j++)
			ot->Partitions.v[j] =
				(struct OffsetFetchResponsePartition){ ans[i][j].partition, ans[i][j].offset,
								       ans[i][j].leader_epoch, ans[i][j].metadata,
								       ans[i][j].error };
	}
}

/* OffsetFetch v8+: several groups. */
static void h_group_fetch_v8(struct req *rq, struct group_coord *gc, const struct OffsetFetchRequestGroup *g,
			     bool require_stable, struct OffsetFetchResponseGroup *og)
{
	int32_t nt = g->Topics.n;
	struct kstr *names = req_alloc(rq, (size_t)(nt > 0 ? nt : 0), sizeof(*names)), *outn;
	struct int32_array *parts = req_alloc(rq, (size_t)(nt > 0 ? nt : 0), sizeof(*parts));
	struct h_group_fetched **ans;
	int32_t *counts;

	for (int32_t i = 0; i < nt; i++) {
		names[i] = g->Topics.v[i].Name;
		parts[i] = g->Topics.v[i].PartitionIndexes;
	}
	nt = h_group_fetch_group(rq, group_find(gc, g->GroupId), names, parts, nt, require_stable, &outn, &ans,
				 &counts);
	og->GroupId = g->GroupId;
	og->Topics.n = nt;
	og->Topics.v = req_alloc(rq, (size_t)nt, sizeof(*og->Topics.v));
	for (int32_t i = 0; i < nt; i++) {
		struct OffsetFetchResponseGroupTopic *ot = &og->Topics.v[i];

		ot->Name = outn[i];
		ot->Partitions.n = counts[i];
		ot->Partitions.v = req_alloc(rq, (size_t)counts[i], sizeof(*ot->Partitions.v));
		for (int32_t j = 0; j < counts[i]; j++)
			ot->Partitions.v[j] =
				(struct OffsetFetchResponseGroupPartition){ ans[i][j].partition, ans[i][j].offset,
									    ans[i][j].leader_epoch, ans[i][j].metadata,
									    ans[i][j].error };
	}
}

/* OffsetFetch and DescribeGroups of one group: may it be read, here? */
static int16_t h_group_read_kerr(struct req *rq, struct group_coord *gc, struct kstr group_id)
{
	int16_t err = gc ? authz_group_kerr(rq, group_id, ACL_OP_DESCRIBE) : KERR_COORDINATOR_NOT_AVAILABLE;

	return err ? err : group_coord_owner_kerr(gc, group_id);
}

int h_offset_fetch(struct req *rq, const void *in, void *out)
{
	const struct OffsetFetchRequest *f = in;
	struct OffsetFetchResponse *resp = out;
	struct group_coord *gc = h_group_coord(rq);

	if (rq->hdr.api_version < 8) {
		resp->ErrorCode = h_group_read_kerr(rq, gc, f->GroupId);
		if (!resp->ErrorCode)
			h_group_fetch_v0(rq, gc, f, resp);
		return H_REPLY;
	}
	resp->Groups.n = f->Groups.n > 0 ? f->Groups.n : 0;
	resp->Groups.v = req_alloc(rq, (size_t)resp->Groups.n, sizeof(*resp->Groups.v));
	for (int32_t i = 0; i < resp->Groups.n; i++) {
		OffsetFetchResponseGroup_init(&resp->Groups.v[i]);
		resp->Groups.v[i].GroupId = f->Groups.v[i].GroupId;
		resp->Groups.v[i].ErrorCode = h_group_read_kerr(rq, gc, f->Groups.v[i].GroupId);
		if (!resp->Groups.v[i].ErrorCode)
			h_group_fetch_v8(rq, gc, &f->Groups.v[i], f->RequireStable, &resp->Groups.v[i]);
	}
	return H_REPLY;
}

/* ---- DescribeGroups, ListGroups, DeleteGroups, OffsetDelete ---- */

static void h_group_describe_one(struct req *rq, struct group_coord *gc, struct kstr id, bool ops,
				 struct DescribeGroupsResponseGroup *og)
{
	struct group *grp = gc ? group_find(gc, id) : NULL;
	struct group_member_info *infos;
	int32_t n;

	DescribeGroupsResponseGroup_init(og);
	og->GroupId = id;
	og->AuthorizedOperations = ops ? authz_ops(rq, ACL_RES_GROUP, id, GROUP_AUTHORIZED_OPS) : INT32_MIN;
	if (!gc)
		og->ErrorCode = KERR_COORDINATOR_NOT_AVAILABLE;
	else if ((og->ErrorCode = h_group_read_kerr(rq, gc, id)))
		return;
	if (!grp) { /* Kafka: an unknown group is described as Dead, without an error */
		og->GroupState = kstr_c(group_state_name(GROUP_DEAD));
		return;
	}
	og->GroupState = kstr_c(group_state_name(group_state(grp)));
	og->ProtocolType = kstr_c(group_protocol_type(grp) ? group_protocol_type(grp) : "");
	if (group_state(grp) == GROUP_STABLE && group_protocol_name(grp))
		og->ProtocolData = kstr_c(group_protocol_name(grp));
	n = group_member_count(grp);
	infos = req_alloc(rq, (size_t)n, sizeof(*infos));
	group_members(grp, infos); /* views: encoded before the group can change */
	og->Members.n = n;
	og->Members.v = req_alloc(rq, (size_t)n, sizeof(*og->Members.v));
	for (int32_t i = 0; i < n; i++)
		og->Members.v[i] =
			(struct DescribeGroupsResponseMember){ infos[i].member_id, infos[i].group_instance_id,
							       infos[i].client_id, infos[i].client_host,
							       infos[i].metadata,  infos[i].assignment };
}

int h_describe_groups(struct req *rq, const void *in, void *out)
{
	const struct DescribeGroupsRequest *d = in;
	struct DescribeGroupsResponse *resp = out;
	struct group_coord *gc = h_group_coord(rq);

	resp->Groups.n = d->Groups.n > 0 ? d->Groups.n : 0;
	resp->Groups.v = req_alloc(rq, (size_t)resp->Groups.n, sizeof(*resp->Groups.v));
	for (int32_t i = 0; i < resp->Groups.n; i++)
		h_group_describe_one(rq, gc, d->Groups.v[i], d->IncludeAuthorizedOperations, &resp->Groups.v[i]);
	return H_REPLY;
}

static bool h_group_state_wanted(const struct ListGroupsRequest *l, const char *state)
{
	if (l->StatesFilter.n <= 0)
		return true;
	for (int32_t i = 0; i < l->StatesFilter.n; i++)
		if (l->StatesFilter.v[i].p && (size_t)l->StatesFilter.v[i].len == strlen(state) &&
		    !strncasecmp(l->StatesFilter.v[i].p, state, strlen(state)))
			return true;
	return false;
}

int h_list_groups(struct req *rq, const void *in, void *out)
{
	const struct ListGroupsRequest *l = in;
	struct ListGroupsResponse *resp = out;
	struct group_coord *gc = h_group_coord(rq);
	struct group **groups;
	int n;

	if (!gc) {
		resp->ErrorCode = KERR_COORDINATOR_NOT_AVAILABLE;
		return H_REPLY;
	}
	groups = group_coord_groups(gc, &n);
	resp->Groups.v = req_alloc(rq, (size_t)n, sizeof(*resp->Groups.v));
	for (int i = 0; i < n; i++) {
		const char *state = group_state_name(group_state(groups[i]));
		struct ListGroupsResponseGroup *og = &resp->Groups.v[resp->Groups.n];

		if (!h_group_state_wanted(l, state) || !authz_list_group(rq, group_name(groups[i])))
			continue;
		og->GroupId = group_name(groups[i]);
		og->ProtocolType = kstr_c(group_protocol_type(groups[i]) ? group_protocol_type(groups[i]) : "");
		og->GroupState = kstr_c(state);
		resp->Groups.n++;
	}
	return H_REPLY;
}

int h_delete_groups(struct req *rq, const void *in, void *out)
{
	const struct DeleteGroupsRequest *d = in;
	struct DeleteGroupsResponse *resp = out;
	struct group_coord *gc = h_group_coord(rq);

	resp->Results.n = d->GroupsNames.n > 0 ? d->GroupsNames.n : 0;
	resp->Results.v = req_alloc(rq, (size_t)resp->Results.n, sizeof(*resp->Results.v));
	for (int32_t i = 0; i < resp->Results.n; i++) {
		struct part *part;

		resp->Results.v[i].GroupId = d->GroupsNames.v[i];
		resp->Results.v[i].ErrorCode = !gc ? KERR_COORDINATOR_NOT_AVAILABLE
					       : authz_group_kerr(rq, d->GroupsNames.v[i], ACL_OP_DELETE)
						       ?: group_delete(gc, d->GroupsNames.v[i], &part);
	}
	return H_REPLY;
}

/* Per partition: UNKNOWN_TOPIC_OR_PARTITION, GROUP_SUBSCRIBED_TO_TOPIC, or collected into offs. */
static int h_group_offset_delete_collect(struct req *rq, struct group *grp, const struct OffsetDeleteRequest *d,
					 struct OffsetDeleteResponse *resp, struct group_offset *offs)
{
	int n = 0;

	resp->Topics.n = d->Topics.n > 0 ? d->Topics.n : 0;
	resp->Topics.v = req_alloc(rq, (size_t)resp->Topics.n, sizeof(*resp->Topics.v));
	for (int32_t i = 0; i < resp->Topics.n; i++) {
		const struct OffsetDeleteRequestTopic *it = &d->Topics.v[i];
		struct OffsetDeleteResponseTopic *ot = &resp->Topics.v[i];
		bool subscribed = it->Name.p && group_subscribed(grp, it->Name);

		ot->Name = it->Name;
		ot->Partitions.n = it->Partitions.n > 0 ? it->Partitions.n : 0;
		ot->Partitions.v = req_alloc(rq, (size_t)ot->Partitions.n, sizeof(*ot->Partitions.v));
		for (int32_t j = 0; j < ot->Partitions.n; j++) {
			int32_t p = it->Partitions.v[j].PartitionIndex;

			ot->Partitions.v[j].PartitionIndex = p;
			if (!authz_topic(rq, it->Name, ACL_OP_READ))
				ot->Partitions.v[j].ErrorCode = KERR_TOPIC_AUTHORIZATION_FAILED;
			else if (!registry_part_known(rq->b->reg, it->Name, p))
				ot->Partitions.v[j].ErrorCode = KERR_UNKNOWN_TOPIC_OR_PARTITION;
			else if (subscribed)
				ot->Partitions.v[j].ErrorCode = KERR_GROUP_SUBSCRIBED_TO_TOPIC;
			else if (group_store_offset_get(group_offsets(grp), it->Name, p))
				offs[n++] = (struct group_offset){ .topic = arena_strndup(&rq->arena, it->Name.p,
											  (size_t)it->Name.len),
								   .partition = p };
		}
	}
	return n;
}

int h_offset_delete(struct req *rq, const void *in, void *out)
{
	const struct OffsetDeleteRequest *d = in;
	struct OffsetDeleteResponse *resp = out;
	struct group_coord *gc = h_group_coord(rq);
	struct group *grp = gc ? group_find(gc, d->GroupId) : NULL;
	struct group_offset *offs;
	struct part *part;
	int total = 0, n;

	resp->ErrorCode = !gc ? KERR_COORDINATOR_NOT_AVAILABLE
			      : authz_group_kerr(rq, d->GroupId, ACL_OP_DELETE) ?: group_offset_delete_check(grp);
	if (resp->ErrorCode)
		return H_REPLY;
	for (int32_t i = 0; i < d->Topics.n; i++)
		total += d->Topics.v[i].Partitions.n > 0 ? d->Topics.v[i].Partitions.n : 0;
	offs = req_alloc(rq, (size_t)total, sizeof(*offs));
	n = h_group_offset_delete_collect(rq, grp, d, resp, offs);
	if (n && group_offset_delete(gc, grp, offs, n, &part) < 0)
		resp->ErrorCode = KERR_COORDINATOR_NOT_AVAILABLE;
	return H_REPLY;
}
