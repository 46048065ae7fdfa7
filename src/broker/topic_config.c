/*
 * topic_config.c - per-topic settings and their broker defaults (see
 * topic_config.h).
 *
 * Two parallel tables: defs[] describes each topic key for util/conf (the
 * default there is what a broker with default settings gives, and is what
 * docs/configuration.md shows); syn[] names the broker key it follows.  A
 * topic value that is not set is copied from the broker as text through
 * conf_get()/conf_set(), so both sides keep one parser; the few keys Kafka
 * derives from several broker keys (retention.ms, segment.ms, ...) have a
 * derive function instead.
 */
#include "broker/topic_config.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/durable.h"

#define F(fld) offsetof(struct topic_cfg, fld)
#define I32MAX INT32_MAX
#define I64MAX INT64_MAX
#define BOOL(n, fld, d, doc)                                                                                           \
	{                                                                                                              \
		n, CONF_BOOL, F(fld), 0, 0, d, true, doc, NULL                                                         \
	}
#define I32(n, fld, lo, hi, d, doc)                                                                                    \
	{                                                                                                              \
		n, CONF_INT32, F(fld), lo, hi, d, true, doc, NULL                                                      \
	}
#define I64(n, fld, lo, hi, d, doc)                                                                                    \
	{                                                                                                              \
		n, CONF_INT64, F(fld), lo, hi, d, true, doc, NULL                                                      \
	}
#define STR(n, fld, d, doc)                                                                                            \
	{                                                                                                              \
		n, CONF_STRING, F(fld), 0, 0, d, true, doc, NULL                                                       \
	}
#define LIST(n, fld, d, doc)                                                                                           \
	{                                                                                                              \
		n, CONF_LIST, F(fld), 0, 0, d, true, doc, NULL                                                         \
	}
#define ENUM(n, fld, vals, d, doc)                                                                                     \
	{                                                                                                              \
		n, CONF_ENUM, F(fld), 0, 0, d, true, doc, vals                                                         \
	}
#define LMAX "9223372036854775807"

