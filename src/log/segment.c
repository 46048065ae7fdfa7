/*
 * segment.c - one log segment (format in segment.h): create and open,
 * sealed segments opened on demand through the descriptor cache, append
 * with one write, batch-header iteration for reads and recovery,
 * truncation and deletion.
 */
#include "log/segment.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stddef.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/crc32c.h"
#include "util/log.h"

ssize_t (*seg_pwrite_fn)(int fd, const void *buf, size_t n, off_t pos) = pwrite;

static void seg_evict(struct segcache_node *node);
static void seg_learn_stats(struct seg *seg);

static struct segcache seg_lru = { .head = { &seg_lru.head, &seg_lru.head },
				   .cap = SEG_CACHE_DEFAULT,
				   .evict = seg_evict };

void seg_cache_resize(int cap)
{
	segcache_resize(&seg_lru, cap);
}

const struct segcache *seg_cache(void)
{
	return &seg_lru;
}

static int seg_file_open(const struct seg *seg, const char *ext, const char *suffix, bool create, int *fd)
{
	char path[4096];

	snprintf(path, sizeof(path), "%s%s%s", seg->path, ext, suffix);
	*fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | (create ? O_TRUNC : 0), 0644);
	return *fd < 0 ? -errno : 0;
}

int seg_open(const char *dir, int64_t base_offset, bool create, int32_t index_bytes, struct seg **out)
{
	return seg_open_as(dir, base_offset, "", create, index_bytes, out);
}

int seg_open_as(const char *dir, int64_t base_offset, const char *suffix, bool create, int32_t index_bytes,
		struct seg **out)
{
	struct seg *seg = calloc(1, sizeof(*seg));
	bool lazy = !*suffix; /* a cleaner's output has every file its swap renames */
	char path[4096];
	int fd, rc = -ENOMEM;

	if (!seg)
		return -ENOMEM;
	seg->base_offset = seg->next_offset = base_offset;
	seg->roll_ts = seg->max_ts = seg->max_ts_offset = -1;
	seg->stats_known = true;
	if (asprintf(&seg->path, "%s/%020" PRId64, dir, base_offset) < 0) {
		seg->path = NULL;
		goto out_free;
	}
	rc = seg_file_open(seg, ".log", suffix, create, &fd);
	if (rc)
		goto out_free;
	seg->log = fdref_new(fd);
	if (!seg->log) {
		rc = -ENOMEM;
		goto out_free;
	}
	snprintf(path, sizeof(path), "%s.index%s", seg->path, suffix);
	rc = offidx_open(&seg->oi, path, index_bytes / OFFIDX_ENTRY_SIZE, create, lazy);
	if (rc)
		goto out_put_log;
	snprintf(path, sizeof(path), "%s.timeindex%s", seg->path, suffix);
	rc = timeidx_open(&seg->ti, path, index_bytes / TIMEIDX_ENTRY_SIZE, create, lazy);
	if (rc)
		goto out_close_oi;
	*out = seg;
	return 0;
out_close_oi:
	offidx_close(&seg->oi);
out_put_log:
	fdref_put(seg->log);
out_free:
	free(seg->path);
	free(seg);
	return rc;
}

/* Drops the open files of a sealed segment (eviction, close); the struct and its statistics stay. */
static void seg_files_drop(struct seg *seg)
{
	timeidx_close(&seg->ti);
	offidx_close(&seg->oi);
	fdref_put(seg->log);
	seg->log = NULL;
}

static void seg_evict(struct segcache_node *node)
{
	seg_files_drop((struct seg *)((char *)node - offsetof(struct seg, lru)));
}

void seg_close(struct seg *seg)
{
	segcache_remove(&seg_lru, &seg->lru);
	seg_files_drop(seg);
	free(seg->path);
	seg->path = NULL;
	free(seg);
}

/* One statx of <path>.log: OUT size, creation time (-1 if the file system keeps none) and modification time. */
static int seg_statx(const struct seg *seg, int64_t *size, int64_t *btime_ms, int64_t *mtime_ms)
{
	char path[4096];
	struct statx stx;

	snprintf(path, sizeof(path), "%s.log", seg->path);
	if (statx(AT_FDCWD, path, 0, STATX_SIZE | STATX_BTIME | STATX_MTIME, &stx) < 0)
		return -errno;
	*size = (int64_t)stx.stx_size;
	*btime_ms = stx.stx_mask & STATX_BTIME ? (int64_t)stx.stx_btime.tv_sec * 1000 + stx.stx_btime.tv_nsec / 1000000
					       : -1;
	*mtime_ms = (int64_t)stx.stx_mtime.tv_sec * 1000 + stx.stx_mtime.tv_nsec / 1000000;
	return 0;
}

