/*
 * config.h - the broker's settings, under Kafka's names.
 *
 * struct broker_cfg holds one field per server.properties key, named after
 * the key with '.' replaced by '_' (log.retention.hours ->
 * log_retention_hours).  The table in config.c (util/conf.h) is the single
 * description of every key: the file parser, --override, DescribeConfigs
 * and docs/configuration.md all come from it.
 *
 * Storage follows util/conf.h: bool, int32_t, int64_t, int (enums, see the
 * CONFIG_* constants below) and heap char * for strings and lists (lists
 * are normalised "a,b,c", walk them with conf_list_next()).  Nullable
 * numbers (log.retention.ms, log.retention.minutes, log.roll.ms) hold
 * CONF_UNSET32/CONF_UNSET64 when not given; use the derived getters below
 * rather than reading those fields.
 *
 * Lifecycle: config_init() (defaults) ... config_release().  A struct
 * filled by config_parse_args() is already initialised.
 */
#ifndef GREGOR_BROKER_CONFIG_H
#define GREGOR_BROKER_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "util/conf.h"

#define GREGOR_VERSION "0.1.0"

/* Upper bound on the number of broker keys (checked in config.c). */
#define CONFIG_NKEYS_MAX 160

/* Kafka's DescribeConfigs ConfigSource values. */
enum config_source {
	CONFIG_SOURCE_UNKNOWN = 0,
	CONFIG_SOURCE_DYNAMIC_TOPIC = 1,
	CONFIG_SOURCE_DYNAMIC_BROKER = 2,
	CONFIG_SOURCE_DYNAMIC_DEFAULT_BROKER = 3,
	CONFIG_SOURCE_STATIC_BROKER = 4,
	CONFIG_SOURCE_DEFAULT = 5,
	CONFIG_SOURCE_DYNAMIC_BROKER_LOGGER = 6,
};

/* Kafka's DescribeConfigs ConfigType values (v3+). */
enum config_kafka_type {
	CONFIG_KTYPE_UNKNOWN = 0,
	CONFIG_KTYPE_BOOLEAN = 1,
	CONFIG_KTYPE_STRING = 2,
	CONFIG_KTYPE_INT = 3,
	CONFIG_KTYPE_SHORT = 4,
	CONFIG_KTYPE_LONG = 5,
	CONFIG_KTYPE_DOUBLE = 6,
	CONFIG_KTYPE_LIST = 7,
};

/* log.message.timestamp.type / message.timestamp.type */
enum { CONFIG_TS_CREATE_TIME = 0, CONFIG_TS_LOG_APPEND_TIME = 1 };
#define CONFIG_TS_VALUES "CreateTime|LogAppendTime"
/* log.cleanup.policy / cleanup.policy: Kafka's list of delete and compact, either order */
enum {
	CONFIG_CLEANUP_DELETE = 0,
	CONFIG_CLEANUP_COMPACT = 1,
	CONFIG_CLEANUP_COMPACT_DELETE = 2,
	CONFIG_CLEANUP_DELETE_COMPACT = 3,
};
#define CONFIG_CLEANUP_VALUES "delete|compact|compact,delete|delete,compact"
/* True if the policy includes delete: retention.ms / retention.bytes apply. */
static inline bool config_cleanup_deletes(int policy)
{
	return policy != CONFIG_CLEANUP_COMPACT;
}
/* compression.type */
enum {
	CONFIG_COMPRESSION_PRODUCER = 0,
	CONFIG_COMPRESSION_GZIP,
	CONFIG_COMPRESSION_SNAPPY,
	CONFIG_COMPRESSION_LZ4,
	CONFIG_COMPRESSION_ZSTD,
	CONFIG_COMPRESSION_UNCOMPRESSED,
};
#define CONFIG_COMPRESSION_VALUES "producer|gzip|snappy|lz4|zstd|uncompressed"