/* Sorted by name, as Kafka lists them in DescribeConfigs. */
static const struct conf_def defs[] = {
	ENUM("cleanup.policy", cleanup_policy, CONFIG_CLEANUP_VALUES, "delete",
	     "`delete` drops old segments by retention; `compact` keeps the last record per key and is never "
	     "deleted by retention; `compact,delete` does both. Default: `log.cleanup.policy`."),
	ENUM("compression.type", compression_type, CONFIG_COMPRESSION_VALUES, "producer",
	     "Codec of stored batches: `producer` keeps what the producer sent; `gzip`, `snappy`, `lz4`, `zstd` or "
	     "`uncompressed` re-encode batches in another codec on append (control batches are kept). "
	     "Default: `compression.type`."),
	I64("delete.retention.ms", delete_retention_ms, 0, I64MAX, "86400000",
	    "How long tombstones stay in a compacted topic. Default: `log.cleaner.delete.retention.ms`."),
	I64("file.delete.delay.ms", file_delete_delay_ms, 0, I64MAX, "60000",
	    "How long the files of a deleted topic (partition directories renamed `*-delete`) and the segments "
	    "deleted by retention, DeleteRecords or the log cleaner (files renamed `*.deleted`) stay on disk before "
	    "a background thread removes them; nothing waits for it. Default: `log.segment.delete.delay.ms`."),
	I64("flush.messages", flush_messages, 1, I64MAX, LMAX,
	    "Force an fsync after this many messages. Default: `log.flush.interval.messages`."),
	I64("flush.ms", flush_ms, 0, I64MAX, LMAX,
	    "Every this many ms (checked once a second), fsync the topic's partitions that have unflushed data. "
	    "Adds syncs; acks=all waits for its own. Default: `log.flush.interval.ms` (unset: never)."),
	LIST("follower.replication.throttled.replicas", follower_replication_throttled_replicas, "",
	     "Accepted, no effect on a single node."),
	I32("index.interval.bytes", index_interval_bytes, 0, I32MAX, "4096",
	    "Bytes of log between two index entries. Default: `log.index.interval.bytes`."),
	LIST("leader.replication.throttled.replicas", leader_replication_throttled_replicas, "",
	     "Accepted, no effect on a single node."),
	I64("local.retention.bytes", local_retention_bytes, -2, I64MAX, "-2", "Accepted, no effect (tiered storage)."),
	I64("local.retention.ms", local_retention_ms, -2, I64MAX, "-2", "Accepted, no effect (tiered storage)."),
	I64("max.compaction.lag.ms", max_compaction_lag_ms, 1, I64MAX, LMAX,
	    "Longest a record may stay uncompacted. Default: `log.cleaner.max.compaction.lag.ms`."),
	I32("max.message.bytes", max_message_bytes, 0, I32MAX, "1048588",
	    "Largest record batch accepted for this topic. Default: `message.max.bytes`."),
	BOOL("message.downconversion.enable", message_downconversion_enable, "true",
	     "Accepted; batches are served as stored (v2). Default: `log.message.downconversion.enable`."),
	STR("message.format.version", message_format_version, "3.0-IV1",
	    "Accepted; batches are stored as v2. Default: `log.message.format.version`."),
	I64("message.timestamp.after.max.ms", message_timestamp_after_max_ms, 0, I64MAX, "3600000",
	    "Reject batches with a record timestamp further in the future than this (CreateTime; INVALID_TIMESTAMP). "
	    "Default: `log.message.timestamp.after.max.ms`."),
	I64("message.timestamp.before.max.ms", message_timestamp_before_max_ms, 0, I64MAX, LMAX,
	    "Reject batches with a record timestamp further in the past than this (CreateTime; INVALID_TIMESTAMP). "
	    "Default: `log.message.timestamp.before.max.ms`."),
	I64("message.timestamp.difference.max.ms", message_timestamp_difference_max_ms, 0, I64MAX, LMAX,
	    "Deprecated: stands in for `message.timestamp.before.max.ms` / `after.max.ms` left at their defaults. "
	    "Default: `log.message.timestamp.difference.max.ms`."),
	ENUM("message.timestamp.type", message_timestamp_type, CONFIG_TS_VALUES, "CreateTime",
	     "Keep producer timestamps or stamp with the broker's time on append. "
	     "Default: `log.message.timestamp.type`."),
	STR("min.cleanable.dirty.ratio", min_cleanable_dirty_ratio, "0.5",
	    "Dirty share of the log that triggers compaction. Default: `log.cleaner.min.cleanable.ratio`."),
	I64("min.compaction.lag.ms", min_compaction_lag_ms, 0, I64MAX, "0",
	    "Shortest time a record stays uncompacted. Default: `log.cleaner.min.compaction.lag.ms`."),
	I32("min.insync.replicas", min_insync_replicas, 1, I32MAX, "1",
	    "Replicas that must have an acks=all batch: an acks=all produce to a partition whose in-sync replica "
	    "set is smaller fails with NOT_ENOUGH_REPLICAS (a single node is its partitions' whole set); acks=0/1 "
	    "are not affected. Default: `min.insync.replicas`."),
	ENUM("preallocate", preallocate, "false|true", "false",
	     "`true`: each new active segment file is allocated to `segment.bytes` when it is created (fallocate), "
	     "and cut back to its data when it rolls, at shutdown and at recovery (which reads the zero tail as "
	     "the end of the log). Default: `log.preallocate`."),
	BOOL("remote.storage.enable", remote_storage_enable, "false", "Accepted, no effect (tiered storage)."),
	I64("retention.bytes", retention_bytes, -1, I64MAX, "-1",
	    "Largest partition size before old segments are deleted; -1 no limit. Default: `log.retention.bytes`."),
	I64("retention.ms", retention_ms, -1, I64MAX, "604800000",
	    "Age after which segments are deleted; -1 forever. "
	    "Default: `log.retention.ms`, `log.retention.minutes`, `log.retention.hours`."),
	I32("segment.bytes", segment_bytes, 14, I32MAX, "1073741824",
	    "Segment size at which the log rolls. Default: `log.segment.bytes`."),
	I32("segment.index.bytes", segment_index_bytes, 4, I32MAX, "10485760",
	    "Largest index file per segment. Default: `log.index.size.max.bytes`."),
	I64("segment.jitter.ms", segment_jitter_ms, 0, I64MAX, "0",
	    "Largest random jitter subtracted from `segment.ms`, drawn anew for each active segment (below "
	    "`segment.ms`). Default: `log.roll.jitter.ms`, `log.roll.jitter.hours`."),
	I64("segment.ms", segment_ms, 1, I64MAX, "604800000",
	    "Age at which the active segment rolls, in broker time since its first append (producer timestamps do "
	    "not count). Default: `log.roll.ms`, `log.roll.hours`."),
	BOOL("unclean.leader.election.enable", unclean_leader_election_enable, "false",
	     "Cluster mode: the controller may elect a replica not in the ISR when no ISR member is live. "
	     "Default: `unclean.leader.election.enable`."),
};