int seg_open_sealed(const char *dir, int64_t base_offset, int64_t end_offset, int64_t now_ms, struct seg **out)
{
	struct seg *seg = calloc(1, sizeof(*seg));
	int64_t btime_ms, mtime_ms;
	int rc = -ENOMEM;

	if (!seg)
		return -ENOMEM;
	seg->base_offset = base_offset;
	seg->next_offset = end_offset > base_offset ? end_offset : base_offset;
	seg->roll_ts = seg->max_ts = seg->max_ts_offset = -1;
	seg->sealed = true;
	if (asprintf(&seg->path, "%s/%020" PRId64, dir, base_offset) < 0) {
		seg->path = NULL;
		goto out_free;
	}
	rc = seg_statx(seg, &seg->size, &btime_ms, &mtime_ms);
	if (rc)
		goto out_free;
	if (seg->size > 0)
		seg->roll_ts = btime_ms >= 0 && btime_ms <= now_ms ? btime_ms : now_ms;
	*out = seg;
	return 0;
out_free:
	free(seg->path);
	free(seg);
	return rc;
}

void seg_retire(struct seg *seg)
{
	assert(!seg->sealed);
	seg->sealed = true;
	seg_files_drop(seg); /* unmaps the indexes */
}

/* Opens the .log read-only and maps the indexes of a sealed segment; a bad index is dropped (reads scan). */
static int seg_files_open(struct seg *seg)
{
	char path[4096];
	int fd, rc;

	snprintf(path, sizeof(path), "%s.log", seg->path);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	seg->log = fdref_new(fd);
	if (!seg->log)
		return -ENOMEM;
	snprintf(path, sizeof(path), "%s.index", seg->path);
	rc = offidx_map(&seg->oi, path);
	snprintf(path, sizeof(path), "%s.timeindex", seg->path);
	if (!rc)
		rc = timeidx_map(&seg->ti, path);
	if (rc) {
		seg_files_drop(seg);
		return rc;
	}
	if (seg->oi.f.n && !offidx_valid_last(&seg->oi, seg->size)) {
		log_warn("log: '%s.index' does not match its log, reading without it", seg->path);
		offidx_close(&seg->oi);
	}
	return 0;
}

void seg_park(struct seg *seg)
{
	if (!seg->sealed) {
		idxfile_park(&seg->oi.f);
		idxfile_park(&seg->ti.f);
	}
}

int seg_use(struct seg *seg)
{
	int rc;

	if (!seg->sealed) { /* maps parked indexes again */
		rc = idxfile_wake(&seg->oi.f);
		return rc ? rc : idxfile_wake(&seg->ti.f);
	}
	if (!seg->log) {
		rc = seg_files_open(seg);
		if (rc) {
			log_warn("log: cannot open '%s.log': %s", seg->path, strerror(-rc));
			return rc;
		}
	}
	segcache_touch(&seg_lru, &seg->lru);
	if (!seg->stats_known)
		seg_learn_stats(seg);
	return 0;
}

int seg_ref(struct seg *seg, struct fdref **out)
{
	int rc = seg_use(seg);

	*out = rc ? NULL : fdref_get(seg->log);
	return rc;
}

ssize_t seg_pread(struct seg *seg, void *buf, size_t n, int64_t pos)
{
	int rc = seg_use(seg);
	ssize_t got;

	if (rc)
		return rc;
	got = pread(seg->log->fd, buf, n, (off_t)pos);
	return got < 0 ? -errno : got;
}

int seg_load_stats(struct seg *seg)
{
	return seg->stats_known ? 0 : seg_use(seg);
}

int64_t seg_mtime_ms(const struct seg *seg)
{
	int64_t size, btime_ms, mtime_ms;

	return seg_statx(seg, &size, &btime_ms, &mtime_ms) ? 0 : mtime_ms;
}

void seg_unlink(struct seg *seg)
{
	static const char *exts[] = { ".log", ".index", ".timeindex" };
	char path[4096];

	for (size_t i = 0; i < sizeof(exts) / sizeof(exts[0]); i++) {
		snprintf(path, sizeof(path), "%s%s", seg->path, exts[i]);
		if (unlink(path) < 0 && errno != ENOENT)
			log_warn("log: cannot unlink '%s': %s", path, strerror(errno));
	}
}

int64_t seg_created_ms(const struct seg *seg, int64_t now_ms)
{
	int64_t size, btime_ms, mtime_ms;

	if (seg_statx(seg, &size, &btime_ms, &mtime_ms) || btime_ms < 0)
		return now_ms;
	return btime_ms <= now_ms ? btime_ms : now_ms;
}

void seg_seal(struct seg *seg)
{
	if (seg->max_ts >= 0)
		timeidx_maybe_append(&seg->ti, seg->max_ts, (int32_t)(seg->max_ts_offset - seg->base_offset));
}

