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
 *   no state yet, a replica live   -> leader: the first live replica, ISR [leader], leader epoch 0
 *   leader not live                -> leader -1, leader epoch + 1; the ISR keeps its last member
 *                                     (Kafka's rule: an ISR is never emptied)
 *   leader -1, an ISR member live  -> leader: the first live replica that is in the ISR (clean
 *                                     election only: unclean.leader.election.enable=false),
 *                                     leader epoch + 1, ISR: its live members
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
	bool has_state;        /* false: no replica was ever live, no state yet */
	struct znode_state st; /* leader -1 when has_state is false */
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
	int32_t epoch;            /* the controller epoch written into states */
	int32_t epoch_version;    /* /controller_epoch's version: every write checks it */
	leaders_pass_fn *on_pass; /* may be NULL */
	void *on_pass_arg;
};

void leaders_init(struct leaders *ls, struct zk *zk);
/*
 * Starts a pass with these live brokers and controller epoch, held in
 * /controller_epoch at znode version epoch_version (or queues one after the
 * pass under way).
 */
void leaders_run(struct leaders *ls, const int32_t *live, int nlive, int32_t controller_epoch, int32_t epoch_version);
/* True if events of path ask for a pass: /brokers/topics (a topic added) or /brokers/topics/<t> (partitions added). */
bool leaders_watches(const char *path);
/* Before zk_free(): passes under way end without starting another; frees what ls holds. */
void leaders_stop(struct leaders *ls);

#endif
