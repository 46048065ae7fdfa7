/*
 * notify.h - what the controller tells the brokers, built from the
 * partition states a leadership pass left (leaders.h) and sent through
 * the channels (channel.h), as Kafka's controller does in ZooKeeper mode:
 *
 *   LeaderAndIsr v5   to each live broker: every partition it is a replica of
 *   UpdateMetadata v7 to every live broker: every partition, the live brokers
 *   StopReplica v3    (delete) to every live broker for a deleted topic, and to a
 *                     replica a reassignment removed (its partitions only)
 *
 * Every request carries the controller's id and epoch; brokers refuse an
 * older epoch than they have seen.  A pass follows every change (a new
 * controller, a broker that comes or goes, a topic or partitions added),
 * so each broker, including one that just registered, gets the whole
 * state after each.
 */
#ifndef GREGOR_CLUSTER_NOTIFY_H
#define GREGOR_CLUSTER_NOTIFY_H

#include "cluster/channel.h"
#include "cluster/leaders.h"

struct notify_ctx {
	struct channel *ch;
	int32_t controller_id;
	int32_t epoch;
	const struct cluster_broker *brokers; /* live, as the pass saw them */
	int nbrokers;
};

/* Sends LeaderAndIsr and UpdateMetadata for parts[0..n). */
void notify_pass(const struct notify_ctx *nc, const struct leaders_state *parts, int n);
/* Sends StopReplica (delete) of partitions 0..nparts-1 of topic. */
void notify_delete(const struct notify_ctx *nc, const char *topic, int32_t nparts);
/* A partition named to notify_stop(). */
struct notify_part {
	const char *topic;
	int32_t partition;
};
/* Sends broker id one StopReplica (delete) of v[0..n). */
void notify_stop(const struct notify_ctx *nc, int32_t id, const struct notify_part *v, int n);

#endif