/* Folds batch h into max_ts, max_ts_offset and ts_unknown. */
static void seg_note_ts(struct seg *seg, const struct batch_hdr *h)
{
	if (h->max_timestamp > seg->max_ts) {
		seg->max_ts = h->max_timestamp;
		seg->max_ts_offset = records_last_offset(h);
	}
	if (h->max_timestamp < 0 && h->record_count > 0 && !records_is_control(h))
		seg->ts_unknown = true;
}

void seg_index_batch(struct seg *seg, const struct batch_hdr *h, int64_t pos, int32_t index_interval_bytes)
{
	int64_t last = records_last_offset(h);
	int rc = 0;

	seg_note_ts(seg, h);
	if (seg->bytes_since_index > index_interval_bytes) {
		rc = offidx_append(&seg->oi, (int32_t)(last - seg->base_offset), (int32_t)pos);
		if (!rc && seg->max_ts >= 0)
			rc = timeidx_maybe_append(&seg->ti, seg->max_ts,
						  (int32_t)(seg->max_ts_offset - seg->base_offset));
		seg->bytes_since_index = 0;
	}
	if (rc)
		log_warn("log: index write for '%s' failed: %s (rebuilt at next start)", seg->path, strerror(-rc));
	seg->bytes_since_index += h->size;
	seg->next_offset = last + 1;
}

int seg_append(struct seg *seg, const uint8_t *blob, size_t len, int32_t index_interval_bytes, int64_t now_ms)
{
	int64_t pos = seg->size;
	ssize_t n = seg_pwrite_fn(seg->log->fd, blob, len, (off_t)pos);
	size_t off = 0;

	if (n != (ssize_t)len) {
		int rc = n < 0 ? -errno : -ENOSPC;

		if (ftruncate(seg->log->fd, (off_t)pos) < 0)
			log_error("log: cannot truncate '%s.log' back to %" PRId64 ": %s (the next append overwrites)",
				  seg->path, pos, strerror(errno));
		else
			seg->preallocated = false;
		return rc;
	}
	while (off < len) {
		struct batch_hdr h;

		if (records_hdr_parse(blob + off, len - off, &h) || h.size > (int64_t)(len - off))
			break; /* cannot happen: the caller parsed the blob */
		seg_index_batch(seg, &h, pos + (int64_t)off, index_interval_bytes);
		off += (size_t)h.size;
	}
	seg->size += (int64_t)len;
	if (seg->roll_ts < 0)
		seg->roll_ts = now_ms;
	return 0;
}

void seg_iter_init(struct seg_iter *it, struct seg *seg, int64_t pos, int64_t end, bool crc, uint8_t *buf, size_t cap)
{
	it->seg = seg;
	it->pos = pos;
	it->end = end;
	it->min_offset = seg->base_offset;
	it->crc = crc;
	it->why = NULL;
	it->buf = buf;
	it->cap = cap;
	it->win_pos = 0;
	it->win_len = 0;
	it->win_want = SEG_ITER_FIRST_READ;
}

/*
 * Makes [pos, pos + n) available at *p through the window; n <= it->cap.
 * The first read is small (a fetch usually needs the header of the batch
 * an index entry points near, not the record data after it) and each
 * further miss doubles the read, so long scans still read in big chunks.
 */
static int iter_window(struct seg_iter *it, int64_t pos, size_t n, const uint8_t **p)
{
	size_t want = it->win_want > n ? it->win_want : n;
	ssize_t got;

	if (pos >= it->win_pos && pos + (int64_t)n <= it->win_pos + (int64_t)it->win_len) {
		*p = it->buf + (pos - it->win_pos);
		return 0;
	}
	if (want > it->cap)
		want = it->cap;
	if (it->win_want < it->cap)
		it->win_want *= 2;
	if (it->end - pos < (int64_t)want)
		want = (size_t)(it->end - pos);
	got = seg_pread(it->seg, it->buf, want, pos);
	if (got < 0)
		return (int)got;
	it->win_pos = pos;
	it->win_len = (size_t)got;
	if ((size_t)got < n) {
		it->why = "file shorter than expected";
		return -EBADMSG;
	}
	*p = it->buf;
	return 0;
}

static int iter_crc(struct seg_iter *it, const struct batch_hdr *h)
{
	int64_t q = it->pos + RECORDS_ATTR_OFF, end = it->pos + h->size;
	uint32_t crc = 0;

	while (q < end) {
		size_t chunk = end - q < (int64_t)it->cap ? (size_t)(end - q) : it->cap;
		const uint8_t *p;
		int rc = iter_window(it, q, chunk, &p);

		if (rc)
			return rc;
		crc = crc32c_update(crc, p, chunk);
		q += (int64_t)chunk;
	}
	if (crc != h->crc) {
		it->why = "crc mismatch";
		return -EBADMSG;
	}
	return 0;
}

