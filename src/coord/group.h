/*
 * group.h - the group coordinator: Kafka's classic consumer-group protocol
 * (JoinGroup / SyncGroup / Heartbeat / LeaveGroup), group membership with
 * generations, static membership, session and rebalance timeouts, and the
 * committed offsets of each group (kept by group_store.h, persisted in
 * __consumer_offsets).
 *
 * The coordinator knows nothing of sockets or requests.  JoinGroup and
 * SyncGroup may have to wait for other members; the caller passes an
 * opaque waiter and gets the answer through the join_done / sync_done
 * callbacks, which may run before group_join() / group_sync() return (an
 * immediate answer or error) or later, from a timer or another member's
 * request.  A callback must copy what it keeps: the views it receives
 * are valid during the call only.  Every other call answers directly.
 *
 * One event-loop thread calls everything; timers run on that loop.
 * The state machine is drawn in group.c.
 */
#ifndef GREGOR_COORD_GROUP_H
#define GREGOR_COORD_GROUP_H

#include <stdbool.h>
#include <stdint.h>

#include "coord/group_store.h"
#include "net/loop.h"
#include "util/buf.h"

enum group_state {
	GROUP_EMPTY = 0,
	GROUP_PREPARING_REBALANCE,
	GROUP_COMPLETING_REBALANCE,
	GROUP_STABLE,
	GROUP_DEAD,
};

struct group;
struct group_coord;
struct part;

/* A member as reported to the leader (JoinGroup) or by DescribeGroups. */
struct group_member_info {
	struct kstr member_id, group_instance_id, client_id, client_host;
	struct bytes metadata; /* subscription for the selected protocol */
	struct bytes assignment;
};

struct group_join_result {
	int16_t error;
	int32_t generation;                       /* -1 with errors */
	struct kstr protocol_type, protocol_name; /* null when none */
	struct kstr leader, member_id;
	const struct group_member_info *members; /* the leader only */
	int32_t nmembers;
};

struct group_sync_result {
	int16_t error;
	struct kstr protocol_type, protocol_name;
	struct bytes assignment;
};

struct group_coord_ops {
	void (*join_done)(void *waiter, const struct group_join_result *res);
	void (*sync_done)(void *waiter, const struct group_sync_result *res);
};

struct group_coord_cfg {
	int32_t initial_rebalance_delay_ms; /* group.initial.rebalance.delay.ms */
	int32_t min_session_timeout_ms, max_session_timeout_ms;
	int32_t max_size;             /* group.max.size */
	int64_t offsets_retention_ms; /* offsets.retention.minutes */
	int64_t retention_check_interval_ms;
};

struct group_protocol_arg {
	struct kstr name;
	struct bytes metadata;
};

struct group_join_args {
	struct kstr group_id, member_id, group_instance_id, protocol_type;
	struct kstr client_id, client_host;
	int32_t session_timeout_ms, rebalance_timeout_ms;
	const struct group_protocol_arg *protocols;
	int32_t nprotocols;
	bool require_known_member_id; /* JoinGroup v4+: MEMBER_ID_REQUIRED */
};

struct group_sync_assignment {
	struct kstr member_id;
	struct bytes assignment;
};

struct group_sync_args {
	struct kstr group_id, member_id, group_instance_id;
	struct kstr protocol_type, protocol_name; /* null: not checked (before v5) */
	int32_t generation;
	const struct group_sync_assignment *assignments;
	int32_t nassignments;
};

/* Takes nothing; store is owned by the coordinator from now on. */
int group_coord_new(struct loop *loop, const struct group_coord_cfg *cfg, const struct group_coord_ops *ops,
		    struct group_coord **out);
/* Answers every waiter with NOT_COORDINATOR, cancels timers, frees gc. */
void group_coord_free(struct group_coord *gc);
/*
 * Reaches __consumer_offsets through ct (copied; see coord_topic.h) and
 * loads the groups and offsets stored there.  Returns 0 or -errno.
 */
int group_coord_attach(struct group_coord *gc, const struct coord_topic *ct);
bool group_coord_attached(const struct group_coord *gc);
/*
 * Cluster mode: reaches __consumer_offsets through ct (ct->nparts: the
 * topic's partition count in the cluster) but loads nothing; this broker
 * coordinates the groups of the partitions it leads, loaded when
 * group_coord_set_leader() says so.  0 or -ENOMEM.
 */
int group_coord_attach_unowned(struct group_coord *gc, const struct coord_topic *ct);
/*
 * Cluster mode: this broker became leader of partition (loads its groups
 * soon after, on a timer: COORDINATOR_LOAD_IN_PROGRESS meanwhile), or
 * stopped leading it (forgets its groups; waiting members are answered
 * NOT_COORDINATOR).  A no-op on a single node.
 */
