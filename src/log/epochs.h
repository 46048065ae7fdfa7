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
 * OffsetForLeaderEpoch, Kafka's LeaderEpochFileCache.endOffsetFor: for the
 * latest epoch, (epoch, leo); for an older one, the largest known epoch
 * <= epoch and the start offset of the next known epoch; for an epoch
 * below the first known one (its data is gone), (epoch, the first known
 * epoch's start offset).  Returns false (UNDEFINED: -1/-1 on the wire)
 * for epoch -1, for an epoch newer than the latest, or an empty cache.
 */
bool epochs_end_offset(const struct epochs *ep, int32_t epoch, int64_t leo, int32_t *epoch_out, int64_t *end_out);
/* The latest epoch in the cache, -1 if it is empty. */
int32_t epochs_latest(const struct epochs *ep);

/* A leader's OffsetForLeaderEpoch answer for one partition (-1/-1: UNDEFINED). */
struct epoch_reply {
	int32_t epoch;
	int64_t end_offset;
};

/* The follower's side of the truncation decision. */
struct epoch_local {
	int64_t leo;          /* the follower's log end offset */
	int64_t fetch_offset; /* where it would fetch from without truncating (its high watermark) */
	bool known;           /* its own epochs_end_offset(reply.epoch) found an epoch: */
	int32_t epoch;        /*   the largest epoch <= reply.epoch it knows */
	int64_t end_offset;   /*   and that epoch's end offset */
};

/*
 * Where a follower truncates its log after the leader's answer (Kafka's
 * AbstractFetcherThread.getOffsetTruncationState): never above its own
 * LEO; the leader knowing no such epoch keeps fetch_offset; the same
 * epoch on both sides (or a follower without epochs, or a reply without
 * an epoch) cuts at the smaller of the two end offsets; a follower that
 * never saw the leader's epoch cuts at the end of its own largest epoch
 * below it and must ask again with its latest epoch after the cut
 * (returns false), otherwise true: truncation is complete.
 */
bool epochs_truncation_offset(const struct epoch_reply *leader, const struct epoch_local *local, int64_t *offset_out);

#endif