const char seg_zero_tail[] = "zeros (the unwritten part of a preallocated file)";

/* A header of zeros: the never-written space of a preallocated .log (or a hole a crash left). */
static bool seg_zeros(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

int seg_iter_next(struct seg_iter *it, struct batch_hdr *h)
{
	int64_t left = it->end - it->pos;
	const uint8_t *p;
	int rc;

	if (left <= 0)
		return 0;
	it->why = "torn batch header";
	if (left < RECORDS_HDR_SIZE)
		return -EBADMSG;
	rc = iter_window(it, it->pos, RECORDS_HDR_SIZE, &p);
	if (rc)
		return rc;
	it->why = seg_zeros(p, RECORDS_HDR_SIZE) ? seg_zero_tail : "invalid batch header";
	if (records_hdr_parse(p, RECORDS_HDR_SIZE, h))
		return -EBADMSG;
	it->why = "torn batch";
	if (h->size > left)
		return -EBADMSG;
	it->why = "batch offset not increasing";
	if (h->base_offset < it->min_offset)
		return -EBADMSG;
	it->why = "batch offset beyond the segment's range";
	if (records_last_offset(h) - it->seg->base_offset > INT32_MAX)
		return -EBADMSG;
	it->why = NULL;
	if (it->crc) {
		rc = iter_crc(it, h);
		if (rc)
			return rc;
	}
	return 1;
}

int seg_find(struct seg *seg, int64_t offset, struct seg_iter *it, struct batch_hdr *h, uint8_t *buf, size_t cap)
{
	int64_t rel = offset - seg->base_offset;
	int32_t pos;
	int rc = seg_use(seg);

	if (rc)
		return rc;
	pos = offidx_lookup(&seg->oi, rel < 0 ? 0 : rel > INT32_MAX ? INT32_MAX : (int32_t)rel);
	seg_iter_init(it, seg, pos, seg->size, false, buf, cap);
	while ((rc = seg_iter_next(it, h)) == 1) {
		if (records_last_offset(h) >= offset)
			return 1;
		seg_iter_skip(it, h);
	}
	return rc;
}

int seg_truncate_bytes(struct seg *seg, int64_t pos)
{
	if (ftruncate(seg->log->fd, (off_t)pos) < 0)
		return -errno;
	seg->size = pos;
	seg->preallocated = false;
	return 0;
}

void seg_preallocate(struct seg *seg, int64_t bytes)
{
	if (seg->size >= bytes)
		return;
	if (fallocate(seg->log->fd, 0, 0, (off_t)bytes) == 0)
		seg->preallocated = true;
	else if (errno != EOPNOTSUPP) /* ENOSPC may leave part of it allocated, the length grown: seg_trim cuts it */
		seg->preallocated = true;
	/* else the file grows as it is written */
}

int seg_trim(struct seg *seg)
{
	if (!seg->preallocated)
		return 0;
	if (ftruncate(seg->log->fd, (off_t)seg->size) < 0)
		return -errno;
	seg->preallocated = false;
	return 1;
}

/*
 * The statistics of a segment found sealed at start-up, at its first use:
 * the last time-index entry (the segment's max timestamp once sealed),
 * then the batch headers after the last offset-index entry, which no entry
 * covers (recover.c's load walks the same tail).  A tail that does not
 * parse leaves time lookups scanning the whole segment.
 */
static void seg_learn_stats(struct seg *seg)
{
	uint8_t buf[SEG_ITER_FIRST_READ];
	int32_t n = seg->oi.f.n;
	struct seg_iter it;
	struct batch_hdr h;
	int rc;

	seg->stats_known = true; /* before the walk: seg_use() is re-entered by its reads */
	if (seg->ti.f.n) {
		struct timeidx_ent e = timeidx_ent(&seg->ti, seg->ti.f.n - 1);

		seg->max_ts = e.ts;
		seg->max_ts_offset = seg->base_offset + e.rel;
	}
	seg->ts_unknown = n > 0 && seg->ti.f.n == 0;
	seg_iter_init(&it, seg, n ? offidx_ent(&seg->oi, n - 1).pos : 0, seg->size, false, buf, sizeof(buf));
	while ((rc = seg_iter_next(&it, &h)) == 1) {
		seg_note_ts(seg, &h);
		seg_iter_skip(&it, &h);
	}
	if (rc < 0) {
		log_warn("log: '%s.log' position %" PRId64 ": %s, time lookups scan the segment", seg->path, it.pos,
			 it.why ? it.why : strerror(-rc));
		seg->ts_unknown = true;
	}
}
