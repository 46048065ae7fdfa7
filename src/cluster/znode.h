/*
 * znode.h - Kafka's znode paths and the JSON documents they hold
 * (ZooKeeper mode, as Kafka 2.8/3.x writes them), encoded and decoded with
 * jansson.  Pure functions: no ZooKeeper, no I/O, unit-tested on their own.
 *
 *   /cluster/id              {"version":"1","id":"<22-char base64url uuid>"}
 *   /brokers/ids/<id>        ephemeral, version 5:
 *                            {"features":{},"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"},
 *                             "endpoints":["PLAINTEXT://host:9092"],"rack":"r1","jmx_port":-1,
 *                             "host":"host","port":9092,"timestamp":"1700000000000","version":5}
 *                            host/port: those of the PLAINTEXT endpoint (null/-1 without one);
 *                            rack only when broker.rack is set
 *   /controller              ephemeral {"version":1,"brokerid":1,"timestamp":"1700000000000"}
 *   /controller_epoch        the epoch as decimal text, "1" after the first election
 *   ZNODE_PERSISTENT_PATHS   created (null data) at start-up, as Kafka does
 *   /brokers/topics/<t>      a topic's replica assignment, version 3:
 *                            {"version":3,"partitions":{"0":[1,2]},"topic_id":"<22-char id>",
 *                             "adding_replicas":{},"removing_replicas":{}}
 *   /config/topics/<t>       the topic's config overrides {"version":1,"config":{"k":"v"}}
 *   /brokers/topics/<t>/partitions/<p>/state
 *                            {"controller_epoch":1,"leader":2,"version":1,"leader_epoch":0,"isr":[2]}
 *                            leader -1 while the partition has none
 *   /config/changes/config_change_<10 digits>
 *                            sequential: {"version":2,"entity_path":"topics/<t>"}, a config changed
 *   /latest_producer_id_block {"version":1,"broker":1,"block_start":"1000","block_end":"1999"}
 *                            the last block of producer ids taken (null data: none yet)
 *
 * Decoders never trust the bytes: anything malformed is -EBADMSG, never an
 * assertion, since another (possibly newer or foreign) broker wrote them.
 */
#ifndef GREGOR_CLUSTER_ZNODE_H
#define GREGOR_CLUSTER_ZNODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ZNODE_CLUSTER_ID "/cluster/id"
#define ZNODE_BROKER_IDS "/brokers/ids"
#define ZNODE_CONTROLLER "/controller"
#define ZNODE_CONTROLLER_EPOCH "/controller_epoch"
#define ZNODE_TOPICS "/brokers/topics"
#define ZNODE_TOPIC_CONFIGS "/config/topics"
#define ZNODE_DELETE_TOPICS "/admin/delete_topics"

/* Kafka's persistent paths (ZkData's PersistentZkPaths), made at start-up; NULL-terminated. */
extern const char *const znode_persistent_paths[];

/*
 * A topic's assignment (/brokers/topics/<name>) must fit one znode, at
 * most 1 MiB (ZooKeeper's jute.maxbuffer), and takes at least 2 bytes a
 * replica: a topic of more partitions x replicas cannot be stored.
 */
#define ZNODE_TOPIC_MAX_REPLICAS (1 << 19)

#define ZNODE_HOST_MAX 256
#define ZNODE_NAME_MAX 64
#define ZNODE_ENDPOINTS_MAX 8

struct znode_endpoint {
	char listener[ZNODE_NAME_MAX]; /* listener name: PLAINTEXT, INTERNAL, ... */
	char protocol[ZNODE_NAME_MAX]; /* security protocol: PLAINTEXT, SSL, ... */
	char host[ZNODE_HOST_MAX];
	int32_t port;
};

/* A broker's registration (/brokers/ids/<id>). */
struct znode_broker {
	int32_t id;
	int32_t version; /* of the document: 5 when we write it */
	int64_t timestamp_ms;
	char rack[ZNODE_NAME_MAX];
	bool has_rack;
	int nendpoints;
	struct znode_endpoint endpoints[ZNODE_ENDPOINTS_MAX];
};

/*
 * Fills zb's endpoints from a listener list ("NAME://host:port,...", as
 * advertised.listeners) and listener.security.protocol.map ("NAME:PROTO,...");
 * a name missing from the map is its own protocol (PLAINTEXT, SSL, ...).
 * Returns 0 or -EINVAL (unparsable entry, too many, duplicate name).
 */
int znode_endpoints_parse(struct znode_broker *zb, const char *listeners, const char *protocol_map);
/* The endpoint of listener (NULL or not found: the first); NULL if zb has none. */
const struct znode_endpoint *znode_broker_endpoint(const struct znode_broker *zb, const char *listener);

