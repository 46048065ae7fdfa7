/*
 * cluster.h - this broker's membership in a ZooKeeper-mode cluster: the
 * session, the registration under /brokers/ids, the cluster id, the
 * controller (controller.h) and the metadata cache of live brokers that
 * Metadata answers from.
 *
 * Start-up sequence, repeated on every (re)connected session so that a
 * reconnect or a new session after expiry re-registers without a restart:
 *
 *   connect --> Kafka's persistent paths --> /cluster/id (read, or create)
 *           --> /brokers/ids/<broker.id> (ephemeral) --> controller election
 *           --> /brokers/ids children + each registration (watched)
 *
 * Failures: no connection within zookeeper.connection.timeout.ms -> a log
 * line, the handle is given up and a new one tried after a backoff (1 s
 * doubling to 30 s; a session that may still be valid is resumed); an
 * expired session -> a new one at once, registered again; broker.id held
 * by another live session -> an error line and on_fatal(arg, 2).
 *
 * Everything runs in the loop thread; nothing here blocks on the network.
 */
#ifndef GREGOR_CLUSTER_CLUSTER_H
#define GREGOR_CLUSTER_CLUSTER_H

#include <stdbool.h>
#include <stdint.h>

#include "cluster/aclzk.h"
#include "cluster/znode.h"

struct loop;
struct nclient_sec;
struct cluster;

typedef void cluster_fatal_fn(void *arg, int exit_code);

/* What the broker tells the cluster layer; strings are borrowed for the cluster's life. */
struct cluster_cfg {
	const char *zookeeper_connect; /* "host:port,...[/chroot]" */
	int32_t session_timeout_ms;    /* zookeeper.session.timeout.ms */
	int32_t connection_timeout_ms; /* zookeeper.connection.timeout.ms */
	int32_t broker_id;
	const char *rack;                    /* broker.rack, NULL for none */
	const char *endpoints;               /* "NAME://host:port,...": advertised, hosts and ports resolved */
	const char *protocol_map;            /* listener.security.protocol.map */
	const char *client_listener;         /* listener whose endpoint Metadata reports for each broker */
	const char *inter_listener;          /* inter-broker listener: its endpoints are the ones connected to */
	const struct nclient_sec *inter_sec; /* how those connections are secured; NULL: plaintext */
	cluster_fatal_fn *on_fatal;          /* the broker must stop with this exit status */
	void *fatal_arg;
	/* /cluster/id as read at each registration (fatal_arg); nonzero: not this broker's cluster, exit 2 */
	int (*on_cluster_id)(void *arg, const char *id);
	/* a topic's config changed in ZooKeeper (/config/changes): read /config/topics/<topic> and apply it */
	void (*on_topic_config)(void *arg, const char *topic);
	void *topic_config_arg;
	/* as controller (Kafka's names) */
	bool unclean_leader_election_enable;
	bool auto_leader_rebalance_enable;
	int64_t leader_imbalance_check_interval_ms;
	int32_t leader_imbalance_per_broker_percentage;
	/* with an authorizer: the cluster's ACLs as read from ZooKeeper (aclzk.h); NULL: not followed */
	aclzk_loaded_fn *on_acls;
	void *acls_arg;
	/* a user's SCRAM credentials changed (/config/changes): read /config/users/<user> (cluster_entity_config) */
	void (*on_user_config)(void *arg, const char *user);
	void *user_config_arg;
	/* a client quota entity changed, or is there at a session's start: its entity path ("users/<u>",
	 * "clients/<c>", "users/<u>/clients/<c>"); read /config/<entity> (cluster_entity_config) */
	void (*on_quota_config)(void *arg, const char *entity);
	void *quota_config_arg;
};

/* One live broker as Metadata reports it. */
struct cluster_broker {
	int32_t id;
	char host[ZNODE_HOST_MAX]; /* host and port of client_listener, else of its first listener */
	int32_t port;
	char inter_host[ZNODE_HOST_MAX]; /* host and port of cluster_cfg.inter_listener */
	int32_t inter_port;              /* 0: it registered no such listener (it cannot be connected to) */
	struct znode_endpoint endpoints[ZNODE_ENDPOINTS_MAX]; /* every listener it registered */
	int nendpoints;
	char rack[ZNODE_NAME_MAX];
	bool has_rack;
	int64_t epoch; /* broker epoch: the czxid of its registration znode */
};

/* Validates cfg (endpoints, chroot) and starts connecting.  0 or -EINVAL/-ENOMEM (logged). */
int cluster_start(struct loop *loop, const struct cluster_cfg *cfg, struct cluster **out);
/* Closes the session (the registration and, if held, /controller vanish at once) and frees cl. */
void cluster_stop(struct cluster *cl);

