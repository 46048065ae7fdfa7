/*
 * registry.h - the topics and partitions this broker holds.
 *
 * On disk each partition is a directory <log.dirs>/<topic>-<partition>/
 * (see log/partition.h).  Beside the partitions, in <log.dirs>:
 *   meta.properties                  version=1, node.id, cluster.id
 *   recovery-point-offset-checkpoint "0\n<count>\n<topic> <partition> <offset>\n"...
 *   cleaner-offset-checkpoint        same format: first offset not cleaned (log/compact.h)
 *   .kafka_cleanshutdown             present only after a clean shutdown
 * and in every partition directory, as Kafka has it:
 *   partition.metadata               "version: 0\ntopic_id: <base64url id>\n"
 * plus, in partition 0's directory, topic.properties with the topic's
 * explicitly set configs.  A topic exists on disk once <topic>-0 does:
 * registry_create() makes it last, by renaming a staging directory
 * <topic>-0.<32 hex>-create that already holds topic.properties;
 * registry_delete() renames it to Kafka's <topic>-0.<32 hex>-delete first,
 * then the other partitions, and a background thread (util/dirdel.h)
 * removes them.  registry_open() removes *-delete and *-create leftovers
 * and the partitions of topics without partition 0.  Every file here is
 * written through util/durable.h.
 *
 * "Which broker leads this partition" is answered only by
 * registry_leader(), so that cluster mode can change it in one place.
 */
#ifndef GREGOR_BROKER_REGISTRY_H
#define GREGOR_BROKER_REGISTRY_H

#include <stdbool.h>
#include <stdint.h>

#include "broker/config.h"
#include "broker/topic_config.h"
#include "util/buf.h"

struct part;
struct registry;

struct topic {
	struct registry *reg; /* the registry holding it */
	char *name;
	struct kuuid id;
	int32_t nparts;
	struct part **parts;
	struct topic_cfg cfg;
	bool internal; /* topic_name_internal(name) */
	/* clock_mono_ms() of the last flush.ms round (produce_flush_policy) */
	int64_t flush_round_ms;
};

/* Opens every partition under log.dirs (recovering after a crash). */
int registry_open(const struct broker_cfg *cfg, struct registry **out);
/* Clean shutdown: closes partitions, writes checkpoints and, if every sync succeeded, the marker. */
void registry_close(struct registry *reg);
const char *registry_cluster_id(const struct registry *reg);

struct topic *registry_find(struct registry *reg, struct kstr name);
/* Returns 0, -EEXIST, -EINVAL (bad name), or -errno from the disk. */
int registry_create(struct registry *reg, struct kstr name, int32_t nparts, const struct topic_cfg *tcfg,
		    struct topic **out);
int registry_delete(struct registry *reg, struct topic *t);
int registry_add_partitions(struct registry *reg, struct topic *t, int32_t total);
/* Persists t->cfg and applies it to the open partitions. */
int registry_save_cfg(struct registry *reg, struct topic *t);
/*
 * After a broker config reload: every topic key not set for its topic
 * takes the broker's current value (topic_cfg_refresh()), and each topic's
 * config is re-applied to its open partitions; nothing is written.
 * Returns 0 or -ENOMEM (the topics before the failure are refreshed).
 */
int registry_refresh_cfg(struct registry *reg);
/* Topics sorted by name; the array is owned by the registry, valid until the next change. */
struct topic **registry_topics(struct registry *reg, int *n);
int32_t registry_leader(const struct registry *reg, const struct topic *t, int32_t partition);
/*
 * NULL if out of range or offline (its files could not be opened, or a
 * sync in the log directory failed: registry_fail_dir()).
 */
struct part *registry_part(const struct topic *t, int32_t partition);
/* Why registry_part() is NULL: UNKNOWN_TOPIC_OR_PARTITION (t may be NULL) or KAFKA_STORAGE_ERROR. */
int16_t registry_part_error(const struct topic *t, int32_t partition);

/* Kafka's rule: [a-zA-Z0-9._-]{1,249}, not "." or "..". */
bool topic_name_valid(struct kstr name);
/*
 * True only for the coordinators' topics, __consumer_offsets and
 * __transaction_state: clients may not produce to them, add partitions to
 * them or delete them.  Any other name, "__x" included, is a user topic.
 */
bool topic_name_internal(struct kstr name);

/*
 * A sync in the log directory failed with err (-errno); callable from any
 * thread.  The directory is offline from then on, as Kafka takes a failed
 * log dir offline: every partition answers KAFKA_STORAGE_ERROR, no
 * checkpoint is written, and registry_close() neither syncs nor marks the
 * shutdown clean, so the next start recovers from the last checkpoint.
 */
void registry_fail_dir(struct registry *reg, int err);
bool registry_dir_failed(const struct registry *reg);

/* Writes the recovery-point checkpoint (called periodically; not once the dir failed). */
int registry_checkpoint(struct registry *reg);
/* Applies retention to every partition. */
void registry_retain(struct registry *reg, int64_t now_ms);

#endif
