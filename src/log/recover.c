/*
 * recover.c - segment loading and crash recovery (see recover.h).
 *
 * Kafka's rule is followed: what lies past the recovery point is trusted
 * only after its CRC is checked; indexes are derived data and are rebuilt
 * whenever they disagree with the log.
 */
#include "log/recover.h"

#include <errno.h>
#include <inttypes.h>
#include <string.h>
#include <sys/stat.h>

#include "util/log.h"

static void seg_reset_state(struct seg *seg)
{
	seg->size = 0;
	seg->next_offset = seg->base_offset;
	seg->roll_ts = seg->max_ts = seg->max_ts_offset = -1;
	seg->bytes_since_index = 0;
	seg->ts_unknown = false;
}

static int seg_file_size(struct seg *seg, int64_t *size)
{
	struct stat st;

	if (fstat(seg->log->fd, &st) < 0)
		return -errno;
	*size = st.st_size;
	return 0;
}

int recover_seg(struct seg *seg, int64_t crc_from, int32_t index_interval_bytes, uint8_t *buf, size_t cap,
		int64_t *truncated, int64_t *checked)
{
	struct seg_iter it;
	struct batch_hdr h;
	int64_t fsize = 0, crc_pos = -1;
	int rc;

	*truncated = *checked = 0;
	rc = seg_file_size(seg, &fsize);
	if (!rc)
		rc = offidx_reset(&seg->oi);
	if (!rc)
		rc = timeidx_reset(&seg->ti);
	if (rc)
		return rc;
	seg_reset_state(seg);
	seg_iter_init(&it, seg, 0, fsize, false, buf, cap);
	for (;;) {
		if (!it.crc && seg->next_offset >= crc_from) { /* batches from here on may not be durable */
			it.crc = true;
			crc_pos = it.pos;
		}
		if ((rc = seg_iter_next(&it, &h)) != 1)
			break;
		seg_index_batch(seg, &h, it.pos, index_interval_bytes);
		seg_iter_skip(&it, &h);
	}
	seg->size = it.pos;
	*checked = crc_pos >= 0 ? it.pos - crc_pos : 0;
	if (rc != -EBADMSG)
		return rc;
	*truncated = fsize - it.pos;
	if (it.why == seg_zero_tail) /* not damage: where the data ends */
		log_info("log: '%s.log' position %" PRId64 ": %s, truncating %" PRId64 " bytes", seg->path, it.pos,
			 it.why, *truncated);
	else
		log_warn("log: '%s.log' position %" PRId64 ": %s, truncating %" PRId64 " bytes", seg->path, it.pos,
			 it.why ? it.why : "corrupt", *truncated);
	return seg_truncate_bytes(seg, it.pos);
}

/* Walks headers after the last offset-index entry; -EBADMSG if anything disagrees. */
static int load_tail(struct seg *seg, int64_t fsize, int32_t interval, uint8_t *buf, size_t cap)
{
	const struct offidx *oi = &seg->oi;
	const struct timeidx *ti = &seg->ti;
	bool indexed = oi->f.n > 0;
	int64_t start = indexed ? offidx_ent(oi, oi->f.n - 1).pos : 0;
	int64_t start_last = indexed ? seg->base_offset + offidx_ent(oi, oi->f.n - 1).rel : 0;
	struct seg_iter it;
	struct batch_hdr h;
	int rc;

	if (ti->f.n) {
		seg->max_ts = timeidx_ent(ti, ti->f.n - 1).ts;
		seg->max_ts_offset = seg->base_offset + timeidx_ent(ti, ti->f.n - 1).rel;
	}
	/* offset-index points without any time entry: the batches before them had maxTimestamp -1 */
	seg->ts_unknown = indexed && ti->f.n == 0;
	seg_iter_init(&it, seg, start, fsize, false, buf, cap);
	while ((rc = seg_iter_next(&it, &h)) == 1) {
		if (it.pos == start && indexed && records_last_offset(&h) != start_last)
			return -EBADMSG;
		seg_index_batch(seg, &h, it.pos, interval);
		seg_iter_skip(&it, &h);
	}
	seg->size = it.pos;
	if (rc)
		return rc;
	if (seg->max_ts_offset >= seg->next_offset || (oi->f.n && seg->next_offset == seg->base_offset))
		return -EBADMSG;
	return 0;
}

int recover_load(struct seg *seg, int32_t index_interval_bytes, uint8_t *buf, size_t cap, int64_t *truncated)
{
	int64_t fsize, checked;
	int rc = seg_file_size(seg, &fsize);

	*truncated = 0;
	if (rc)
		return rc;
	seg_reset_state(seg);
	if (offidx_valid(&seg->oi, fsize) && timeidx_valid(&seg->ti, INT32_MAX)) {
		rc = load_tail(seg, fsize, index_interval_bytes, buf, cap);
		if (rc != -EBADMSG)
			return rc;
	}
	log_info("log: recovering '%s': index or tail inconsistent", seg->path);
	rc = recover_seg(seg, INT64_MIN, index_interval_bytes, buf, cap, truncated, &checked);
	return rc ? rc : 1;
}
