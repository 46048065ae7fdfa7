/*
 * topic_zk.h - a new topic's znodes in cluster mode (zookeeper.connect):
 * what CreateTopics writes to ZooKeeper before the topic is made, as a
 * Kafka broker in ZooKeeper mode does - the replica assignment (Kafka's
 * algorithm over the live brokers, cluster/assign.h) under
 * /brokers/topics/<t> and the config overrides under /config/topics/<t>.
 * Writing both atomically makes the topic's name unique cluster-wide.
 */
#ifndef GREGOR_BROKER_TOPIC_ZK_H
#define GREGOR_BROKER_TOPIC_ZK_H

#include "broker/api.h"
#include "cluster/cluster.h"
#include "util/uuid.h"

/* Live brokers known (1 on a single node, where the broker is alone). */
int topic_zk_live(const struct broker *b);
/* True if id is a live broker of the cluster (on a single node: this one). */
bool topic_zk_is_live(const struct broker *b, int32_t id);

/*
 * Writes topic in's znodes: its manual assignment, or nparts partitions of
 * rf replicas assigned over the live brokers; id: the topic id written.
 * done(arg, err) follows as cluster_topic_create() says.  0, or -ENOTCONN
 * (no ZooKeeper session), -ENOMEM, -EINVAL (rf larger than the live
 * brokers), -EXDEV (only some brokers have a rack), -E2BIG (more than
 * ZNODE_TOPIC_MAX_REPLICAS); done never runs then.
 */
int topic_zk_create(struct req *rq, const struct CreateTopicsRequestTopic *in, int32_t nparts, int32_t rf,
		    const struct kuuid *id, cluster_done_fn *done, void *arg);
/* The same for an auto-created topic: nparts partitions, RF 1, no config overrides. */
int topic_zk_autocreate(struct req *rq, struct kstr name, int32_t nparts, const struct kuuid *id, cluster_done_fn *done,
			void *arg);

/*
 * An internal topic (__consumer_offsets), as Kafka makes it on the first
 * FindCoordinator that needs it: nparts partitions, rf replicas clamped
 * (with a warning) to the live brokers, cleanup.policy=compact, no time
 * retention, segment_bytes segments and, if min_isr > 0, that
 * min.insync.replicas (clamped to rf).  Logs the outcome; 0 or -errno.
 */
int topic_zk_create_internal(struct req *rq, const char *name, int32_t nparts, int32_t rf, int32_t min_isr,
			     int32_t segment_bytes);

/*
 * Cluster mode: AlterConfigs writes cfg's overrides as topic name's
 * /config/topics/<t> and a change notification, so every broker applies
 * them (cluster.h); done as cluster_topic_config_write() calls it.  0 or
 * -errno (then done is not called).
 */
struct topic_cfg;
#define TOPIC_ZK_VALUE_MAX 4096
int topic_zk_config_write(struct broker *b, const char *name, const struct topic_cfg *cfg, cluster_done_fn *done,
			  void *arg);
/* cluster_cfg.on_topic_config: reads /config/topics/<topic> and applies it to the topic here, if held. */
void topic_zk_config_changed(void *arg, const char *topic);

#endif
