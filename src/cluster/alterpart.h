/*
 * alterpart.h - the leader's side of AlterPartition (Kafka's
 * AlterPartitionManager, ZooKeeper mode): one ISR change of one partition
 * sent to the active controller, retried until the controller answers.
 *
 * Each change has its own connection (net/client.h) to the listener the
 * controller registered; AlterPartition v1 (topic by name).  What is
 * retried, after a backoff of 100 ms doubling to 2 s, re-reading who the
 * controller is each time: no controller known, a lost connection, no
 * answer within 5 s, an answer NOT_CONTROLLER (top level or for the
 * partition).  Any other answer ends the change: done(arg, err, ...)
 * with the partition's (or the request's) error and, when err is 0, the
 * partition epoch and ISR the controller wrote.  Everything runs in the
 * loop thread.
 */
#ifndef GREGOR_CLUSTER_ALTERPART_H
#define GREGOR_CLUSTER_ALTERPART_H

#include <stdint.h>

#include "cluster/cluster.h"

struct loop;
struct nclient_sec;
struct alterpart;

/* Who the controller is now: its id (-1: none known) and, when known, its registration. */
typedef const struct cluster_broker *alterpart_controller_fn(void *arg);

struct alterpart_cfg {
	struct loop *loop;
	int32_t broker_id;    /* this broker, the partition's leader */
	int64_t broker_epoch; /* its registration's czxid */
	alterpart_controller_fn *controller;
	void *controller_arg;
	const struct nclient_sec *sec; /* the inter-broker listener's security; NULL: plaintext */
};

/*
 * Starts sending and links the change into *head (the list of changes
 * under way, which it leaves when it ends); it is freed after done runs
 * (once; with KERR_REQUEST_TIMED_OUT from alterpart_cancel()).  0 or
 * -ENOMEM / -EINVAL (more than ZNODE_REPLICAS_MAX members, a topic name
 * too long); done never runs then.
 */
int alterpart_start(const struct alterpart_cfg *cfg, const char *topic, int32_t partition, int32_t leader_epoch,
		    int32_t partition_epoch, const int32_t *isr, int n, cluster_alter_partition_fn *done, void *arg,
		    struct alterpart **head);
/* Ends ap at once: done runs with KERR_REQUEST_TIMED_OUT (cluster_stop() cancels every one). */
void alterpart_cancel(struct alterpart *ap);

#endif
