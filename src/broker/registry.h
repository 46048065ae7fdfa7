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
 * a create makes it last, by renaming a staging directory
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
#include "log/partition.h"
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
	bool creating;       /* its files are being made: no partitions yet (registry_build_end) */
	int32_t nparts_next; /* nparts once the builds in flight for it are done */
	int builds;          /* builds in flight for it: it may not be deleted meanwhile */
};

/*
 * Making topics and partitions, in rounds (broker/creator.h runs them off
 * the event loop).  The loop thread begins a build: a new topic is in the
 * registry at once, creating (no partitions, registry_part_error()
 * LEADER_NOT_AVAILABLE), so its name is taken; partitions being added
 * count only in nparts_next.  A worker thread makes the files of a whole
 * round of builds with registry_build_round(): every directory and file,
 * one syncfs of the log dir's file system, then the renames of the new
 * topics' staged partition 0 and one fsync of the log dir.  The loop
 * thread ends each build with registry_build_end(): its partitions appear,
 * or, if the round failed, the topic goes (its files already removed).
 */
struct reg_build {
	struct reg_build *next; /* the creator's queues */
	struct topic *t;
	int32_t from, to; /* the partitions made, [from, to) */
	int32_t reached;  /* the worker's: partitions [from, reached) were begun (undo removes those only) */
	bool create;      /* t is new: from == 0 */
	int err;          /* the round's outcome for it: 0 or -errno */
	/* the creator's: told at the end (registry_build_end) */
	void (*done)(void *waiter, int32_t slot, int err);
	void *waiter;
	int32_t slot;
	/* registry.c's, prepared on the loop thread for the worker */
	struct part_cfg pc;
	char *cfg_text; /* topic.properties of a new topic */
	size_t cfg_len;
	char *stage;         /* partition 0 staged here while made */
	struct part **parts; /* [to - from], opened by the worker */
};

/* Opens every partition under log.dirs (recovering after a crash). */
int registry_open(const struct broker_cfg *cfg, struct registry **out);
/* Clean shutdown: closes partitions, writes checkpoints and, if every sync succeeded, the marker. */
void registry_close(struct registry *reg);
const char *registry_cluster_id(const struct registry *reg); /* "" in cluster mode until known */
/*
 * Cluster mode: the cluster id read from ZooKeeper.  Written to
 * meta.properties (durably) if none is stored; -EINVAL (logged) if another
 * is: the broker is joining the wrong cluster.  0 or -errno.
 */
int registry_set_cluster_id(struct registry *reg, const char *id);

struct topic *registry_find(struct registry *reg, struct kstr name);
/*
 * How many more partitions the descriptor limit leaves room for: each
 * partition holds one descriptor, and the soft RLIMIT_NOFILE (read now,
 * so a prlimit is seen) less log.segment.fd.cache.size (at most half the
 * limit) and REGISTRY_FD_RESERVE must hold them all (docs/operations.md,
 * "Descriptor budget").  Negative when the broker already holds more.
 */
#define REGISTRY_FD_RESERVE 128 /* listeners, the log dir, epoll and its wake-ups, some connections */
int64_t registry_partition_room(const struct registry *reg);
/*
 * Begins creating topic name with nparts partitions: 0, -EEXIST, -EINVAL
 * (bad name), -EIO (the log dir failed), -EMFILE (more partitions than
 * registry_partition_room()) or -ENOMEM.
 */
int registry_create_begin(struct registry *reg, struct kstr name, int32_t nparts, const struct topic_cfg *tcfg,
			  struct reg_build **out);
/* Begins adding partitions to t up to total (> t->nparts_next): 0, -EINVAL, -EIO, -EMFILE or -ENOMEM. */
int registry_grow_begin(struct registry *reg, struct topic *t, int32_t total, struct reg_build **out);
/* Worker thread: makes the files of the builds listed from head (see above); sets each one's err. */
void registry_build_round(struct registry *reg, struct reg_build *head);
/* Loop thread: puts b's partitions in place, or drops what it began if it failed; frees b.  Returns its err. */
int registry_build_end(struct registry *reg, struct reg_build *b);
/* Not while t->builds (the caller answers that it is being changed). */
int registry_delete(struct registry *reg, struct topic *t);
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
/*
 * Cluster mode: mc (NULL to stop) says which broker leads each partition;
 * registry_part() then finds only the partitions broker self leads, and
 * registry_part_error() answers NOT_LEADER_OR_FOLLOWER for the others,
 * including partitions mc does not know (yet: a restarted broker's logs
 * before the controller's UpdateMetadata).  The internal topics stay this
 * broker's.
 */
struct mcache;
void registry_set_mcache(struct registry *reg, const struct mcache *mc, int32_t self);
int32_t registry_leader(const struct registry *reg, const struct topic *t, int32_t partition);
/*
 * Cluster mode: fn answers registry_leader() first for the partitions it
 * knows (the leader LeaderAndIsr named, broker/replica.h), -2 for the
 * others, which the metadata cache answers.  NULL to stop.
 */
typedef int32_t registry_leader_fn(void *arg, const char *topic, int32_t len, int32_t partition);
void registry_set_leader_fn(struct registry *reg, registry_leader_fn *fn, void *arg);
/* True if the partition exists: in the cluster's metadata in cluster mode (wherever it is led), else here. */
bool registry_part_known(struct registry *reg, struct kstr name, int32_t partition);
/* Why a topic not held here is unusable: NOT_LEADER_OR_FOLLOWER if another broker leads it, else UNKNOWN_TOPIC_OR_PARTITION. */
int16_t registry_missing_error(const struct registry *reg, struct kstr name, int32_t partition);
/*
 * NULL if out of range or offline (its files could not be opened, or a
 * sync in the log directory failed: registry_fail_dir()).  Cluster mode:
 * NULL unless this broker leads it; the first call under a new leader
 * epoch records that epoch in the log's epoch cache (part_set_leader_epoch).
 */
struct part *registry_part(const struct topic *t, int32_t partition);
/* The current leader epoch as Metadata answers it: the controller's in cluster mode (-1 unknown), else 0. */
int32_t registry_leader_epoch(const struct registry *reg, const struct topic *t, int32_t partition);
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
/* The log directory as configured (the first of log.dirs); owned by the registry. */
const char *registry_log_dir(const struct registry *reg);

/* Writes the recovery-point checkpoint (called periodically; not once the dir failed). */
int registry_checkpoint(struct registry *reg);
/* Applies retention to every partition. */
void registry_retain(struct registry *reg, int64_t now_ms);

#endif
