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

#include "cluster/znode.h"

struct loop;
struct cluster;

typedef void cluster_fatal_fn(void *arg, int exit_code);

/* What the broker tells the cluster layer; strings are borrowed for the cluster's life. */
struct cluster_cfg {
	const char *zookeeper_connect; /* "host:port,...[/chroot]" */
	int32_t session_timeout_ms;    /* zookeeper.session.timeout.ms */
	int32_t connection_timeout_ms; /* zookeeper.connection.timeout.ms */
	int32_t broker_id;
	const char *rack;            /* broker.rack, NULL for none */
	const char *endpoints;       /* "NAME://host:port,...": advertised, hosts and ports resolved */
	const char *protocol_map;    /* listener.security.protocol.map */
	const char *client_listener; /* listener whose endpoint Metadata reports for each broker */
	cluster_fatal_fn *on_fatal;  /* the broker must stop with this exit status */
	void *fatal_arg;
	/* a topic's config changed in ZooKeeper (/config/changes): read /config/topics/<topic> and apply it */
	void (*on_topic_config)(void *arg, const char *topic);
	void *topic_config_arg;
};

/* One live broker as Metadata reports it. */
struct cluster_broker {
	int32_t id;
	char host[ZNODE_HOST_MAX]; /* host and port of client_listener, else of its first listener */
	int32_t port;
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
 * them (on_topic_config).  A failure is logged.  0 or -ENOTCONN / -ENOMEM.
 */
int cluster_topic_config_write(struct cluster *cl, const char *name, const char *config);

/* err 0 and cfg the overrides, or err -ENOENT (none written), -EBADMSG (not Kafka's), -ENOTCONN, -EIO. */
typedef void cluster_config_fn(void *arg, int err, const struct znode_config *cfg);
/*
 * Reads topic name's config overrides (/config/topics/<name>), as a Kafka
 * broker does before making a topic's log.  done runs once on the loop
 * thread; 0, or -ENOTCONN / -ENOMEM (done never runs).
 */
int cluster_topic_config(struct cluster *cl, const char *name, cluster_config_fn *done, void *arg);

#endif