/* Live brokers sorted by id, as last read from /brokers/ids; 0 before the first read. */
int cluster_brokers(const struct cluster *cl, const struct cluster_broker **out);
/* The controller's broker id, -1 while unknown or vacant. */
int32_t cluster_controller_id(const struct cluster *cl);
/*
 * As the active controller: broker id (registered with broker epoch epoch, -1: any) is shutting down,
 * so the leadership pass counts it as not live until its registration goes or a new one appears.
 * 0, or NOT_CONTROLLER, BROKER_NOT_AVAILABLE (not registered) or STALE_BROKER_EPOCH.
 */
int16_t cluster_controlled_shutdown(struct cluster *cl, int32_t id, int64_t epoch);
struct reassign_item;
struct leaders_state;
typedef void cluster_reassign_fn(void *arg, struct reassign_item *items, int n);
/*
 * As the active controller: AlterPartitionReassignments of items
 * (reassign.h); NOT_CONTROLLER elsewhere (done never runs), else 0 and
 * done runs once each item is decided and written.  items stay the
 * caller's until done.
 */
int16_t cluster_reassign(struct cluster *cl, struct reassign_item *items, int n, cluster_reassign_fn *done, void *arg);
/*
 * As the active controller: OUT every partition as the last leadership
 * pass left it (adding / removing: a reassignment under way), valid until
 * the loop runs again.  NOT_CONTROLLER elsewhere.
 */
int16_t cluster_reassign_states(const struct cluster *cl, const struct leaders_state **out, int *n);
struct change_item;
/* items[0..n) as given, each with its err and the partition's state now (change.h). */
typedef void cluster_change_fn(void *arg, struct change_item *items, int n);
/*
 * As the active controller: ElectLeaders of items (preferred, or unclean),
 * as change.h says.  NOT_CONTROLLER elsewhere (done never runs), else 0 and
 * done runs once items are decided and written; the brokers then hear of
 * the new leaders (LeaderAndIsr, UpdateMetadata) from a leadership pass.
 * items stay the caller's until done.
 */
int16_t cluster_elect(struct cluster *cl, bool unclean, struct change_item *items, int n, cluster_change_fn *done,
		      void *arg);
/*
 * As the active controller: AlterPartition from leader broker_id (broker
 * epoch broker_epoch, -1: not checked) for items, as change.h says.
 * NOT_CONTROLLER elsewhere, STALE_BROKER_EPOCH for a broker not registered
 * or registered with another epoch (done never runs), else 0 and done
 * runs as for cluster_elect().
 */
int16_t cluster_isr_change(struct cluster *cl, int32_t broker_id, int64_t broker_epoch, struct change_item *items,
			   int n, cluster_change_fn *done, void *arg);
/*
 * What the controller answered an ISR change: err 0 with the partition
 * epoch (state znode version) and ISR now in ZooKeeper, or the Kafka error
 * (FENCED_LEADER_EPOCH, INVALID_UPDATE_VERSION, INELIGIBLE_REPLICA,
 * NOT_LEADER_OR_FOLLOWER, STALE_BROKER_EPOCH, UNKNOWN_TOPIC_OR_PARTITION,
 * ...: the leader's view is stale and the LeaderAndIsr on its way will
 * correct it), or REQUEST_TIMED_OUT when the cluster layer stopped first.
 * isr is valid during the call.
 */
typedef void cluster_alter_partition_fn(void *arg, int16_t err, int32_t new_partition_epoch, const int32_t *isr, int n);
/*
 * A partition's leader (this broker) asks the controller to set its ISR
 * to isr[0..n), as Kafka's AlterPartition: leader_epoch and
 * partition_epoch are those of the last LeaderAndIsr (its LeaderEpoch and
 * ZkVersion).  Sent to the current controller over an inter-broker
 * connection and retried (100 ms doubling to 2 s, the controller looked up
 * again each time) while no controller is known, the connection fails or
 * the answer is NOT_CONTROLLER; done runs once, on the loop thread, with
 * the answer (alterpart.h).  The leader keeps using its current ISR until
 * then, as Kafka's does.  0, or -ENOTCONN (not registered), -EINVAL (n
 * above ZNODE_REPLICAS_MAX or 0, a topic name too long), -ENOMEM: done
 * never runs.
 */
int cluster_alter_partition(struct cluster *cl, const char *topic, int32_t partition, int32_t leader_epoch,
			    int32_t partition_epoch, const int32_t *isr, int n, cluster_alter_partition_fn *done,
			    void *arg);
/* This broker's epoch: the czxid of its /brokers/ids/<id> (Kafka's broker epoch), -1 until registered. */
int64_t cluster_broker_epoch(const struct cluster *cl);
/* /cluster/id, "" until read. */
const char *cluster_id(const struct cluster *cl);
/*
 * OUT *id: a producer id unique in the cluster, from the blocks taken in
 * /latest_producer_id_block (pidblock.h).  0, or -EAGAIN while no block is
 * in hand (one is being taken: ask again shortly).
 */