struct broker_cfg {
	/* identity and listeners */
	int32_t node_id;
	int32_t broker_id; /* alias of node_id, kept equal after parsing */
	char *cluster_id;
	char *listeners;            /* list */
	char *metrics_listener;     /* http://host:port of /metrics and /health; NULL: off */
	bool console_write_enable;  /* the web console may create topics and reset offsets */
	char *advertised_listeners; /* list, NULL = listeners */
	char *broker_rack;
	/* log layout */
	char *log_dirs; /* list */
	char *log_dir;  /* alias; log.dirs wins */
	int32_t num_partitions;
	int32_t default_replication_factor;
	bool auto_create_topics_enable;
	bool delete_topic_enable;
	/* limits and sockets */
	int32_t message_max_bytes;
	int32_t fetch_max_bytes; /* clamps Fetch MaxBytes and PartitionMaxBytes */
	int32_t max_incremental_fetch_session_cache_slots;
	int64_t min_incremental_fetch_session_eviction_ms;
	int32_t socket_request_max_bytes;
	int32_t socket_send_buffer_bytes; /* -1 = OS default */
	int32_t socket_receive_buffer_bytes;
	int32_t socket_listen_backlog_size;
	int32_t max_connections;
	int32_t max_connections_per_ip;
	int64_t queued_max_request_bytes; /* -1 = no limit beyond per-connection caps */
	int32_t queued_max_requests;
	int64_t connections_max_idle_ms;
	int64_t connection_failed_authentication_delay_ms;
	int64_t connections_max_reauth_ms; /* KIP-368; 0 = off */
	int32_t quota_window_num;          /* client quotas (broker/quota.h) */
	int32_t quota_window_size_seconds;
	/* segments, retention, indexes */
	int32_t log_segment_bytes;
	int64_t log_roll_ms; /* nullable: use config_roll_ms() */
	int32_t log_roll_hours;
	int64_t log_roll_jitter_ms; /* nullable */
	int32_t log_roll_jitter_hours;
	int64_t log_retention_ms;      /* nullable: use config_retention_ms() */
	int32_t log_retention_minutes; /* nullable */
	int32_t log_retention_hours;
	int64_t log_retention_bytes;
	int64_t log_retention_check_interval_ms;
	int32_t log_index_interval_bytes;
	int32_t log_index_size_max_bytes;
	int64_t log_segment_delete_delay_ms;
	int32_t log_segment_fd_cache_size;
	int log_preallocate;    /* 0: "false", 1: "true" */
	int log_cleanup_policy; /* CONFIG_CLEANUP_* */
	bool log_cleaner_enable;
	int32_t log_cleaner_threads; /* 1: the only value accepted */
	int64_t log_cleaner_backoff_ms;
	int64_t log_cleaner_dedupe_buffer_size;
	char *log_cleaner_io_max_bytes_per_second; /* a double, kept as text */
	int64_t log_cleaner_delete_retention_ms;
	int64_t log_cleaner_min_compaction_lag_ms;
	int64_t log_cleaner_max_compaction_lag_ms;
	char *log_cleaner_min_cleanable_ratio; /* a double, kept as text */
	/* flush */
	int64_t log_flush_interval_messages;
	int64_t log_flush_interval_ms; /* -1 = not set */
	int64_t log_flush_scheduler_interval_ms;
	int32_t log_flush_offset_checkpoint_interval_ms;
	int32_t log_flush_start_offset_checkpoint_interval_ms;
	/* messages */
	int log_message_timestamp_type; /* CONFIG_TS_* */
	int64_t log_message_timestamp_difference_max_ms;
	int64_t log_message_timestamp_before_max_ms;
	int64_t log_message_timestamp_after_max_ms;
	bool log_message_downconversion_enable;
	char *log_message_format_version;
	int compression_type; /* CONFIG_COMPRESSION_* */
	/* replication */
	int32_t min_insync_replicas;
	bool unclean_leader_election_enable;
	bool auto_leader_rebalance_enable;
	int64_t leader_imbalance_check_interval_seconds;
	int32_t leader_imbalance_per_broker_percentage;
	int32_t num_replica_fetchers;
	int64_t replica_lag_time_max_ms;
	int32_t replica_fetch_max_bytes;                       /* per partition of a follower's Fetch */
	int32_t replica_fetch_response_max_bytes;              /* a follower's Fetch MaxBytes */
	int32_t replica_fetch_wait_max_ms;                     /* a follower's Fetch MaxWaitMs */
	int32_t replica_fetch_min_bytes;                       /* a follower's Fetch MinBytes */
	int32_t replica_fetch_backoff_ms;                      /* pause after a failed follower fetch */
	int64_t replica_high_watermark_checkpoint_interval_ms; /* replication-offset-checkpoint */
	/* consumer groups */
	int32_t offsets_topic_num_partitions;
	int32_t offsets_topic_replication_factor;
	int32_t offsets_topic_segment_bytes;
	int32_t offsets_retention_minutes;
	int64_t offsets_retention_check_interval_ms;
	int32_t offsets_commit_timeout_ms;
	int32_t group_initial_rebalance_delay_ms;
	int32_t group_min_session_timeout_ms;
	int32_t group_max_session_timeout_ms;
	int32_t group_max_size;
	/* transactions and idempotence */
	int32_t transaction_max_timeout_ms;
	int32_t transactional_id_expiration_ms;
	int32_t producer_id_expiration_ms;
	int32_t transaction_state_log_num_partitions;
	int32_t transaction_state_log_replication_factor;
	int32_t transaction_state_log_min_isr;
	int32_t transaction_state_log_segment_bytes;
	int32_t transaction_abort_timed_out_transaction_cleanup_interval_ms;
	int32_t transaction_remove_expired_transaction_cleanup_interval_ms;
	bool transaction_partition_verification_enable;
	/* threads (accepted for compatibility) */
	int32_t num_network_threads;
	int32_t num_io_threads;
	int32_t num_recovery_threads_per_data_dir;
	int32_t background_threads;
	/* cluster: ZooKeeper mode (zookeeper.connect set); KRaft keys accepted, unused */
	char *zookeeper_connect;
	int32_t zookeeper_connection_timeout_ms;
	int32_t zookeeper_session_timeout_ms;
	char *process_roles;
	char *controller_quorum_voters;
	char *controller_quorum_bootstrap_servers;
	char *controller_listener_names;
	char *inter_broker_listener_name;
	bool controlled_shutdown_enable;
	int32_t controlled_shutdown_max_retries;
	int32_t controlled_shutdown_retry_backoff_ms;
	char *listener_security_protocol_map;
	/* TLS on SSL listeners (sec/tls.h) */
	char *ssl_keystore_type;
	char *ssl_keystore_location;
	char *ssl_key_password;
	char *ssl_keystore_password;
	char *ssl_keystore_certificate_chain;
	char *ssl_keystore_key;
	char *ssl_truststore_type;
	char *ssl_truststore_location;
	char *ssl_truststore_certificates;
	char *ssl_truststore_password;
	int ssl_client_auth; /* 0 none, 1 requested, 2 required */
	char *ssl_enabled_protocols;
	char *ssl_cipher_suites;
	char *ssl_principal_mapping_rules;
	char *sasl_enabled_mechanisms;
	char *sasl_jaas_config;
	char *sasl_mechanism_inter_broker_protocol;
	char *ssl_endpoint_identification_algorithm;
	char *sasl_scram_users;
	char *authorizer_class_name; /* NULL/empty: no authorizer (broker/authz.h) */
	char *super_users;           /* principals separated by ';' */
	bool allow_everyone_if_no_acl_found;
	/* listener.name.<name>.ssl.* overrides, in the order read (config_listener_ssl()) */
	struct config_kv {
		char *key, *value;
	} * listener_ssl;
	int nlistener_ssl;
	char *security_inter_broker_protocol;
	int32_t share_coordinator_state_topic_replication_factor;
	int32_t share_coordinator_state_topic_min_isr;
	/* diagnostics */
	char *log_debug; /* list: net,proto,log,group,txn,broker,cluster,all */

