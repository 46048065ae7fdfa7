/*
 * topics.h - a topic's znodes as Kafka's admin requests write them in
 * ZooKeeper mode, for the cluster layer (cluster.h wraps these with its
 * session):
 *
 *   create  /config/topics/<t> and /brokers/topics/<t>, both or neither
 *   grow    /brokers/topics/<t> read, extended with Kafka's assignment,
 *           written back conditional on the version read
 *   config  /config/topics/<t> read (a replica making the topic's partitions)
 *   delete  /admin/delete_topics/<t>, the mark the controller acts on (deleter.h)
 *
 * Every callback runs on the loop thread (zk.h).
 */
#ifndef GREGOR_CLUSTER_TOPICS_H
#define GREGOR_CLUSTER_TOPICS_H

#include <stdint.h>

#include "cluster/cluster.h"
#include "cluster/zk.h"

/* cluster_topic_create() without the session check. */
int topics_create(struct zk *zk, const char *name, const char *assignment, const char *config, cluster_done_fn *done,
		  void *arg);
/* cluster_topic_grow() over these live brokers (sorted by id; copied). */
int topics_grow(struct zk *zk, const struct cluster_broker *brokers, int nbrokers, const char *name, int32_t nparts,
		int32_t total, const int32_t *manual, cluster_done_fn *done, void *arg);
/* cluster_topic_config(). */
int topics_read_config(struct zk *zk, const char *name, cluster_config_fn *done, void *arg);
/* cluster_topic_delete(). */
void topics_mark_deleted(struct zk *zk, const char *name);

#endif
