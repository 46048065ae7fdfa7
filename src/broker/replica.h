/*
 * replica.h - replication's data path in cluster mode (Kafka's
 * ReplicaManager and Partition): each partition's role as the
 * controller's LeaderAndIsr gave it, the leader's view of its followers,
 * the high watermark over the in-sync replicas, acks=all produces
 * waiting for it, and (replica_fetch.c) the followers' fetchers.
 *
 * Per partition this broker keeps what the last LeaderAndIsr said:
 * leader id, leader epoch, replicas, ISR and partition epoch (the state
 * znode's version).  A leader serves clients and stamps its appends with
 * the leader epoch; a follower keeps its log but answers clients
 * NOT_LEADER_OR_FOLLOWER (registry_leader() asks replica_leader() first)
 * and fetches from the leader.
 *
 * High watermark (docs/cluster.md, "Replication"): a follower's Fetch
 * carries its fetch offset, which it sends only once what it appended
 * before is synced, so the leader takes it as that follower's durable log
 * end.  The leader's high watermark is the smallest of its own synced end
 * and the fetch offsets of the other ISR members (part_set_hw_limit());
 * a follower's is the leader's, at most its own synced end.
 *
 * ISR changes (replica_isr.c): the leader removes followers that
 * stopped catching up and adds back those that did, through the
 * controller (AlterPartition), and applies its answer with
 * replica_set_isr().  A follower truncates its log to where it agrees
 * with the leader (OffsetForLeaderEpoch, replica_fetch.c) before it
 * fetches.
 *
 * Threading: the event-loop thread only.  On a single node nothing here
 * is made (b->repl is NULL) and every function below answers as a
 * partition without replicas.
 */
#ifndef GREGOR_BROKER_REPLICA_H
#define GREGOR_BROKER_REPLICA_H

#include <stdbool.h>
#include <stdint.h>

#include "proto_msgs.h"
#include "util/buf.h"

struct broker;
struct part;
struct req;
struct topic;
struct repl;

/* What the leader knows of one follower (Kafka's Replica state). */
struct replica_follower {
	int32_t id;
	int64_t fetch_offset;          /* its last fetch offset = its durable log end; -1 before one */
	int64_t last_fetch_ms;         /* clock_mono_ms() of that fetch, -1 before one */
	int64_t last_fetch_leader_leo; /* the leader's log end at that fetch */
	int64_t last_caught_up_ms;     /* Kafka's lastCaughtUpTimeMs: when it last had all the leader had */
};

struct replica_ids {
	int32_t *v;
	int32_t n;
};

/* One partition's replication state. */
struct replica {
	struct replica *next; /* hash chain */
	char *topic;
	int32_t partition;
	int32_t leader; /* -1: none */
	int32_t leader_epoch;
	int32_t partition_epoch; /* the state znode's version (LeaderAndIsr ZkVersion) */
	int64_t leader_hw;       /* follower: the high watermark in the leader's last Fetch answer, -1 before one */
	struct replica_ids replicas, isr;
	struct replica_follower *followers; /* leader: every replica but this broker */
	int32_t nfollowers;
	int32_t applied_epoch;  /* leader epoch whose role was applied to the log, -1 none yet */
	bool hw_restored;       /* the checkpointed high watermark was taken back (once per start) */
	bool truncating;        /* follower: its log is cut where it agrees with the leader's before it fetches */
	int64_t fetch_retry_ms; /* follower: after an error for it, left out of Fetch until this clock_mono_ms() */
	/* leader: ISR changes (replica_isr.c) */
	int64_t epoch_start_offset; /* the log end when this leader epoch began here */
	bool alter_pending;         /* an AlterPartition to pending_isr is under way, or refused and
				       waiting for the LeaderAndIsr */
	uint32_t alter_seq;         /* numbers the changes: an answer for an older one is ignored */
	struct replica_ids pending_isr;
};

/*
 * A coordinator that follows the leadership of its internal topic's
 * partitions: called after each change of this broker's role for a
 * partition (leader or not), in the loop thread.  Up to
 * REPLICA_ROLE_LISTENERS may be registered; 0 or -ENOSPC.
 */
#define REPLICA_ROLE_LISTENERS 4
typedef void replica_role_fn(struct broker *b, const char *topic, int32_t partition, bool leader);
int replica_on_role(replica_role_fn *fn);

/* Cluster mode: starts the replication state (b->repl). 0 or -ENOMEM. */
int replica_start(struct broker *b);
/* Stops the fetchers and frees the state; parked produces are dropped with their connections. */
void replica_stop(struct broker *b);

/* LeaderAndIsr: takes one partition's state (newer leader epoch or partition epoch than held). KERR_*. */
int16_t replica_leader_and_isr(struct broker *b, struct kstr topic, const struct LeaderAndIsrPartitionState *ps);
/*
 * The ISR of r changed (AlterPartition's answer, or the controller's
 * state): takes isr and the new partition epoch, moves the leader's high
 * watermark over the new ISR and re-checks the acks=all produces waiting.
 * 0 or -ENOMEM (nothing changed).
 */
