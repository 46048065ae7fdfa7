/*
 * ckpt.h - the log directory's per-partition checkpoint files, Kafka's
 * recovery-point-offset-checkpoint and cleaner-offset-checkpoint:
 *
 *   0\n<count>\n<topic> <partition> <offset>\n...
 *
 * Reading: start-up loads each file once into a hash table, so looking up
 * every partition costs one probe each, not a scan of all the others.
 *
 * Writing: with thousands of partitions a checkpoint is a large file and
 * two fsyncs, which the event loop must not wait for.  The loop takes a
 * snapshot of the values (cheap: a copy of numbers and topic names) and
 * hands it to a writer thread, which formats it and replaces both files
 * through util/durable.h.  Snapshots only grow newer: one waiting while a
 * write runs is replaced by a later one, never written after it.
 */
#ifndef GREGOR_BROKER_CKPT_H
#define GREGOR_BROKER_CKPT_H

#include <stdint.h>

#define CKPT_RECOVERY_FILE "recovery-point-offset-checkpoint"
#define CKPT_CLEANER_FILE "cleaner-offset-checkpoint" /* log/compact.h: first offset not cleaned */

/* ---- reading ---- */

struct ckpt_map;

/*
 * Loads dir/name.  Returns 0 (*out set, free with ckpt_map_free), -ENOENT
 * when there is no file, -EBADMSG when it is malformed (logged), -ENOMEM;
 * *out is NULL on error.
 */
int ckpt_map_load(const char *dir, const char *name, struct ckpt_map **out);
/* The offset recorded for (topic, partition), -1 if none (or m is NULL). */
int64_t ckpt_map_find(const struct ckpt_map *m, const char *topic, int32_t partition);
void ckpt_map_free(struct ckpt_map *m);

/* ---- writing ---- */

struct ckpt_snap;

struct ckpt_snap *ckpt_snap_new(void);
/* Starts the entries of topic (copied); 0 or -ENOMEM (sticky: ckpt_snap_write then fails). */
int ckpt_snap_topic(struct ckpt_snap *s, const char *topic);
/*
 * Adds partition p of the last topic: its recovery point, and its cleaner
 * offset (-1: no line in the cleaner file).  0 or -ENOMEM (sticky).
 */
int ckpt_snap_part(struct ckpt_snap *s, int32_t p, int64_t recovery_point, int64_t clean_offset);
/* Replaces both files in dir, on the calling thread.  0 or -errno. */
int ckpt_snap_write(const struct ckpt_snap *s, const char *dir);
void ckpt_snap_free(struct ckpt_snap *s);

struct ckpt_writer;

/* Starts the writer thread for the files in dir (copied).  0 or -errno. */
int ckpt_writer_start(const char *dir, struct ckpt_writer **out);
/*
 * Queues s (takes ownership) to be written; a snapshot still waiting is
 * dropped for it.  Nothing is written once a sync failed (durable_failed()).
 */
void ckpt_writer_submit(struct ckpt_writer *w, struct ckpt_snap *s);
/* Waits for the write in progress, drops a waiting snapshot, stops the thread and frees w. */
void ckpt_writer_stop(struct ckpt_writer *w);

#endif