_Static_assert(sizeof(defs) / sizeof(defs[0]) == TOPIC_CFG_NKEYS, "TOPIC_CFG_NKEYS");

static int64_t flush_ms(const struct broker_cfg *b)
{
	return b->log_flush_interval_ms < 0 ? INT64_MAX : b->log_flush_interval_ms;
}

/* Indexed like defs: the broker key(s) each topic key follows. */
static const struct topic_syn {
	const char *broker;                           /* synonym, copied as text */
	int64_t (*derive)(const struct broker_cfg *); /* or computed */
	const char *also;                             /* more keys that count as "set in file" */
} syn[] = {
	{ "log.cleanup.policy", NULL, NULL },
	{ "compression.type", NULL, NULL },
	{ "log.cleaner.delete.retention.ms", NULL, NULL },
	{ "log.segment.delete.delay.ms", NULL, NULL },
	{ "log.flush.interval.messages", NULL, NULL },
	{ "log.flush.interval.ms", flush_ms, NULL },
	{ NULL, NULL, NULL },
	{ "log.index.interval.bytes", NULL, NULL },
	{ NULL, NULL, NULL },
	{ NULL, NULL, NULL },
	{ NULL, NULL, NULL },
	{ "log.cleaner.max.compaction.lag.ms", NULL, NULL },
	{ "message.max.bytes", NULL, NULL },
	{ "log.message.downconversion.enable", NULL, NULL },
	{ "log.message.format.version", NULL, NULL },
	{ "log.message.timestamp.after.max.ms", NULL, NULL },
	{ "log.message.timestamp.before.max.ms", NULL, NULL },
	{ "log.message.timestamp.difference.max.ms", NULL, NULL },
	{ "log.message.timestamp.type", NULL, NULL },
	{ "log.cleaner.min.cleanable.ratio", NULL, NULL },
	{ "log.cleaner.min.compaction.lag.ms", NULL, NULL },
	{ "min.insync.replicas", NULL, NULL },
	{ "log.preallocate", NULL, NULL },
	{ NULL, NULL, NULL },
	{ "log.retention.bytes", NULL, NULL },
	{ "log.retention.ms", config_retention_ms, "log.retention.minutes,log.retention.hours" },
	{ "log.segment.bytes", NULL, NULL },
	{ "log.index.size.max.bytes", NULL, NULL },
	{ "log.roll.jitter.ms", config_roll_jitter_ms, "log.roll.jitter.hours" },
	{ "log.roll.ms", config_roll_ms, "log.roll.hours" },
	{ "unclean.leader.election.enable", NULL, NULL },
};

_Static_assert(sizeof(syn) / sizeof(syn[0]) == TOPIC_CFG_NKEYS, "syn[] must match defs[]");

static const struct conf_table table = {
	.defs = defs,
	.ndefs = TOPIC_CFG_NKEYS,
	.set_offset = offsetof(struct topic_cfg, set),
	.has_set = true,
};

const struct conf_table *topic_cfg_table(void)
{
	return &table;
}

const char *topic_cfg_synonym(const char *key)
{
	int i = conf_index(&table, key);

	return i < 0 ? NULL : syn[i].broker;
}

/* Whether the broker file/overrides gave any key that key i follows. */
static bool broker_given(int i, const struct broker_cfg *b)
{
	const char *p = syn[i].also;
	struct kstr it;

	if (!syn[i].broker)
		return false;
	if (config_is_set(b, syn[i].broker))
		return true;
	while (conf_list_next(&p, &it)) {
		char key[128];

		snprintf(key, sizeof(key), "%.*s", (int)it.len, it.p);
		if (config_is_set(b, key))
			return true;
	}
	return false;
}

/* Copies key i's value from the broker (or the table default); clears set[i]. */
static int inherit(struct topic_cfg *t, int i, const struct broker_cfg *b)
{
	const struct conf_def *d = &defs[i];
	char val[512], err[256];
	int rc;

	if (syn[i].derive) {
		snprintf(val, sizeof(val), "%" PRId64, syn[i].derive(b));
		rc = conf_set(&table, t, d->name, val, err, sizeof(err));
	} else if (syn[i].broker && conf_get(config_table(), b, syn[i].broker, val, sizeof(val)) == 0) {
		rc = conf_set(&table, t, d->name, val, err, sizeof(err));
	} else {
		rc = conf_unset(&table, t, d->name);
	}
	/* The broker's ranges contain the topic's: a failure is a table bug. */
	assert(rc != -EINVAL && rc != -ENOENT);
	t->set[i] = false;
	t->source[i] = broker_given(i, b) ? CONFIG_SOURCE_STATIC_BROKER : CONFIG_SOURCE_DEFAULT;
	return rc;
}

