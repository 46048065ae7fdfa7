/*
 * compact_run.c - the cleaner-thread half of a compaction pass
 * (compact.h): the offset map over the dirty range, then each group of
 * input segments rewritten by clean_segment() into one cleaned segment,
 * synced and renamed to *.swap.  Inputs are read through mmap of the
 * job's own descriptors (sealed segments never change); the output of one
 * input segment at a time is held in memory.
 */
#include "log/compact.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "log/segment.h"
#include "util/clock.h"
#include "util/log.h"

/* Longest a removable tombstone or marker waits for company before a pass removes it. */
#define COMPACT_DUE_SLACK_MS (3600 * 1000LL)

/* ---- input, throttling ---- */

/* Longest single sleep of the throttle: a cancel (shutdown, deleted topic) waits no longer. */
#define COMPACT_THROTTLE_SLICE_MS 50

struct compact_io {
	double rate; /* bytes per second, <= 0: unlimited */
	int64_t t0_ms;
	int64_t bytes;
	const volatile int *cancel;
};

/* Sleeps as long as the bytes moved so far are ahead of the rate, or until cancelled. */
static void compact_throttle(struct compact_io *io, int64_t bytes)
{
	int64_t ahead_ms;

	io->bytes += bytes;
	if (io->rate <= 0)
		return;
	while (!*io->cancel &&
	       (ahead_ms = (int64_t)((double)io->bytes * 1000.0 / io->rate) - (clock_mono_ms() - io->t0_ms)) > 0) {
		int64_t ms = ahead_ms < COMPACT_THROTTLE_SLICE_MS ? ahead_ms : COMPACT_THROTTLE_SLICE_MS;
		struct timespec ts = { 0, ms * 1000000 };

		nanosleep(&ts, NULL);
	}
}

/* Maps src's bytes; *p is NULL for an empty file.  0 or -errno. */
static int compact_map_src(const struct compact_src *src, const uint8_t **p)
{
	void *m;

	*p = NULL;
	if (src->size <= 0)
		return 0;
	m = mmap(NULL, (size_t)src->size, PROT_READ, MAP_PRIVATE, src->log->fd, 0);
	if (m == MAP_FAILED)
		return -errno;
	madvise(m, (size_t)src->size, MADV_SEQUENTIAL);
	*p = m;
	return 0;
}

static void compact_unmap_src(const struct compact_src *src, const uint8_t *p)
{
	if (p)
		munmap((void *)p, (size_t)src->size);
}

/* ---- the offset map ---- */

/* Fills map from the dirty inputs; sets job->covered_end.  0 or -errno. */
static int compact_build_map(struct compact_job *job, struct clean_map *map, struct compact_io *io,
			     const volatile int *cancel)
{
	struct clean_aborted ab = { job->aborted, job->naborted };
	int rc = 0;

	clean_map_clear(map);
	job->covered_end = job->m.first_dirty;
	for (int i = 0; i < job->nsrc && !rc; i++) {
		const struct compact_src *src = &job->src[i];
		const uint8_t *p;

		if (src->end <= job->m.first_dirty)
			continue;
		if (*cancel)
			return -ECANCELED;
		rc = compact_map_src(src, &p);
		if (rc)
			return rc;
		rc = p ? clean_map_build(map, p, (size_t)src->size, job->m.first_dirty, &ab, job->cfg.max_records_bytes)
		       : 0;
		compact_unmap_src(src, p);
		job->bytes_read += src->size;
		compact_throttle(io, src->size);
		if (rc == 0)
			job->covered_end = src->end;
		else if (rc == 1)
			job->covered_end = clean_map_latest_offset(map) + 1;
	}
	return rc < 0 ? rc : 0;
}

/* ---- transaction state of the rewrite ---- */

/* Per producer id: whether its current transaction kept records (open addressing). */
struct compact_txns {
	int64_t *pid;
	uint8_t *kept;
	uint32_t cap, n;
};

