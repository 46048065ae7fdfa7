/*
 * leaders.h - the active controller's partition leadership, kept in
 * ZooKeeper as Kafka's controller keeps it (ZooKeeper mode):
 *
 *   /brokers/topics/<t>                       the assignment (read)
 *   /brokers/topics/<t>/partitions/<p>/state  leader, leader epoch, ISR (written)
 *
 * A pass reads every topic under /brokers/topics (leaving a child watch so
 * that a new topic starts the next pass, and a data watch on each topic so
 * that added partitions do) and brings each partition's state
 * in line with the live brokers:
 *
 *   no state yet, a replica live   -> leader: the first live replica, ISR: the live replicas,
 *                                     leader epoch 0
 *   leader live, an ISR member not -> the member leaves the ISR, leader epoch + 1
 *   leader not live (or -1), an    -> leader: the first live replica (assignment order) that is in
 *     ISR member live                 the ISR, ISR: its live members, leader epoch + 1
 *   leader not live, no ISR member -> unclean.leader.election.enable (the topic's override in
 *     live, a replica live            /config/topics/<t>, else the broker's): the first live replica,
 *                                     ISR [it]; otherwise leader -1 and the ISR keeps its last
 *                                     member (Kafka never empties an ISR), leader epoch + 1
 *
 * A leader or ISR member that is no longer a replica (a reassignment
 * finished or was cancelled, reassign.h) counts as not live.
 *
 * So a broker that comes back does not rejoin an ISR by itself (the
 * leader adds it with AlterPartition, change.h), except as the last ISR
 * member of a partition left without a leader.
 *
 * Each write is one multi-op with a check that /controller_epoch is still
 * at the version this controller wrote (so a controller that lost its
 * place writes nothing, as Kafka's checkController op ensures) and is
 * conditional on the state znode's version; a state conflict runs the
 * pass again.  The cluster layer starts a pass when this broker
 * becomes controller, when the live brokers change and when a topic is
 * added; a pass asked for while one runs follows it.  Every callback runs
 * on the loop thread (zk.h).
 */
#ifndef GREGOR_CLUSTER_LEADERS_H
#define GREGOR_CLUSTER_LEADERS_H

#include <stdbool.h>
#include <stdint.h>

#include "cluster/znode.h"
#include "cluster/zk.h"

/* One partition as a pass left it. */
struct leaders_state {
	char topic[256];
	char topic_id[32]; /* "" if the assignment has none */
	int32_t partition;
	struct znode_replicas replicas;
	struct znode_replicas adding, removing; /* a reassignment under way (reassign.h); n 0: none */
	bool has_state;                         /* false: no replica was ever live, no state yet */
	struct znode_state st;                  /* leader -1 when has_state is false */
	int32_t version;                        /* the state znode's version: Kafka's partition epoch (ZkVersion) */
};

/*
 * After a pass that ended without a conflict: every partition of every
 * topic not marked for deletion, the live brokers and the epoch.  The
 * arrays are valid during the call.
 */
typedef void leaders_pass_fn(void *arg, const struct leaders_state *parts, int nparts, const int32_t *live, int nlive,
			     int32_t controller_epoch);

struct leaders {
	struct zk *zk;
	bool running;  /* a pass is under way */
	bool again;    /* run another one after it */
	bool stopping; /* cluster_stop(): start nothing more */
	int32_t *live; /* the latest live broker ids (malloc'd) */
	int nlive;
	int32_t *then_live; /* after a pass with bounced brokers left out: the pass with them (malloc'd), or NULL */
	int nthen;
	int32_t epoch;            /* the controller epoch written into states */
	int32_t epoch_version;    /* /controller_epoch's version: every write checks it */
	leaders_pass_fn *on_pass; /* may be NULL */
	void *on_pass_arg;
	bool unclean_default;       /* the broker's unclean.leader.election.enable */
	struct leaders_state *last; /* what the last complete pass left (malloc'd) */
	int nlast;
};

void leaders_init(struct leaders *ls, struct zk *zk);
/*
 * Starts a pass with these live brokers and controller epoch, held in
 * /controller_epoch at znode version epoch_version (or queues one after the
 * pass under way).
 */
void leaders_run(struct leaders *ls, const int32_t *live, int nlive, int32_t controller_epoch, int32_t epoch_version);
/*
 * As leaders_run, for a membership in which the brokers bounced (among
 * live) registered again since the last listing: first a pass without
 * them, then one with them, as Kafka's controller handles a bounced broker
 * as a failure followed by a start-up (their leaderships move, they leave
 * the ISRs and rejoin them once caught up).  A leaders_run meanwhile only
 * replaces the second pass's brokers.
 */
void leaders_run_bounced(struct leaders *ls, const int32_t *live, int nlive, const int32_t *bounced, int nbounced,
			 int32_t controller_epoch, int32_t epoch_version);
/* True if events of path ask for a pass: /brokers/topics (a topic added) or /brokers/topics/<t> (partitions added). */
bool leaders_watches(const char *path);
/* Before zk_free(): passes under way end without starting another; frees what ls holds. */
void leaders_stop(struct leaders *ls);

/* The partition as the last complete pass left it, or NULL. */
const struct leaders_state *leaders_find(const struct leaders *ls, const char *topic, int32_t partition);

/*
 * The state a partition with these replicas should have with live[0..nlive)
 * the live brokers (the table above): st holds the state read (exists) and
 * gets the next one; false if it stays as it is.  Pure.
 */
bool leaders_next(const int32_t *live, int nlive, const struct znode_replicas *replicas, bool exists, bool unclean,
		  struct znode_state *st);
bool leaders_is_live(const int32_t *live, int nlive, int32_t id);
bool leaders_in(const struct znode_replicas *r, int32_t id);
/*
 * Writes partition's state st as the controller does: one multi-op that
 * checks /controller_epoch is at epoch_version and creates the state
 * (version < 0; its parents first) or sets it conditional on version.
 * done gets the multi's reply.  0 or -ENOMEM / what zk_multi() says.
 */
int leaders_state_write(struct zk *zk, int32_t epoch_version, const char *topic, int32_t partition,
			const struct znode_state *st, int32_t version, zk_done_fn *done, void *arg);

#endif