int topic_cfg_init(struct topic_cfg *t, const struct broker_cfg *b)
{
	int rc;

	memset(t, 0, sizeof(*t));
	rc = conf_defaults(&table, t);
	for (int i = 0; !rc && i < TOPIC_CFG_NKEYS; i++)
		rc = inherit(t, i, b);
	if (rc)
		topic_cfg_release(t);
	return rc;
}

void topic_cfg_release(struct topic_cfg *t)
{
	conf_release(&table, t);
}

int topic_cfg_copy(struct topic_cfg *dst, const struct topic_cfg *src)
{
	int rc;

	memset(dst, 0, sizeof(*dst));
	rc = conf_copy(&table, dst, src);
	memcpy(dst->source, src->source, sizeof(dst->source));
	if (rc)
		topic_cfg_release(dst);
	return rc;
}

int topic_cfg_refresh(struct topic_cfg *t, const struct broker_cfg *b)
{
	for (int i = 0; i < TOPIC_CFG_NKEYS; i++)
		if (!t->set[i] && inherit(t, i, b))
			return -ENOMEM;
	return 0;
}

int topic_cfg_set(struct topic_cfg *t, const char *key, const char *value, char *err, size_t errlen)
{
	return conf_set(&table, t, key, value, err, errlen);
}

int topic_cfg_delete(struct topic_cfg *t, const char *key, const struct broker_cfg *b)
{
	int i = conf_index(&table, key);

	return i < 0 ? -ENOENT : inherit(t, i, b);
}

int topic_cfg_reset(struct topic_cfg *t, const struct broker_cfg *b)
{
	for (int i = 0; i < TOPIC_CFG_NKEYS; i++)
		if (t->set[i] && inherit(t, i, b))
			return -ENOMEM;
	return 0;
}

int topic_cfg_get(const struct topic_cfg *t, const char *key, char *buf, size_t n, int *source, bool *is_default)
{
	int i = conf_index(&table, key);
	int src;

	if (i < 0) {
		if (n)
			buf[0] = '\0';
		return -ENOENT;
	}
	src = t->set[i] ? CONFIG_SOURCE_DYNAMIC_TOPIC : t->source[i];
	if (source)
		*source = src;
	if (is_default)
		*is_default = src == CONFIG_SOURCE_DEFAULT;
	return conf_get_def(&defs[i], t, buf, n);
}

bool topic_cfg_is_set(const struct topic_cfg *t, const char *key)
{
	return conf_is_set(&table, t, key);
}

/* ---- persistence ---- */

/* Writes value escaped for a properties file (see conf_load_text()). */
static void put_escaped(FILE *f, const char *v)
{
	for (const char *p = v; *p; p++) {
		switch (*p) {
		case '\\':
			fputs("\\\\", f);
			break;
		case '\n':
			fputs("\\n", f);
			break;
		case '\r':
			fputs("\\r", f);
			break;
		case '\t':
			fputs("\\t", f);
			break;
		case '\f':
			fputs("\\f", f);
			break;
		case ' ':
			/* Leading and trailing blanks would be trimmed on load. */
			fputs(p == v || !p[1] ? "\\u0020" : " ", f);
			break;
		default:
			fputc(*p, f);
			break;
		}
	}
}

char *topic_cfg_format(const struct topic_cfg *t, size_t *len)
{
	char *text = NULL, val[512];
	FILE *mem;

	*len = 0;
	mem = open_memstream(&text, len);
	if (!mem)
		return NULL;
	fputs("# Topic configuration set for this topic, written by gregor.\n", mem);
	for (int i = 0; i < TOPIC_CFG_NKEYS; i++) {
		if (!t->set[i] || conf_get_def(&defs[i], t, val, sizeof(val)))
			continue;
		fprintf(mem, "%s=", defs[i].name);
		put_escaped(mem, val);
		fputc('\n', mem);
	}
	if (fclose(mem)) {
		free(text);
		return NULL;
	}
	return text;
}

int topic_cfg_save(const struct topic_cfg *t, const char *path)
{
	size_t len;
	char *text = topic_cfg_format(t, &len);
	int rc;

	if (!text)
		return -ENOMEM;
	rc = durable_replace_path(path, text, len);
	free(text);
	return rc;
}

int topic_cfg_load(struct topic_cfg *t, const char *path, char *err, size_t errlen)
{
	return conf_load_file(&table, t, path, err, errlen);
}

int topic_cfg_write_doc(FILE *f)
{
	return conf_write_doc(&table, f);
}