static uint8_t *compact_txn_slot(struct compact_txns *t, int64_t pid)
{
	uint32_t i;

	if ((t->n + 1) * 2 > t->cap) {
		struct compact_txns nt = { calloc(t->cap ? t->cap * 2 : 64, 8), NULL, t->cap ? t->cap * 2 : 64, 0 };

		nt.kept = calloc(nt.cap, 1);
		if (!nt.pid || !nt.kept) {
			free(nt.pid);
			free(nt.kept);
			return NULL;
		}
		for (uint32_t k = 0; k < nt.cap; k++)
			nt.pid[k] = -1;
		for (uint32_t k = 0; k < t->cap; k++)
			if (t->pid[k] >= 0)
				*compact_txn_slot(&nt, t->pid[k]) = t->kept[k];
		free(t->pid);
		free(t->kept);
		*t = nt;
	}
	for (i = (uint32_t)((uint64_t)pid * 0x9e3779b97f4a7c15ULL >> 32) & (t->cap - 1); t->pid[i] >= 0;
	     i = (i + 1) & (t->cap - 1))
		if (t->pid[i] == pid)
			return &t->kept[i];
	t->pid[i] = pid;
	t->n++;
	return &t->kept[i];
}

struct compact_ctx {
	struct compact_job *job;
	struct compact_txns txns;
	int64_t horizon_ms;
	int64_t tombstone_ts_min; /* clean_opts.tombstone_ts_min */
	bool oom;
};