int cluster_producer_id(struct cluster *cl, int64_t *id);
/* Registered under /brokers/ids in the current session. */
bool cluster_registered(const struct cluster *cl);
/* This broker is the active controller (kafka_controller_kafkacontroller_activecontrollercount). */
bool cluster_is_controller(const struct cluster *cl);
/*
 * As the active controller: partitions without a leader (leader -1) after
 * the last complete leadership pass, Kafka's OfflinePartitionsCount; 0
 * elsewhere (Kafka reports it on the controller only).
 */
int32_t cluster_offline_partitions(const struct cluster *cl);

/* err: 0, -EEXIST (the topic is there already), -ENOTCONN (no session, or it was lost), -EIO, or what a call says. */
typedef void cluster_done_fn(void *arg, int err);
/*
 * Writes a new topic as Kafka's CreateTopics does: /config/topics/<name>
 * (config: znode_topic_config_encode) and /brokers/topics/<name>
 * (assignment: znode_topic_encode), both or neither.  done runs once, on
 * the loop thread (at the latest in cluster_stop()).  0, or -ENOTCONN /
 * -ENOMEM (done never runs).
 */
int cluster_topic_create(struct cluster *cl, const char *name, const char *assignment, const char *config,
			 cluster_done_fn *done, void *arg);
/*
 * Marks topic name for deletion (/admin/delete_topics/<name>), as Kafka's
 * DeleteTopics does; the controller removes its znodes (deleter.h).  A
 * failure is logged: the znodes then stay until the mark is made again.
 */
void cluster_topic_delete(struct cluster *cl, const char *name);
/*
 * Adds partitions to a topic as Kafka's CreatePartitions does: reads
 * /brokers/topics/<name>, assigns partitions nparts .. total-1 (manual:
 * one broker each, [total - nparts], or NULL for Kafka's algorithm started
 * at partition 0's first replica, with its replication factor) and writes
 * the whole assignment back, conditional on the version read.  done's err:
 * 0, -ENOENT (no such topic), -ESTALE (it has not nparts partitions, or
 * changed meanwhile), -EINVAL (replication factor above the live brokers),
 * -ENOTCONN, -EIO.  0, or -ENOTCONN / -ENOMEM (done never runs).
 */
int cluster_topic_grow(struct cluster *cl, const char *name, int32_t nparts, int32_t total, const int32_t *manual,
		       cluster_done_fn *done, void *arg);

/*
 * A topic's config changed here (AlterConfigs): writes its overrides
 * (config: znode_topic_config_encode) to /config/topics/<name> and a
 * notification /config/changes/config_change_<n>, so every broker applies
 * them (on_topic_config).  done(arg, 0 / -ENOENT / -ENOTCONN / -EIO) once
 * ZooKeeper answered, unless this returns an error: 0 or -ENOTCONN / -ENOMEM.
 */
int cluster_topic_config_write(struct cluster *cl, const char *name, const char *config, cluster_done_fn *done,
			       void *arg);

/*
 * ACLs changed here (CreateAcls, DeleteAcls): writes the resources whose
 * ACLs differ between prev and next to Kafka's /kafka-acl znodes with a
 * change notification (aclzk.h), so every broker reloads them.  done runs
 * once on the loop thread; 0, or -ENOTCONN / -ENOMEM (done never runs).
 */
int cluster_acls_write(struct cluster *cl, const struct acl_set *prev, const struct acl_set *next, aclzk_done_fn *done,
		       void *arg);

/* err 0 and cfg the overrides, or err -ENOENT (none written), -EBADMSG (not Kafka's), -ENOTCONN, -EIO. */
typedef void cluster_config_fn(void *arg, int err, const struct znode_config *cfg);
/*
 * Reads topic name's config overrides (/config/topics/<name>), as a Kafka
 * broker does before making a topic's log.  done runs once on the loop
 * thread; 0, or -ENOTCONN / -ENOMEM (done never runs).
 */
int cluster_topic_config(struct cluster *cl, const char *name, cluster_config_fn *done, void *arg);

/*
 * Changes some keys of /config/<entity> ("users/<u>", "clients/<c>",
 * "users/<u>/clients/<c>"), keeping the others, and writes a config
 * change notification, so every broker reads it again (on_user_config,
 * on_quota_config): confchange_update() says how.  done (unless NULL)
 * hears 0, -ENOTCONN (ZooKeeper did not take it), -EBADMSG or -EIO
 * once, unless this returns -ENOTCONN / -ENOMEM.
 */
int cluster_entity_config_update(struct cluster *cl, const char *entity, const char *const *names,
				 const char *const *values, int n, cluster_done_fn *done, void *arg);
/* Reads /config/<entity>, as cluster_topic_config() does a topic's. */
int cluster_entity_config(struct cluster *cl, const char *entity, cluster_config_fn *done, void *arg);

#endif