	bool set[CONFIG_NKEYS_MAX]; /* explicitly given, indexed like the table */
};

/* The table, for iteration (config_table()->defs[0 .. ndefs-1]). */
const struct conf_table *config_table(void);

/* Defaults.  Returns 0 or -ENOMEM. */
int config_init(struct broker_cfg *cfg);
void config_release(struct broker_cfg *cfg);

/* Reads server.properties on top of cfg; err gets "file:line: ...". */
int config_load(struct broker_cfg *cfg, const char *path, char *err, size_t errlen);
/* One setting; 0, -ENOENT (unknown key) or -EINVAL (bad value), err set. */
int config_set(struct broker_cfg *cfg, const char *key, const char *value, char *err, size_t errlen);
/*
 * Resolves aliases (broker.id -> node.id, log.dir -> log.dirs when log.dirs
 * is not given) and checks settings against each other (session timeout
 * range) and applies log.debug to util/log (log_set_debug()).  Call once
 * after the file and overrides.  Returns 0 or -EINVAL with err set.
 */
int config_finalize(struct broker_cfg *cfg, char *err, size_t errlen);

/*
 * Current value of key as text (DescribeConfigs).  OUT: *source is
 * CONFIG_SOURCE_STATIC_BROKER if given in the file/overrides, else
 * CONFIG_SOURCE_DEFAULT (source may be NULL).  Returns 0, 1 if the value is
 * null, -ENOENT for an unknown key.
 */
