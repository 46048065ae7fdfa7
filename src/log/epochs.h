/*
 * epochs.h - the leader epoch cache and its file, leader-epoch-checkpoint,
 * in the partition directory (Kafka's format, ASCII, '\n'-terminated lines):
 *
 *   0                      version
 *   <count>                number of entries
 *   <epoch> <startOffset>  count lines: epochs strictly increasing,
 *                          start offsets not decreasing
 *
 * Entry (E, S): the leader of epoch E appended its first batch at offset S.
 * Used to answer OffsetForLeaderEpoch and, with replication, to truncate
 * followers.  A malformed file is logged and treated as empty.  A missing
 * file means the one entry (0, 0): a new partition writes none, so making
 * one costs no file for it; the file appears with the first change (a new
 * epoch, or the log start moving past 0).
 */
#ifndef GREGOR_LOG_EPOCHS_H
#define GREGOR_LOG_EPOCHS_H

#include <stdbool.h>
#include <stdint.h>

struct epoch_ent {
	int32_t epoch;
	int64_t start_offset;
};

struct epochs {
	struct epoch_ent *e;
	int n, cap;
};

/* Loads dir/leader-epoch-checkpoint (absent: epoch 0 from offset 0).  0 or -errno. */
int epochs_load(struct epochs *ep, const char *dir);
void epochs_release(struct epochs *ep);
/* Writes leader-epoch-checkpoint in the directory dir_fd atomically and durably.  0 or -errno. */
int epochs_write(const struct epochs *ep, int dir_fd);
/* Records that epoch starts at start_offset if newer than the latest; true if changed. */
bool epochs_assign(struct epochs *ep, int32_t epoch, int64_t start_offset);
/* Drops entries starting at or after end_offset (log truncated); true if changed. */
bool epochs_truncate_end(struct epochs *ep, int64_t end_offset);
/* Drops entries wholly below log_start and moves the first to it; true if changed. */
bool epochs_truncate_start(struct epochs *ep, int64_t log_start);
/*
 * OffsetForLeaderEpoch: the end offset of epoch (the next epoch's start, or
 * leo for the latest) and the largest epoch <= epoch.  Returns false if
 * there is none.
 */
bool epochs_end_offset(const struct epochs *ep, int32_t epoch, int64_t leo, int32_t *epoch_out, int64_t *end_out);

#endif
