/*
 * cleaner.h - the log cleaner: compacts the partitions of topics with
 * cleanup.policy compact (or compact,delete) on a thread of its own, as
 * Kafka's LogCleaner does (log.cleaner.enable, log.cleaner.threads = 1).
 *
 *   loop thread (timer, wake-ups)          cleaner thread
 *   every log.cleaner.backoff.ms while idle:
 *     measure the compacted partitions,
 *     cleanable_pick() the dirtiest due one,
 *     compact_plan()          -- job -->   compact_run(): map, cleaned
 *                                          segments as *.swap, synced
 *   on wake: compact_swap(), log line <--  loop_wake()
 *     then look for the next log at once  compact_finish(): fsync the dir
 *
 * A log is due when its dirty ratio passes min.cleanable.dirty.ratio, when
 * max.compaction.lag.ms forces it, or when a tombstone or marker kept by
 * its last pass has outlived delete.retention.ms.  The loop never waits
 * for the thread: a partition deleted during its pass just has its job
 * cancelled and discarded.
 */
#ifndef GREGOR_BROKER_CLEANER_H
#define GREGOR_BROKER_CLEANER_H

struct broker;
struct cleaner;
struct part;

/* Starts the thread (nothing when log.cleaner.enable is false: *out NULL).  0 or -errno. */
int cleaner_start(struct broker *b, struct cleaner **out);
/* Cancels the pass in progress (its *.swap files are completed at the next start), joins, frees. */
void cleaner_stop(struct cleaner *c);
/* Loop thread, after any loop_wake(): installs a finished pass. */
void cleaner_on_wake(struct cleaner *c);
/* part is being deleted or closed: its pass, if any, is cancelled and dropped. */
void cleaner_forget(struct cleaner *c, struct part *part);

#endif