static bool compact_producer_last(void *arg, const struct batch_hdr *h)
{
	const struct compact_job *job = ((struct compact_ctx *)arg)->job;
	int lo = 0, hi = job->npids;

	while (lo < hi) {
		int mid = lo + (hi - lo) / 2;

		if (job->pids[mid].producer_id < h->producer_id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < job->npids && job->pids[lo].producer_id == h->producer_id &&
	       job->pids[lo].last_offset == records_last_offset(h);
}

static bool compact_txn_kept(void *arg, const struct batch_hdr *h)
{
	struct compact_ctx *c = arg;
	uint8_t *k = compact_txn_slot(&c->txns, h->producer_id);

	if (k)
		*k = 1;
	else
		c->oom = true;
	return true;
}

/* Notes that the marker at offset goes: its aborted transaction leaves the index with it. */
static bool compact_marker_dropped(struct compact_ctx *c, int64_t offset)
{
	struct compact_job *job = c->job;

	if (job->ndropped == job->dropped_cap) {
		int cap = job->dropped_cap ? job->dropped_cap * 2 : 64;
		int64_t *v = realloc(job->dropped, (size_t)cap * sizeof(*v));

		if (!v) {
			c->oom = true;
			return false;
		}
		job->dropped = v;
		job->dropped_cap = cap;
	}
	job->dropped[job->ndropped++] = offset; /* ascending: markers come in offset order */
	return true;
}

/*
 * A marker goes once no batch of its transaction is left (none kept with
 * records, none kept empty as its producer's last) and delete.retention.ms
 * has passed since it; never the producer's own last batch.
 */
static bool compact_marker_discardable(void *arg, const struct batch_hdr *h)
{
	struct compact_ctx *c = arg;
	uint8_t *k = compact_txn_slot(&c->txns, h->producer_id);
	bool had;

	if (!k) {
		c->oom = true;
		return false;
	}
	had = *k;
	*k = 0;
	if (had || h->max_timestamp < 0 || compact_producer_last(arg, h))
		return false;
	if (h->max_timestamp < c->horizon_ms)
		return compact_marker_dropped(c, h->base_offset);
	if (h->max_timestamp + c->job->cfg.delete_retention_ms < c->job->due_ms)
		c->job->due_ms = h->max_timestamp + c->job->cfg.delete_retention_ms;
	return false;
}

/* ---- writing one cleaned segment ---- */

static bool compact_is_dropped(const struct compact_job *job, int64_t offset)
{
	int lo = 0, hi = job->ndropped;

	while (lo < hi) {
		int mid = lo + (hi - lo) / 2;

		if (job->dropped[mid] < offset)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < job->ndropped && job->dropped[lo] == offset;
}

/*
 * <base>.txnindex.cleaned with the aborted transactions whose markers lie
 * in [base, end) and stay: a transaction whose ABORT marker went must not
 * stay listed, or read_committed consumers would skip its producer's later
 * records waiting for that marker.
 */
static int compact_write_txnidx(struct compact_job *job, struct compact_out *o, int64_t base, int64_t end)
{
	char name[64];
	uint8_t buf[TXNIDX_ENTRY_SIZE];
	int fd = -1, rc = 0;

	snprintf(name, sizeof(name), "%020" PRId64 TXNIDX_EXT ".cleaned", base);
	for (int i = 0; i < job->naborted && !rc; i++) {
		const struct txnidx_entry *e = &job->aborted[i];

		if (e->last_offset < base || e->last_offset >= end || compact_is_dropped(job, e->last_offset))
			continue;
		if (fd < 0 && (fd = openat(job->dir_fd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) < 0)
			return -errno;
		txnidx_entry_encode(e, buf);
		if (write(fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf))
			rc = -EIO;
	}
	if (fd >= 0) {
		o->txn = true;
		if (!rc && fdatasync(fd) < 0)
			rc = -errno;
		close(fd);
	}
	return rc;
}

static int compact_fdatasync(int fd)
{
	return fdatasync(fd) < 0 ? -errno : 0;
}

static int compact_sync_seg(struct seg *seg)
{
	int rc = compact_fdatasync(seg->log->fd);

	if (!rc)
		rc = idxfile_sync(&seg->oi.f, compact_fdatasync);
	return rc ? rc : idxfile_sync(&seg->ti.f, compact_fdatasync);
}

/* <base>.groupend.cleaned: where the group ends (compact.h). */
static int compact_write_groupend(struct compact_job *job, int64_t base, int64_t end)
{
	char name[64], text[32];
	int n = snprintf(text, sizeof(text), "%" PRId64 "\n", end), fd, rc = 0;

	snprintf(name, sizeof(name), "%020" PRId64 COMPACT_GROUPEND_EXT ".cleaned", base);
	fd = openat(job->dir_fd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	if (write(fd, text, (size_t)n) != n)
		rc = -EIO;
	if (!rc)
		rc = compact_fdatasync(fd);
	close(fd);
	return rc;
}

/* Renames the .cleaned files of o to .swap (.log last, compact.h) and syncs the directory. */
static int compact_to_swap(struct compact_job *job, const struct compact_out *o, int64_t base)
{
	static const char *const exts[] = { ".index", ".timeindex", TXNIDX_EXT, COMPACT_GROUPEND_EXT, ".log" };
	char from[64], to[64];

	for (size_t i = 0; i < sizeof(exts) / sizeof(exts[0]); i++) {
		if (!strcmp(exts[i], TXNIDX_EXT) && !o->txn)
			continue;
		snprintf(from, sizeof(from), "%020" PRId64 "%s.cleaned", base, exts[i]);
		snprintf(to, sizeof(to), "%020" PRId64 "%s.swap", base, exts[i]);
		if (renameat(job->dir_fd, from, job->dir_fd, to) < 0)
			return -errno;
	}
	/*
	 * Durable before the next group's: a group swapped without the earlier
	 * ones could have dropped a tombstone whose key still has an older
	 * value in an earlier, uncleaned group, and bring that key back.
	 */
	return fsync(job->dir_fd) < 0 ? -errno : 0;
}

/*
 * Whether job->dir still names the directory the job holds open: a topic
 * deleted and made again under the same name during the pass gets a new
 * directory, which the pass must not write into (its files are opened by
 * path).  Checked before each group's files are made.
 */
static bool compact_dir_same(const struct compact_job *job)
{
	struct stat a, b;

	return fstat(job->dir_fd, &a) == 0 && stat(job->dir, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

/* Cleans the inputs src[o->first..o->last] into o->seg, ending as *.swap files. */
static int compact_write_group(struct compact_job *job, struct compact_ctx *ctx, const struct clean_opts *opts,
			       struct compact_out *o, struct compact_io *io, const volatile int *cancel)
{
	int64_t base = job->src[o->first].base, end = job->src[o->last].end;
	struct wr out;
	int rc = *cancel || !compact_dir_same(job)
			 ? -ECANCELED
			 : seg_open_as(job->dir, base, ".cleaned", true, job->segment_index_bytes, &o->seg);

	wr_init(&out);
	for (int i = o->first; !rc && i <= o->last; i++) {
		const struct compact_src *src = &job->src[i];
		const uint8_t *p;

		rc = *cancel ? -ECANCELED : compact_map_src(src, &p);
		if (rc)
			break;
		out.len = 0;
		rc = p ? clean_segment(opts, p, (size_t)src->size, &out) : 0;
		compact_unmap_src(src, p);
		if (!rc && ctx->oom)
			rc = -ENOMEM;
		if (!rc && out.len)
			rc = seg_append(o->seg, out.buf, out.len, job->index_interval_bytes, job->now_ms);
		job->bytes_read += src->size;
		job->bytes_written += (int64_t)out.len;
		compact_throttle(io, src->size + (int64_t)out.len);
	}
	wr_release(&out);
	if (rc)
		return rc;
	o->seg->next_offset = end; /* in memory the segment still spans its inputs */
	seg_seal(o->seg);
	rc = compact_sync_seg(o->seg);
	if (!rc)
		rc = compact_write_txnidx(job, o, base, end);
	if (!rc)
		rc = compact_write_groupend(job, base, end);
	return rc ? rc : compact_to_swap(job, o, base);
}

/* Splits the inputs below covered_end into groups that fit one segment. */
static int compact_group(struct compact_job *job)
{
	int64_t max_entries = job->segment_index_bytes / 8, interval = job->index_interval_bytes + 1;

	job->out = calloc((unsigned)job->nsrc + 1u, sizeof(*job->out));
	if (!job->out)
		return -ENOMEM;
	for (int i = 0; i < job->nsrc && job->src[i].base < job->covered_end;) {
		int64_t size = job->src[i].size;
		int j = i;

		while (j + 1 < job->nsrc && job->src[j + 1].base < job->covered_end &&
		       size + job->src[j + 1].size <= job->segment_bytes &&
		       (size + job->src[j + 1].size) / interval < max_entries &&
		       job->src[j + 1].end - 1 - job->src[i].base <= INT32_MAX)
			size += job->src[++j].size;
		job->out[job->nout++] = (struct compact_out){ .first = i, .last = j };
		i = j + 1;
	}
	return 0;
}

/* Removes every file the pass wrote. */
static void compact_remove_outputs(struct compact_job *job)
{
	static const char *const names[] = { ".log", ".index", ".timeindex", TXNIDX_EXT, COMPACT_GROUPEND_EXT };
	char name[64];

	for (int i = 0; i < job->nout; i++)
		for (size_t k = 0; k < sizeof(names) / sizeof(names[0]); k++)
			for (int s = 0; s < 2; s++) {
				snprintf(name, sizeof(name), "%020" PRId64 "%s%s", job->src[job->out[i].first].base,
					 names[k], s ? ".swap" : ".cleaned");
				unlinkat(job->dir_fd, name, 0);
			}
}

void compact_run(struct compact_job *job, struct clean_map *map, const volatile int *cancel, double rate_bytes_per_s)
{
	struct compact_io io = { rate_bytes_per_s, clock_mono_ms(), 0, cancel };
	struct compact_ctx ctx = { .job = job,
				   .horizon_ms = job->now_ms - job->cfg.delete_retention_ms,
				   .tombstone_ts_min = INT64_MAX };
	struct clean_opts opts = { .map = map,
				   .delete_horizon_ms = ctx.horizon_ms,
				   .aborted = { job->aborted, job->naborted },
				   .producer_last = compact_producer_last,
				   .marker_discardable = compact_marker_discardable,
				   .kept = compact_txn_kept,
				   .arg = &ctx,
				   .max_records_bytes = job->cfg.max_records_bytes,
				   .tombstone_ts_min = &ctx.tombstone_ts_min };
	int rc = compact_build_map(job, map, &io, cancel);

	opts.covered_end = job->covered_end;
	if (!rc)
		rc = compact_group(job);
	for (int i = 0; !rc && i < job->nout; i++)
		rc = compact_write_group(job, &ctx, &opts, &job->out[i], &io, cancel);
	if (ctx.tombstone_ts_min != INT64_MAX && ctx.tombstone_ts_min + job->cfg.delete_retention_ms < job->due_ms)
		job->due_ms = ctx.tombstone_ts_min + job->cfg.delete_retention_ms;
	if (job->due_ms != INT64_MAX) /* let more of them expire, rather than one pass each */
		job->due_ms += job->cfg.delete_retention_ms / 4 < COMPACT_DUE_SLACK_MS
				       ? job->cfg.delete_retention_ms / 4
				       : COMPACT_DUE_SLACK_MS;
	if (rc) {
		compact_remove_outputs(job);
		for (int i = 0; i < job->nout; i++)
			if (job->out[i].seg) {
				seg_close(job->out[i].seg);
				job->out[i].seg = NULL;
			}
	}
	free(ctx.txns.pid);
	free(ctx.txns.kept);
	job->run_ms = clock_mono_ms() - io.t0_ms;
	job->err = rc;
}
