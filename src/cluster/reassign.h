/*
 * reassign.h - partition reassignment on the active controller, as
 * Kafka's ZooKeeper-mode controller does it (KIP-455).
 *
 * A reassignment lives in the topic's znode /brokers/topics/<t>:
 * "partitions" holds RS, the replicas now (the targets TRS first, then
 * the original replicas ORS being removed), "adding_replicas" TRS - ORS
 * and "removing_replicas" ORS - TRS.  So a new controller resumes every
 * reassignment from ZooKeeper alone.
 *
 *   AlterPartitionReassignments  RS = TRS + ORS, adding, removing written (conditional on
 *     (reassign_alter)           the znode's version, with the controller epoch check), then
 *                                the leader epoch + 1 (as after every change of RS, so each
 *                                replica applies the new set); the leadership pass that
 *                                follows sends LeaderAndIsr to the new replicas, which start
 *                                fetching
 *   leaders' AlterPartition      the new replicas join the ISR (change.h); a pass follows
 *   every TRS member in the ISR  (reassign_on_pass) RS = TRS, adding and removing cleared;
 *                                the pass that follows elects a leader from TRS if the
 *                                current one is not in it (leader epoch + 1) and shrinks the
 *                                ISR to TRS (leaders.h: a broker no longer a replica counts
 *                                as not live)
 *   then                         StopReplica (delete) to each removed replica, once the
 *                                partition's state no longer names it
 *   cancel (null replicas)       RS = ORS, adding and removing cleared; the added replicas
 *                                get StopReplica (delete) the same way
 *
 * Kafka's older input /admin/reassign_partitions
 * ({"version":1,"partitions":[{"topic":..,"partition":..,"replicas":[..]}]})
 * is watched and read by the controller, started as above and deleted.
 *
 * The StopReplica still to send are held in memory: a controller that dies
 * between a reassignment's end and that request leaves the removed
 * replica's files in place (as a topic deletion does for a broker that was
 * down).  Every callback runs on the loop thread.
 */
#ifndef GREGOR_CLUSTER_REASSIGN_H
#define GREGOR_CLUSTER_REASSIGN_H

#include <stdbool.h>
#include <stdint.h>

#include "cluster/leaders.h"
#include "cluster/zk.h"

/* One partition of a request. */
struct reassign_item {
	char topic[256];
	int32_t partition;
	bool cancel;                  /* null replicas: revert the reassignment under way */
	struct znode_replicas target; /* TRS when !cancel */
	int16_t err;                  /* OUT: KERR_* */
};

typedef void reassign_done_fn(void *arg, struct reassign_item *items, int n);

/* A removed replica still to be told to delete its copy. */
struct reassign_stop {
	char topic[256];
	int32_t partition;
	int32_t broker;
};

/* Sends StopReplica (delete) of v[0..n) to broker. */
typedef void reassign_stop_fn(void *arg, int32_t broker, const struct reassign_stop *v, int n);

struct reassign {
	struct zk *zk;
	struct leaders *ls; /* the controller epoch version, the last pass's states */
	struct reassign_stop *stops;
	int nstops;
	int completing; /* partition ends being written: no others started meanwhile */
	int bumping;    /* leader epochs being moved on: a pass follows the last */
	bool stopping;
	reassign_stop_fn *on_stop;
	void *on_stop_arg;
	const int32_t *(*brokers)(void *arg, int *n); /* the registered broker ids */
	void *brokers_arg;
};

void reassign_init(struct reassign *ra, struct zk *zk, struct leaders *ls);
void reassign_stop(struct reassign *ra);

/*
 * Starts or cancels the reassignments of items[0..n) (the caller keeps
 * items until done).  done runs once with each item's err: NONE,
 * UNKNOWN_TOPIC_OR_PARTITION, INVALID_REPLICA_ASSIGNMENT (empty, repeated,
 * negative or unregistered brokers, more than ZNODE_REPLICAS_MAX in all),
 * NO_REASSIGNMENT_IN_PROGRESS (cancel of none), REQUEST_TIMED_OUT
 * (ZooKeeper not reachable).  0, or -ENOMEM (done never runs).
 */
int reassign_alter(struct reassign *ra, struct reassign_item *items, int n, reassign_done_fn *done, void *arg);

/*
 * Pure: applies target (NULL: cancel) to a partition's rs/adding/removing;
 * dropped gets the replicas that leave RS without being "removing" (added
 * ones of a reassignment replaced or cancelled).  brokers[0..nbrokers) are
 * the registered ids.  KERR_*; nothing changed unless NONE.
 */
int16_t reassign_apply(struct znode_replicas *rs, struct znode_replicas *adding, struct znode_replicas *removing,
		       const struct znode_replicas *target, const int32_t *brokers, int nbrokers,
		       struct znode_replicas *dropped);

/* The target replicas of an in-progress partition: rs without removing. */
void reassign_target(const struct znode_replicas *rs, const struct znode_replicas *removing,
		     struct znode_replicas *trs);

/*
 * After each complete leadership pass: ends the reassignments whose
 * targets are all in the ISR and sends the StopReplica due.
 */
void reassign_on_pass(struct reassign *ra, const struct leaders_state *parts, int n, const int32_t *live, int nlive);

/* Reads /admin/reassign_partitions (watched), starts what it asks and deletes it. */
void reassign_run_znode(struct reassign *ra);
/* True for events of /admin/reassign_partitions. */
bool reassign_watches(const char *path);

#endif
