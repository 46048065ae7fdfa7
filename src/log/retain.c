/*
 * retain.c - deleting the head of a partition log: retention.ms,
 * retention.bytes and DeleteRecords.
 *
 * Only whole segments are deleted and never the active one, as in Kafka.
 * A deleted segment's files are renamed <name>.deleted at once (cheap, on
 * the event loop) and unlinked by a background thread once
 * file.delete.delay.ms has passed (util/dirdel.h): unlinking a 1 GiB file
 * frees its blocks, which can take long.  Fetches still sending from it
 * hold an fdref on its .log, so the data stays readable whatever its name
 * and after the unlink, until the last reference goes.  A crash leaves
 * *.deleted files, removed when the partition is next opened.  The log
 * start offset moves to the first remaining segment's base, or further by
 * DeleteRecords (then persisted in the log-start-offset file, see
 * partition.h).
 */
#include "log/partition.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "log/checkpoint.h"
#include "log/part_int.h"
#include "util/log.h"

void part_advance_log_start(struct part *part, int64_t offset)
{
	int rc;

	if (offset <= part->log_start_offset)
		return;
	part->log_start_offset = offset;
	part->head_gen++;
	pstate_truncate_head(&part->pstate, offset);
	rc = part_dir_hold(part);
	if (rc >= 0) {
		pstate_snapshot_delete_below(&part->pstate, part->dir_fd, part->dir, offset);
		rc = epochs_truncate_start(&part->epochs, offset) ? epochs_write(&part->epochs, part->dir_fd) : 0;
		part_dir_release(part);
	}
	if (rc)
		log_warn("log: '%s': cannot write the leader epoch checkpoint: %s", part->dir, strerror(-rc));
}

void part_drop_head(struct part *part, int n)
{
	bool held;

	if (n >= part->nsegs)
		n = part->nsegs - 1;
	held = n > 0 && part_dir_hold(part) >= 0; /* one open for every segment's renames */
	for (int i = 0; i < n; i++) {
		struct seg *seg = part->segs[0];

		pthread_mutex_lock(&part->mu);
		memmove(part->segs, part->segs + 1, (size_t)(part->nsegs - 1) * sizeof(*part->segs));
		part->nsegs--;
		part->head_gen++;
		pthread_mutex_unlock(&part->mu);
		log_info("log: '%s': deleting segment %" PRId64 " (%" PRId64 " bytes)", part->dir, seg->base_offset,
			 seg->size);
		part_delete_seg_files(part, seg->base_offset);
		seg_close(seg); /* its files are still linked (*.deleted): closing frees nothing here */
	}
	if (n > 0)
		part_advance_log_start(part, part->segs[0]->base_offset);
	if (n > 0) /* transactions: drop index entries and files of deleted segments */
		txnidx_truncate_head(part);
	if (held)
		part_dir_release(part);
}

/* The time retention.ms counts from: max batch timestamp, else file mtime. */
static int64_t seg_largest_ts(struct seg *seg)
{
	int64_t mtime_ms;

	if (!seg_load_stats(seg) && seg->max_ts >= 0)
		return seg->max_ts;
	mtime_ms = seg_mtime_ms(seg);
	return mtime_ms > 0 ? mtime_ms : INT64_MAX; /* unknown: keep it */
}

/* Number of leading segments to delete; the active one is never counted. */
static int retain_count(struct part *part, int64_t now_ms)
{
	const struct part_cfg *cfg = &part->cfg;
	int n_time = 0, n_bytes = 0, n_start = 0, last = part->nsegs - 1;

	if (cfg->retention_ms >= 0 && cfg->retention_delete)
		while (n_time < last && now_ms - seg_largest_ts(part->segs[n_time]) > cfg->retention_ms)
			n_time++;
	if (cfg->retention_bytes >= 0 && cfg->retention_delete) {
		int64_t excess = part_size_bytes(part) - cfg->retention_bytes;

		while (n_bytes < last && excess - part->segs[n_bytes]->size >= 0)
			excess -= part->segs[n_bytes++]->size;
	}
	while (n_start < last && part->segs[n_start + 1]->base_offset <= part->log_start_offset)
		n_start++;
	if (n_bytes > n_time)
		n_time = n_bytes;
	return n_start > n_time ? n_start : n_time;
}

int part_retain(struct part *part, int64_t now_ms)
{
	int n = retain_count(part, now_ms);

	part_drop_head(part, n);
	pstate_expire(&part->pstate, now_ms, part->cfg.producer_id_expiration_ms);
	return n;
}

int part_delete_records(struct part *part, int64_t offset)
{
	char text[64];
	int rc, n = 0;

	if (offset < 0 || offset > part_high_watermark(part))
		return -ERANGE;
	if (offset <= part->log_start_offset)
		return 0;
	snprintf(text, sizeof(text), "0\n%" PRId64 "\n", offset);
	rc = part_dir_hold(part);
	if (rc < 0)
		return rc;
	rc = checkpoint_write(part->dir_fd, LOG_START_FILE, text);
	part_dir_release(part);
	if (rc)
		return rc;
	part_advance_log_start(part, offset);
	while (n < part->nsegs - 1 && part->segs[n + 1]->base_offset <= offset)
		n++;
	part_drop_head(part, n);
	return 0;
}