int config_get(const struct broker_cfg *cfg, const char *key, char *buf, size_t n, int *source);
/* The first entry of log.dirs (the one a single node uses) into dir.  0 or -ENAMETOOLONG. */
int config_first_log_dir(const struct broker_cfg *cfg, char *dir, size_t size);
bool config_is_set(const struct broker_cfg *cfg, const char *key);
/* Logs the Kafka settings that were set explicitly but that this broker does not use (threads). */
void config_report_unused(const struct broker_cfg *cfg);
/* DescribeConfigs ConfigType of a table entry. */
int config_kafka_type(const struct conf_def *d);

/* Derived values, Kafka's precedence: ms > minutes > hours; <0 -> -1 (forever). */
int64_t config_retention_ms(const struct broker_cfg *cfg);
/* log.roll.ms, else log.roll.hours. */
int64_t config_roll_ms(const struct broker_cfg *cfg);
/* log.roll.jitter.ms, else log.roll.jitter.hours. */
int64_t config_roll_jitter_ms(const struct broker_cfg *cfg);
/*
 * The value of ssl.<key> for listener name: listener.name.<name>.ssl.<key>
 * (name in lower case, as Kafka writes it) if set, else the broker-wide
 * ssl.<key> value given as dflt.  Borrowed from cfg.
 */
const char *config_listener_ssl(const struct broker_cfg *cfg, const char *name, const char *key, const char *dflt);

/* advertised.listeners if given and non-empty, else listeners. */
const char *config_advertised_listeners(const struct broker_cfg *cfg);

/*
 * Command line: gregor [--help] [--version] [--print-config-doc]
 *                      [server.properties] [--override key=value ...]
 * Initialises cfg, loads the file (if any), applies every override (they
 * win over the file whatever their position) and finalises.
 * OUT: *out_config_path is the file argument or NULL (may be NULL).
 * Returns CONFIG_ARGS_RUN to go on and start the broker (cfg then owned by
 * the caller: config_release()), or a process exit code with cfg already
 * released: 0 after --help/--version printed to stdout,
 * 2 after an error and the usage were printed to stderr.
 */
#define CONFIG_ARGS_RUN (-1)
/* --print-config-doc: the caller prints config_write_doc(stdout) and exits. */
#define CONFIG_ARGS_PRINT_DOC (-2)
int config_parse_args(int argc, char **argv, struct broker_cfg *cfg, const char **out_config_path);
/*
 * What config_parse_args() does after checking the arguments: defaults,
 * the file at path (NULL: none), every --override in argv, finalize.
 * Prints nothing.  Returns 0 (cfg then owned by the caller) or an error
 * with cfg released and one line in err ("path:12: unknown setting ...").
 */
int config_read(struct broker_cfg *cfg, const char *path, int argc, char **argv, char *err, size_t errlen);
/*
 * Reload (SIGHUP): moves into cur the value and set flag of every dynamic
 * key from next, logging each change; each non-dynamic key whose value
 * differs keeps its running value and logs one line saying it needs a
 * restart.  next is left holding what was not taken (config_release() it).
 * Returns the number of dynamic keys whose value changed.
 */
int config_update(struct broker_cfg *cur, struct broker_cfg *next);
void config_usage(FILE *f, const char *prog);

/* Writes docs/configuration.md (broker and topic settings; config_doc.c).
 * 0 or -EIO. */
int config_write_doc(FILE *f);

#endif
