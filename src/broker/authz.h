/*
 * authz.h - the broker's authorizer: the ACL set (sec/acl.h) of this
 * broker, its file in the log directory, and the one check every handler
 * calls.
 *
 * In cluster mode the ACLs are the cluster's, in ZooKeeper (cluster/aclzk.h),
 * instead of the file.
 *
 * Off (authorizer.class.name empty, the default) every check passes and
 * the ACL APIs answer SECURITY_DISABLED, as a Kafka broker without an
 * authorizer does.
 */
#ifndef GREGOR_BROKER_AUTHZ_H
#define GREGOR_BROKER_AUTHZ_H

#include <stdbool.h>
#include <stdint.h>

#include "util/buf.h"
#include "sec/acl.h"

struct broker;
struct req;

/* Turns the authorizer on if configured and loads the ACLs of the first log dir.  0 or -errno (logged). */
int authz_start(struct broker *b);
void authz_stop(void);
/* Whether an authorizer is configured. */
bool authz_on(void);

/*
 * May rq's principal, from its client's address, do op on resource
 * res_type/name?  Always true when the authorizer is off.  A refusal is
 * logged (debug, broker).  The principal is the connection's: User:<name>
 * after SASL, User:<certificate DN> on TLS with a client certificate,
 * User:ANONYMOUS otherwise.
 */
bool authz_allowed(struct req *rq, int8_t res_type, struct kstr name, int8_t op);
/* authz_allowed() on the cluster resource (kafka-cluster). */
bool authz_cluster(struct req *rq, int8_t op);
/* authz_allowed() of a topic (ACL_RES_TOPIC), the commonest. */
bool authz_topic(struct req *rq, struct kstr topic, int8_t op);

/* The bits (1 << op) of ops that rq's principal may do on the resource (authorized operations, KIP-430). */
int32_t authz_ops(struct req *rq, int8_t res_type, struct kstr name, int32_t ops);
/* authz_allowed() of a group (ACL_RES_GROUP). */
bool authz_group(struct req *rq, struct kstr group, int8_t op);
/* KERR_NONE, or GROUP_AUTHORIZATION_FAILED without op on group. */
int16_t authz_group_kerr(struct req *rq, struct kstr group, int8_t op);
/* ListGroups: Describe on the cluster lists every group, else those with Describe on them. */
bool authz_list_group(struct req *rq, struct kstr group);
/* FindCoordinator: Describe on the group (key_type 0) or transactional id (1); KERR_NONE or the *_AUTHORIZATION_FAILED. */
int16_t authz_coordinator_kerr(struct req *rq, struct kstr key, int8_t key_type);
/* authz_allowed() of a transactional id; true for a null or empty id (none). */
bool authz_txn_id(struct req *rq, struct kstr txn_id, int8_t op);
/* May the topic be created (auto-creation, CreateTopics): Create on the cluster or on the topic. */
bool authz_create_topic(struct req *rq, struct kstr topic);
/*
 * Produce to topic: KERR_NONE, TRANSACTIONAL_ID_AUTHORIZATION_FAILED
 * (Write on txn_id, when not null) or TOPIC_AUTHORIZATION_FAILED (Write on
 * the topic).
 */
int16_t authz_produce(struct req *rq, struct kstr txn_id, struct kstr topic);
/* Fetch of topic: Read on it for a consumer, ClusterAction for a follower (replica_id >= 0). */
bool authz_fetch(struct req *rq, int32_t replica_id, struct kstr topic);
/* KERR_NONE, or CLUSTER_AUTHORIZATION_FAILED without op on the cluster (whole-request checks). */
int16_t authz_cluster_kerr(struct req *rq, int8_t op);

/*
 * InitProducerId: Write on a transactional id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED),
 * or for an idempotent producer IdempotentWrite on the cluster or Write on
 * some topic (CLUSTER_AUTHORIZATION_FAILED); KERR_NONE if allowed.
 */
int16_t authz_init_producer_id(struct req *rq, struct kstr txn_id);
/* KERR_NONE, or TRANSACTIONAL_ID_AUTHORIZATION_FAILED without op on txn_id. */
int16_t authz_txn_id_kerr(struct req *rq, struct kstr txn_id, int8_t op);
/* KERR_NONE, or TOPIC_AUTHORIZATION_FAILED without op on topic. */
int16_t authz_topic_kerr(struct req *rq, struct kstr topic, int8_t op);

/*
 * DescribeConfigs/AlterConfigs (op DESCRIBE_CONFIGS or ALTER_CONFIGS) of a
 * config resource (2 topic: TOPIC_AUTHORIZATION_FAILED; 4 broker, 8 broker
 * logger: the cluster, CLUSTER_AUTHORIZATION_FAILED); KERR_NONE if allowed.
 */
int16_t authz_configs_kerr(struct req *rq, int8_t config_type, struct kstr name, int8_t op);

/* The ACL set, read only (DescribeAcls). */
const struct acl_set *authz_acls(void);
/* Called when a commit is written (err 0) or not (-errno, nothing changed); replies to rq. */
typedef void authz_done_fn(struct req *rq, int err);
/*
 * Replaces the ACL set with next; takes the contents of next (left empty).
 * Single node: writes the file first and returns 0, or -errno with nothing
 * changed.  Cluster mode (zookeeper.connect): adopts next at once, writes
 * the changed resources to ZooKeeper and returns 1; done(rq, err) follows
 * (on failure the set from before is back).  -errno: nothing changed.
 */
int authz_commit(struct req *rq, struct acl_set *next, authz_done_fn *done);
/* Cluster mode: the ACLs read from ZooKeeper become the set (cluster/aclzk.h's on_loaded; arg unused). */
void authz_zk_loaded(void *arg, struct acl_set *set);

#endif
