/*
 * deleter.h - the controller's part of topic deletion, Kafka's way
 * (ZooKeeper mode): DeleteTopics marks a topic with the znode
 * /admin/delete_topics/<t> (cluster_topic_delete()); the active controller
 * watches those marks and removes each marked topic's znodes - every
 * partition's state and node, /brokers/topics/<t>, /config/topics/<t> -
 * and the mark last, so a controller that dies half-way leaves the mark
 * for the next one, and every step is harmless to repeat.  The leadership
 * passes (leaders.h) leave marked topics alone.
 */
#ifndef GREGOR_CLUSTER_DELETER_H
#define GREGOR_CLUSTER_DELETER_H

#include <stdbool.h>
#include <stdint.h>

#include "cluster/zk.h"

/* A marked topic of nparts partitions is being removed: its replicas are told (StopReplica). */
typedef void deleter_topic_fn(void *arg, const char *topic, int32_t nparts);

struct deleter {
	struct zk *zk;
	bool stopping;
	deleter_topic_fn *on_delete; /* may be NULL */
	void *on_delete_arg;
};

void deleter_init(struct deleter *d, struct zk *zk);
/* Lists the marks (leaving a child watch for the next one) and removes each marked topic. */
void deleter_run(struct deleter *d);
/* True if child events of path ask for a run (/admin/delete_topics). */
bool deleter_watches(const char *path);
void deleter_stop(struct deleter *d);

#endif