void group_coord_set_leader(struct group_coord *gc, int32_t partition, bool leader);
/* KERR_NONE if group_id is coordinated here, else NOT_COORDINATOR or COORDINATOR_LOAD_IN_PROGRESS. */
int16_t group_coord_owner_kerr(const struct group_coord *gc, struct kstr group_id);

/* The answer comes through ops->join_done(waiter, ...) (see the header comment). */
void group_join(struct group_coord *gc, const struct group_join_args *a, void *waiter);
void group_sync(struct group_coord *gc, const struct group_sync_args *a, void *waiter);
int16_t group_heartbeat(struct group_coord *gc, struct kstr group_id, struct kstr member_id,
			struct kstr group_instance_id, int32_t generation);
/* One leaving member (member_id "" with an instance id: by instance id). */
int16_t group_leave(struct group_coord *gc, struct kstr group_id, struct kstr member_id, struct kstr group_instance_id);

/*
 * OffsetCommit preamble: may this member commit for group_id now?  Creates
 * the group for a simple commit (generation < 0) of an unknown group.
 * OUT *grp on KERR_NONE.
 */
int16_t group_commit_check(struct group_coord *gc, struct kstr group_id, struct kstr member_id,
			   struct kstr group_instance_id, int32_t generation, struct group **grp);
/*
 * Persists then applies n offsets (commit_ts_ms set by the caller).  OUT
 * *part_out: partition written (for the syncer).  0 or -errno (nothing
 * applied).
 */
int group_commit(struct group_coord *gc, struct group *grp, const struct group_offset *offs, int n,
		 struct part **part_out);

struct group *group_find(struct group_coord *gc, struct kstr group_id);
const struct group_offsets *group_offsets(const struct group *grp);
enum group_state group_state(const struct group *grp);
const char *group_state_name(enum group_state st);        /* Kafka's names: "Stable" ... */
struct kstr group_name(const struct group *grp);          /* may hold NUL bytes: use its len */
const char *group_protocol_type(const struct group *grp); /* NULL when none */
const char *group_protocol_name(const struct group *grp); /* NULL when none */
int32_t group_generation(const struct group *grp);
int32_t group_member_count(const struct group *grp);
/* Fills out[0 .. group_member_count()-1] with views valid until the group changes. */
void group_members(const struct group *grp, struct group_member_info *out);
/* Every group, in no particular order; OUT *n.  Valid until the next change. */
struct group **group_coord_groups(struct group_coord *gc, int *n);

/* DeleteGroups: GROUP_ID_NOT_FOUND, NON_EMPTY_GROUP, or NONE (tombstones written). */
int16_t group_delete(struct group_coord *gc, struct kstr group_id, struct part **part_out);
/* OffsetDelete preamble: GROUP_ID_NOT_FOUND, NON_EMPTY_GROUP or NONE. */
int16_t group_offset_delete_check(const struct group *grp);
/* True if a member of a non-empty consumer group subscribes to topic. */
bool group_subscribed(const struct group *grp, struct kstr topic);
/* Deletes (tombstones) these offsets; 0 or -errno. */
int group_offset_delete(struct group_coord *gc, struct group *grp, const struct group_offset *offs, int n,
			struct part **part_out);

/*
 * Transactions (TxnOffsetCommit, EndTxn): stage offsets (as written to the
 * group's __consumer_offsets partition), then make them visible or drop
 * them when a marker of producer_id is written to log_partition: only the
 * offsets staged from that partition, whose records the marker follows.
 * A transaction's offsets in other partitions wait for their own marker.
 */
int group_txn_stage(struct group_coord *gc, struct group *grp, int64_t producer_id, const struct group_offset *offs,
		    int n);
void group_txn_complete(struct group_coord *gc, int32_t log_partition, int64_t producer_id, bool commit);
/*
 * Transactions: TxnOffsetCommit persists offs as a transactional batch of
 * producer_id/producer_epoch (group_store_write_txn) and stages them.  OUT
 * *part_out: the partition written.  0 or -errno.
 */
int group_txn_commit(struct group_coord *gc, struct group *grp, int64_t producer_id, int16_t producer_epoch,
		     const struct group_offset *offs, int n, struct part **part_out);
/* The __consumer_offsets partition index of group_id (attached coordinators only): where markers go. */
int32_t group_coord_partition(struct group_coord *gc, struct kstr group_id);

/* Expires the offsets of groups empty for longer than offsets.retention.minutes (also a timer). */
void group_coord_expire(struct group_coord *gc, int64_t now_wall_ms);

#endif
