/*
 * truncate.c - cutting a partition log back to an offset: what a follower
 * (or a former leader) does when its log diverged from the new leader's
 * (OffsetForLeaderEpoch, epochs.h's epochs_truncation_offset), Kafka's
 * Log.truncateTo.
 *
 * The cut is at a batch boundary: an offset inside a batch cuts that whole
 * batch (the log end offset becomes its base offset).  In order, each step
 * durable before the next, so that a crash at any point leaves a prefix of
 * the old log that recovery accepts (the follower truncates again before
 * fetching):
 *
 *   1. segments wholly above the offset go (renamed *.deleted, retain.c),
 *   2. the segment holding it becomes the active one (opened writable if
 *      it was sealed), its .log is cut and fdatasynced, its offset and
 *      time indexes rebuilt from the remaining batch headers and synced,
 *   3. the leader epoch cache drops epochs starting at or past the new end
 *      (leader-epoch-checkpoint rewritten durably), the aborted-transaction
 *      index drops markers past it (the active .txnindex rewritten and
 *      synced), the producer state is rebuilt from the newest snapshot at
 *      or below the new end (later snapshots deleted) and the log after it,
 *   4. the directory is fsynced (renames, unlinks).
 *
 * The LEO, high watermark, recovery point and the cleaner's checkpoint
 * move back to the new end; a part_sync begun before the cut does not move
 * the recovery point (trunc_gen), and a cleaner pass planned before it is
 * discarded (head_gen).  Rebuilding the indexes reads every batch header
 * of the cut segment once: truncation is rare (a leader change).
 */
#include "log/partition.h"

#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "log/part_int.h"
#include "log/recover.h"
#include "util/durable.h"
#include "util/log.h"

/* Removes the segments after index i (their files renamed *.deleted, unlinked later). */
static void truncate_drop_after(struct part *part, int i)
{
	while (part->nsegs > i + 1) {
		struct seg *seg = part_active(part);

		pthread_mutex_lock(&part->mu);
		part->nsegs--;
		pthread_mutex_unlock(&part->mu);
		log_info("log: '%s': truncation deletes segment %" PRId64, part->dir, seg->base_offset);
		part_delete_seg_files(part, seg->base_offset);
		seg_close(seg);
	}
}

/* Makes the last segment writable (it was sealed) and loads it; 0 or -errno. */
static int truncate_reopen_last(struct part *part)
{
	struct seg *stand_in = part_active(part), *seg;
	int64_t truncated;
	int rc;

	if (!stand_in->sealed)
		return seg_use(stand_in); /* the active one: its indexes mapped again if parked */
	rc = seg_open(part->dir, stand_in->base_offset, false, part->cfg.segment_index_bytes, &seg);
	if (rc)
		return rc;
	pthread_mutex_lock(&part->mu);
	part->segs[part->nsegs - 1] = seg;
	pthread_mutex_unlock(&part->mu);
	seg_close(stand_in);
	rc = recover_load(seg, part->cfg.index_interval_bytes, part->scratch, PART_SCRATCH_BYTES, &truncated);
	return rc < 0 ? rc : 0;
}

/* Cuts the active segment before the batch holding offset, rebuilds and syncs its indexes. */
static int truncate_cut(struct part *part, int64_t offset)
{
	struct seg *seg = part_active(part);
	struct seg_iter it;
	struct batch_hdr h;
	int64_t pos, truncated, checked;
	int rc = seg_find(seg, offset, &it, &h, part->scratch, PART_SCRATCH_BYTES);

	if (rc < 0)
		return rc;
	pos = rc == 1 ? it.pos : seg->size; /* none: offset lies in a gap the cleaner left at the end */
	rc = seg_truncate_bytes(seg, pos);
	if (!rc)
		rc = recover_seg(seg, INT64_MAX, part->cfg.index_interval_bytes, part->scratch, PART_SCRATCH_BYTES,
				 &truncated, &checked);
	if (!rc)
		rc = durable_fdatasync(seg->log->fd);
	if (!rc)
		rc = idxfile_sync(&seg->oi.f, durable_fdatasync);
	if (!rc)
		rc = idxfile_sync(&seg->ti.f, durable_fdatasync);
	if (!rc && part->cfg.preallocate)
		seg_preallocate(seg, part->cfg.segment_bytes);
	return rc;
}

/* Moves the offsets and the derived state back to the new end (the active segment's). */
static int truncate_state(struct part *part)
{
	int64_t leo = part_active(part)->next_offset;
	int rc = 0;

	pthread_mutex_lock(&part->mu);
	part->leo = leo;
	part->trunc_gen++;
	if (part->recovery_point > leo)
		__atomic_store_n(&part->recovery_point, leo, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&part->mu);
	if (part->hw > leo)
		part->hw = leo;
	part->writeback_pos = 0;
	part->head_gen++;
	if (part->clean_offset > leo)
		part->clean_offset = leo;
	if (epochs_truncate_end(&part->epochs, leo))
		rc = epochs_write(&part->epochs, part->dir_fd);
	txnidx_truncate_tail(part, leo);
	pstate_clear(&part->pstate);
	if (!rc)
		rc = part_load_pstate(part);
	return rc;
}

/*
 * No record to cut, but the leader epoch cache may hold an epoch that
 * starts at offset (this broker led it and appended nothing): it goes, as
 * Kafka's truncateTo does, or a follower asking the leader about that epoch
 * would be told to cut here again and ask again for ever.
 */
static int truncate_epochs_only(struct part *part, int64_t offset)
{
	int rc;

	if (!epochs_truncate_end(&part->epochs, offset))
		return 0;
	rc = part_epochs_save(part);
	if (rc)
		log_error("log: '%s': leader epochs from %" PRId64 " not dropped: %s", part->dir, offset,
			  strerror(-rc));
	return rc;
}

int part_truncate_to(struct part *part, int64_t offset)
{
	int64_t old_leo = part->leo;
	int rc;

	if (offset < part->log_start_offset)
		return -ERANGE;
	if (offset >= part->leo)
		return truncate_epochs_only(part, offset);
	rc = part_dir_hold(part);
	if (rc < 0)
		return rc;
	truncate_drop_after(part, part_seg_for(part, offset));
	rc = truncate_reopen_last(part);
	if (!rc)
		rc = truncate_cut(part, offset);
	if (!rc)
		rc = truncate_state(part);
	if (!rc)
		rc = durable_fsync(part->dir_fd);
	part_dir_release(part);
	if (rc)
		log_error("log: '%s': truncation to %" PRId64 " failed: %s", part->dir, offset, strerror(-rc));
	else
		log_info("log: '%s': truncated from %" PRId64 " to %" PRId64, part->dir, old_leo, part->leo);
	return rc;
}

bool part_truncation_offset(struct part *part, int32_t leader_epoch, int64_t leader_end_offset, int64_t *offset_out)
{
	struct epoch_reply reply = { leader_epoch, leader_end_offset };
	struct epoch_local local = { .leo = part->leo, .fetch_offset = part->hw };

	if (leader_epoch >= 0)
		local.known =
			epochs_end_offset(&part->epochs, leader_epoch, part->leo, &local.epoch, &local.end_offset);
	return epochs_truncation_offset(&reply, &local, offset_out);
}

int32_t part_latest_epoch(const struct part *part)
{
	return epochs_latest(&part->epochs);
}
