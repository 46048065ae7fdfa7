/*
 * change.h - partition state changes the active controller makes on
 * request, as Kafka's controller does in ZooKeeper mode:
 *
 *   CHANGE_PREFERRED  ElectLeaders (preferred) and the leader rebalance: the first replica of the
 *                     assignment leads again if it is live and in the ISR, leader epoch + 1
 *                     (ELECTION_NOT_NEEDED when it leads, PREFERRED_LEADER_NOT_AVAILABLE otherwise)
 *   CHANGE_UNCLEAN    ElectLeaders (unclean): a partition without a live leader gets the first live
 *                     ISR member, else the first live replica with ISR [it], leader epoch + 1
 *                     (ELECTION_NOT_NEEDED when its leader is live, ELIGIBLE_LEADERS_NOT_AVAILABLE
 *                     when no replica is)
 *   CHANGE_ISR        AlterPartition from the leader broker_id: its leader epoch must be the state's
 *                     (FENCED_LEADER_EPOCH), its partition epoch the state znode's version
 *                     (INVALID_UPDATE_VERSION), the sender the leader (NOT_LEADER_OR_FOLLOWER), the
 *                     new ISR hold the leader (INVALID_REQUEST) and only live replicas
 *                     (INELIGIBLE_REPLICA); the ISR is written, the leader epoch kept
 *
 * Each item's state znode is read, decided upon and written with
 * leaders_state_write() (conditional on the controller epoch and the
 * znode version read).  An election that meets a concurrent change reads
 * again (3 times at most); an ISR change answers INVALID_UPDATE_VERSION.
 * A controller that lost its place answers NOT_CONTROLLER.  The
 * replicas come from the last complete leadership pass (leaders_find():
 * UNKNOWN_TOPIC_OR_PARTITION for a partition it did not see).  Every
 * callback runs on the loop thread.
 */
#ifndef GREGOR_CLUSTER_CHANGE_H
#define GREGOR_CLUSTER_CHANGE_H

#include <stdint.h>

#include "cluster/leaders.h"

enum change_kind { CHANGE_PREFERRED, CHANGE_UNCLEAN, CHANGE_ISR };

struct change_item {
	char topic[256];
	int32_t partition;
	/* CHANGE_ISR: what the leader sent */
	int32_t leader_epoch;
	int32_t partition_epoch;
	struct znode_replicas isr;
	/* OUT */
	int16_t err;           /* KERR_* */
	struct znode_state st; /* the state now (written, or as read when refused); leader -1 if unknown */
	int32_t version;       /* its znode version (the partition epoch), -1 if unknown */
};

/* items as given to change_run(), each err set; *written: how many states were written. */
typedef void change_done_fn(void *arg, struct change_item *items, int n, int written);

/*
 * Changes items[0..n) as kind says, with ls's live brokers and controller
 * epoch; broker_id is the sender of CHANGE_ISR.  items stay the caller's
 * and must live until done, which runs once (also when n is 0, before
 * this returns).  0, or -ENOMEM (done never runs).
 */
int change_run(struct leaders *ls, enum change_kind kind, int32_t broker_id, struct change_item *items, int n,
	       change_done_fn *done, void *arg);

/*
 * The leader rebalance (auto.leader.rebalance.enable): the partitions of
 * the last pass whose preferred replica is live, in the ISR and not
 * leading, on brokers whose share of preferred partitions led elsewhere is
 * above pct percent (leader.imbalance.per.broker.percentage).  OUT *items:
 * malloc'd (the caller frees), NULL when none; returns their count.
 */
int change_rebalance_items(const struct leaders *ls, int32_t pct, struct change_item **items);

#endif