int replica_set_isr(struct broker *b, struct replica *r, const struct int32_array *isr, int32_t partition_epoch);
/* After a LeaderAndIsr: the leaders' endpoints, and the fetchers started or stopped to match. */
void replica_set_leaders(struct broker *b, const struct LeaderAndIsrLiveLeader *v, int32_t n);
/* StopReplica with delete: forgets the topic's partitions. */
void replica_forget_topic(struct broker *b, const char *topic);
/* Forgets partition's role (StopReplica of a partition kept here): clients are answered from the metadata cache. */
void replica_forget_partition(struct broker *b, const char *topic, int32_t partition);

/* The partition's state, or NULL (single node, or no LeaderAndIsr named it). */
struct replica *replica_find(struct broker *b, const char *topic, int32_t partition);
/* registry_leader()'s answer from LeaderAndIsr: the leader, or -2 if unknown here. */
int32_t replica_leader(void *arg, const char *topic, int32_t len, int32_t partition);
/* What /metrics reports of replication on this broker (replica_stats.c). */
struct replica_counts {
	int32_t under_replicated; /* led here, ISR smaller than the replicas */
	int32_t under_min_isr;    /* led here, ISR smaller than the topic's min.insync.replicas */
	int32_t at_min_isr;       /* led here, ISR exactly min.insync.replicas (and more than 1 replica) */
	int64_t max_lag;          /* followed here: the largest leader high watermark - log end offset */
	int32_t produces_waiting; /* acks=all produces parked for the ISR */
};
/* Counts over every partition state; all 0 on a single node. */
void replica_counts(struct broker *b, struct replica_counts *out);

/* Members of the partition's ISR (1 without replication state: a single node's partition is its own ISR). */
int32_t replica_isr_size(struct broker *b, const char *topic, int32_t partition);

/*
 * Leader side of a follower's Fetch (ReplicaId >= 0) of partition: records
 * its fetch offset and catch-up time and moves the high watermark.
 * KERR_NONE, or NOT_LEADER_OR_FOLLOWER (not led here, or replica_id is
 * not one of its replicas), FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH
 * (its CurrentLeaderEpoch, if >= 0, is older / newer than the leader's),
 * OFFSET_OUT_OF_RANGE (past the log end; nothing recorded).
 */
int16_t replica_on_follower_fetch(struct broker *b, const struct topic *t, int32_t partition, struct part *part,
				  int32_t replica_id, int32_t leader_epoch, int64_t fetch_offset);

/*
 * acks=all on a partition with other in-sync replicas: the produce (or a
 * coordinator's write to its internal topic) waits until the high
 * watermark reaches need (the offset after its batch).  Adds the wait to
 * rq; *err is the answer's error code, set if it fails
 * (NOT_ENOUGH_REPLICAS_AFTER_APPEND, NOT_LEADER_OR_FOLLOWER,
 * REQUEST_TIMED_OUT, or with coord Kafka's coordinator mapping of those:
 * COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR).  topic must live as long
 * as rq (a view into it).
 */
void replica_wait_add(struct req *rq, struct kstr topic, int32_t partition, int64_t need, int16_t *err, bool coord);
/*
 * After replica_wait_add: done(rq) is called once every wait of rq is
 * resolved (met, failed or timed out: the error codes say which), just
 * before rq is answered, whether at once or after parking.
 */
void replica_wait_done(struct req *rq, void (*done)(struct req *rq));
/*
 * The check behind each wait: KERR_NONE with *met (OUT) true once the
 * partition's high watermark reaches need; NOT_LEADER_OR_FOLLOWER (not led
 * here) or NOT_ENOUGH_REPLICAS_AFTER_APPEND (ISR below
 * min.insync.replicas), *met false.
 */
int16_t replica_hw_covers(struct broker *b, struct kstr topic, int32_t partition, int64_t need, bool *met);
/* True if this partition's acks=all answer waits for other replicas. */
bool replica_acks_all_waits(struct broker *b, const char *topic, int32_t partition);
/*
 * Parks rq until its waits are met and round ticket (the syncer's, for
 * its other partitions; 0 none) is done, or timeout_ms passes (> 0).
 * H_REPLY if nothing waits, else H_PARKED.  fail marks rq->out when a
 * sync round failed.
 */
int replica_park(struct req *rq, uint64_t ticket, int32_t timeout_ms, void (*fail)(struct req *rq));

/* Partitions were made (creator's wake-up): applies the roles that waited for their logs. */
void replica_on_made(struct broker *b);
/*
 * End of each loop pass: answers the produces whose waits are met, sends
 * the fetches whose sync is done.  True if high watermarks may have moved
 * (the caller then looks at what else waits for them: transaction markers).
 */
bool replica_after_events(struct broker *b);
/* Housekeeping: applies roles to partitions made since, writes replication-offset-checkpoint when due. */
void replica_tick(struct broker *b, int64_t now_ms);

/*
 * A partition becoming follower (KIP-101, KIP-279): before it fetches, its
 * fetcher asks the leader with OffsetForLeaderEpoch (ReplicaId = this
 * broker, CurrentLeaderEpoch = the new epoch, LeaderEpoch = the log's
 * latest) where that epoch ends, cuts the log there (part_truncation_offset,
 * part_truncate_to) and asks again until the logs agree; a log without
 * leader epochs is cut back to its high watermark.  Errors: backoff and
 * again.  What a former leader appended that no other replica has is lost,
 * and only that (it was above the high watermark: no consumer saw it).
 */
void replica_truncate_on_become_follower(struct broker *b, struct replica *r, struct part *part);

#define REPLICA_HW_FILE "replication-offset-checkpoint"

#endif