/* Version 5 JSON; malloc'd, the caller frees; NULL when out of memory. */
char *znode_broker_encode(const struct znode_broker *zb);
/* Any version Kafka wrote (1-5); id comes from the path, not the document.  0 or -EBADMSG. */
int znode_broker_decode(const char *json, size_t len, int32_t id, struct znode_broker *out);

char *znode_controller_encode(int32_t broker_id, int64_t timestamp_ms);
int znode_controller_decode(const char *json, size_t len, int32_t *broker_id);

char *znode_cluster_id_encode(const char *cluster_id);
/* OUT: id, NUL-terminated; -EBADMSG also when it does not fit idlen. */
int znode_cluster_id_decode(const char *json, size_t len, char *id, size_t idlen);

/* /controller_epoch: plain decimal, 0 .. INT32_MAX.  0 or -EBADMSG. */
int znode_epoch_decode(const char *text, size_t len, int32_t *epoch);

/*
 * /brokers/topics/<t>: replicas[p * rf + r] is replica r of partition p
 * (nparts partitions of rf replicas each); topic_id base64url.  NULL when
 * out of memory.
 */
char *znode_topic_encode(const int32_t *replicas, int32_t nparts, int32_t rf, const char *topic_id);
/* /config/topics/<t>: n overrides, names[i] = values[i]. */
char *znode_topic_config_encode(const char *const *names, const char *const *values, int n);
/* What znode_topic_config_decode() read: n overrides, malloc'd (znode_topic_config_free()). */
struct znode_config {
	int n;
	char **names, **values;
};
/* Version 1 with string values.  0, -EBADMSG or -ENOMEM. */
int znode_topic_config_decode(const char *json, size_t len, struct znode_config *out);
void znode_topic_config_free(struct znode_config *c);

#define ZNODE_REPLICAS_MAX 16

/* A topic's assignment as read back: parts[p] lists partition p's replicas. */
struct znode_topic {
	char topic_id[32]; /* "" if the document has none (versions 1-2) */
	int32_t nparts;
	struct znode_replicas {
		int32_t n;
		int32_t ids[ZNODE_REPLICAS_MAX];
	} * parts; /* malloc'd [nparts]; znode_topic_free() */
	/*
	 * A reassignment under way (KIP-455): adding[p] / removing[p] are the
	 * replicas partition p gains / loses (n 0: none); malloc'd [nparts].
	 */
	struct znode_replicas *adding, *removing;
};
/* Any version 1-3 (partitions 0..n-1, each listed once).  0, -EBADMSG or -ENOMEM. */
int znode_topic_decode(const char *json, size_t len, struct znode_topic *out);
void znode_topic_free(struct znode_topic *zt);
/* The whole document (version 3, adding/removing of the partitions that have them).  NULL when out of memory. */
char *znode_topic_doc_encode(const struct znode_topic *zt);

/*
 * Kafka's older input /admin/reassign_partitions:
 * {"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,2]},...]}.
 * OUT: n entries, malloc'd (free(*out)).  0, -EBADMSG or -ENOMEM.
 */
#define ZNODE_REASSIGN "/admin/reassign_partitions"
struct znode_reassign {
	char topic[256];
	int32_t partition;
	struct znode_replicas replicas;
};
int znode_reassign_decode(const char *json, size_t len, struct znode_reassign **out, int *n);

/* A partition's leader and ISR (.../partitions/<p>/state, version 1). */
struct znode_state {
	int32_t leader; /* -1: none */
	int32_t leader_epoch;
	int32_t controller_epoch;
	struct znode_replicas isr;
};
char *znode_state_encode(const struct znode_state *st);
int znode_state_decode(const char *json, size_t len, struct znode_state *out);

#define ZNODE_CONFIG_CHANGES "/config/changes"
#define ZNODE_CONFIG_CHANGE_PREFIX "config_change_"
char *znode_config_change_encode(const char *entity_path);
/* OUT: entity_path ("topics/<t>"), NUL-terminated.  0, or -EBADMSG (also when longer than n - 1). */
int znode_config_change_decode(const char *json, size_t len, char *entity_path, size_t n);

#define ZNODE_PID_BLOCK "/latest_producer_id_block"
#define ZNODE_PID_BLOCK_SIZE 1000 /* Kafka's ProducerIdManager block size */
/* /latest_producer_id_block; bounds inclusive.  NULL when out of memory. */
char *znode_pid_block_encode(int32_t broker_id, int64_t block_start, int64_t block_end);
/* 0, or -EBADMSG (not Kafka's, negative, or start above end). */
int znode_pid_block_decode(const char *json, size_t len, int64_t *block_start, int64_t *block_end);

/* Parses a child name of /brokers/ids as a broker id.  0 or -EINVAL. */
int znode_broker_id_parse(const char *name, int32_t *id);

#endif
