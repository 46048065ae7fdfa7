/*
 * topic_config.h - per-topic settings under Kafka's topic config names.
 *
 * Every topic key follows a broker setting until it is set for the topic
 * (CreateTopics configs, AlterConfigs, IncrementalAlterConfigs):
 * retention.ms follows log.retention.{ms,minutes,hours}, max.message.bytes
 * follows message.max.bytes, and so on (topic_cfg_synonym()).  A struct
 * topic_cfg holds the effective value of every key plus which keys were set
 * explicitly, so DescribeConfigs can report each value's source:
 *   set for the topic           CONFIG_SOURCE_DYNAMIC_TOPIC
 *   broker key given in file    CONFIG_SOURCE_STATIC_BROKER
 *   otherwise                   CONFIG_SOURCE_DEFAULT
 *
 * Fields are the keys with '.' -> '_' (retention.ms -> retention_ms);
 * storage as in util/conf.h (enums use config.h's CONFIG_CLEANUP_*,
 * CONFIG_COMPRESSION_*, CONFIG_TS_*).
 *
 * Persistence: topic_cfg_save() writes only the explicitly set keys as a
 * properties file (one "key=value" line each after a comment header),
 * atomically: <path>.tmp, fsync, rename, fsync of the directory.  Where the
 * file lives is the caller's choice.
 */
#ifndef GREGOR_BROKER_TOPIC_CONFIG_H
#define GREGOR_BROKER_TOPIC_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "broker/config.h"
#include "util/conf.h"

#define TOPIC_CFG_NKEYS 31

struct topic_cfg {
	int cleanup_policy;   /* CONFIG_CLEANUP_* */
	int compression_type; /* CONFIG_COMPRESSION_* */
	int64_t delete_retention_ms;
	int64_t file_delete_delay_ms;
	int64_t flush_messages;
	int64_t flush_ms; /* INT64_MAX = never by time */
	char *follower_replication_throttled_replicas;
	int32_t index_interval_bytes;
	char *leader_replication_throttled_replicas;
	int64_t local_retention_bytes;
	int64_t local_retention_ms;
	int64_t max_compaction_lag_ms;
	int32_t max_message_bytes;
	bool message_downconversion_enable;
	char *message_format_version;
	int64_t message_timestamp_after_max_ms;
	int64_t message_timestamp_before_max_ms;
	int64_t message_timestamp_difference_max_ms;
	int message_timestamp_type;      /* CONFIG_TS_* */
	char *min_cleanable_dirty_ratio; /* a double, kept as text */
	int64_t min_compaction_lag_ms;
	int32_t min_insync_replicas;
	int preallocate; /* 0: "false", 1: "true" */
	bool remote_storage_enable;
	int64_t retention_bytes; /* -1 = no size limit */
	int64_t retention_ms;    /* -1 = forever */
	int32_t segment_bytes;
	int32_t segment_index_bytes;
	int64_t segment_jitter_ms;
	int64_t segment_ms;
	bool unclean_leader_election_enable;

	bool set[TOPIC_CFG_NKEYS];       /* explicitly set for this topic */
	uint8_t source[TOPIC_CFG_NKEYS]; /* source of a value not set */
};

/* The table, for iteration (defs[i] describes set[i]). */
const struct conf_table *topic_cfg_table(void);

/* Every key from the broker's settings, none set.  0 or -ENOMEM. */
int topic_cfg_init(struct topic_cfg *t, const struct broker_cfg *b);
void topic_cfg_release(struct topic_cfg *t);
/* Deep copy (dst uninitialised), e.g. to validate changes on a scratch copy. */
int topic_cfg_copy(struct topic_cfg *dst, const struct topic_cfg *src);
/* Re-reads the broker value of every key not set (after a broker reload). */
int topic_cfg_refresh(struct topic_cfg *t, const struct broker_cfg *b);

/*
 * Sets key for this topic.  Returns 0, -ENOENT for an unknown key
 * (Kafka: INVALID_CONFIG), -EINVAL for a bad value (INVALID_CONFIG), with a
 * message in err, or -ENOMEM.
 */
int topic_cfg_set(struct topic_cfg *t, const char *key, const char *value, char *err, size_t errlen);
/* Reverts key to the broker's value.  0 or -ENOENT. */
int topic_cfg_delete(struct topic_cfg *t, const char *key, const struct broker_cfg *b);
/* Reverts every key (AlterConfigs replaces the whole set). */
int topic_cfg_reset(struct topic_cfg *t, const struct broker_cfg *b);

/*
 * Current value of key as text.  OUT: *source (CONFIG_SOURCE_*), *is_default
 * (true when neither the topic nor the broker file set it); either may be
 * NULL.  Returns 0, 1 if the value is null, -ENOENT for an unknown key.
 */
int topic_cfg_get(const struct topic_cfg *t, const char *key, char *buf, size_t n, int *source, bool *is_default);
bool topic_cfg_is_set(const struct topic_cfg *t, const char *key);
/* The broker key a topic key defaults from (NULL if none or unknown). */
const char *topic_cfg_synonym(const char *key);

/* Writes the keys set for this topic to path atomically.  0 or -errno. */
int topic_cfg_save(const struct topic_cfg *t, const char *path);
/* The text topic_cfg_save() writes (malloc'd, *len bytes), or NULL without memory. */
char *topic_cfg_format(const struct topic_cfg *t, size_t *len);
/*
 * Reads keys saved by topic_cfg_save() into t (already initialised), marking
 * them set.  Returns 0, -ENOENT if there is no such file (no overrides),
 * -EINVAL with "path:line: ..." in err for bad contents, or -errno.
 */
int topic_cfg_load(struct topic_cfg *t, const char *path, char *err, size_t errlen);

/* Markdown reference of the topic keys.  0 or -EIO. */
int topic_cfg_write_doc(FILE *f);

#endif
