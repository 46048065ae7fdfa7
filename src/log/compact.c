/*
 * compact.c - the loop-thread half of a compaction pass (compact.h): what
 * a pass reads, the swap of its output into the log, and the start-up
 * recovery of a swap a crash interrupted.  The pass itself is
 * compact_run.c.
 */
#include "log/compact.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log/checkpoint.h"
#include "log/part_int.h"
#include "log/recover.h"
#include "util/log.h"

/* File name extensions of a segment, the .log last (compact.h: swap order). */
static const char *const compact_exts[] = { ".index", ".timeindex", TXNIDX_EXT, ".log" };
#define COMPACT_NEXTS (sizeof(compact_exts) / sizeof(compact_exts[0]))

int64_t part_clean_offset(const struct part *part)
{
	return part->clean_offset;
}

void part_set_clean_offset(struct part *part, int64_t offset)
{
	part->clean_offset = offset;
}

/* When a segment's oldest record was written, as far as the log knows. */
static int64_t compact_seg_first_ts(const struct seg *seg)
{
	return seg->roll_ts >= 0 ? seg->roll_ts : seg->max_ts;
}

int compact_describe(struct part *part, const struct compact_cfg *cfg, struct cleanable_log *l,
		     struct cleanable_seg **segs)
{
	struct cleanable_seg *v;

	*segs = NULL;
	if (part->uncleanable)
		return -EBADMSG;
	*segs = v = calloc((size_t)part->nsegs, sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (int i = 0; i < part->nsegs; i++) {
		struct seg *seg = part->segs[i];

		seg_load_stats(seg); /* a sealed segment learns its max timestamp once; unreadable: none known */
		v[i] = (struct cleanable_seg){ .base_offset = seg->base_offset,
					       .size = seg->size,
					       .first_ts = compact_seg_first_ts(seg),
					       .max_ts = seg->ts_unknown ? -1 : seg->max_ts };
	}
	*l = (struct cleanable_log){ .segs = v,
				     .nsegs = part->nsegs,
				     .log_start_offset = part->log_start_offset,
				     .log_end_offset = part->leo,
				     .first_unstable_offset = txnidx_last_stable_offset(part),
				     .checkpoint = part->clean_offset,
				     .min_lag_ms = cfg->min_lag_ms,
				     .max_lag_ms = cfg->max_lag_ms,
				     .min_ratio = cfg->min_ratio };
	return 0;
}

int64_t part_clean_due(const struct part *part)
{
	return part->clean_due_ms;
}

static int compact_pid_cmp(const void *a, const void *b)
{
	int64_t x = ((const struct compact_pid *)a)->producer_id, y = ((const struct compact_pid *)b)->producer_id;

	return (x > y) - (x < y);
}

/* The last offset of every producer's last batch, sorted by producer id. */
static int compact_collect_pids(struct part *part, struct compact_job *job)
{
	const struct pstate *ps = &part->pstate;

	job->pids = calloc(ps->count + 1, sizeof(*job->pids));
	if (!job->pids)
		return -ENOMEM;
	for (uint32_t i = 0; i < ps->cap; i++) {
		const struct pstate_entry *e = &ps->slots[i];

		if (e->producer_id < 0 || !e->nbatches)
			continue;
		job->pids[job->npids++] = (struct compact_pid){
			.producer_id = e->producer_id,
			.last_offset = pstate_entry_batch(e, e->nbatches - 1)->last_offset,
		};
	}
	qsort(job->pids, (size_t)job->npids, sizeof(*job->pids), compact_pid_cmp);
	return 0;
}

/* The inputs: the sealed segments wholly below the first uncleanable offset. */
static int compact_collect_srcs(struct part *part, struct compact_job *job)
{
	int n = 0;

	while (n < part->nsegs - 1 && part->segs[n + 1]->base_offset <= job->m.first_uncleanable)
		n++;
	if (!n)
		return -ENOENT;
	job->src = calloc((size_t)n, sizeof(*job->src));
	if (!job->src)
		return -ENOMEM;
	for (int i = 0; i < n; i++) {
		struct seg *seg = part->segs[i];
		struct fdref *log;
		int rc = seg_ref(seg,
				 &log); /* opened through the descriptor cache; the job's reference outlives eviction */

		if (rc)
			return rc;
		job->src[i] = (struct compact_src){
			.base = seg->base_offset, .end = part->segs[i + 1]->base_offset, .size = seg->size, .log = log
		};
		job->nsrc++;
	}
	return 0;
}

static int compact_collect_aborted(struct part *part, struct compact_job *job)
{
	int64_t from = job->src[0].base, upper = job->src[job->nsrc - 1].end;
	int n = txnidx_collect(part, from, upper, NULL, 0);

	job->aborted = calloc((size_t)n + 1, sizeof(*job->aborted));
	if (!job->aborted)
		return -ENOMEM;
	job->naborted = txnidx_collect(part, from, upper, job->aborted, n);
	return 0;
}

struct compact_job *compact_plan(struct part *part, const struct compact_cfg *cfg, const struct cleanable *m,
				 int64_t now_ms)
{
	struct compact_job *job = calloc(1, sizeof(*job));
	int rc;

	if (!job)
		return NULL;
	*job = (struct compact_job){ .part = part,
				     .gen = part->head_gen,
				     .dir = strdup(part->dir),
				     .dir_fd = open(part->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), /* the job's own */
				     .cfg = *cfg,
				     .segment_bytes = part->cfg.segment_bytes,
				     .index_interval_bytes = part->cfg.index_interval_bytes,
				     .segment_index_bytes = part->cfg.segment_index_bytes,
				     .now_ms = now_ms,
				     .m = *m,
				     .due_ms = INT64_MAX };
	rc = !job->dir || job->dir_fd < 0 ? -ENOMEM : compact_collect_srcs(part, job);
	if (!rc)
		rc = compact_collect_aborted(part, job);
	if (!rc)
		rc = compact_collect_pids(part, job);
	if (rc) {
		compact_free(job);
		return NULL;
	}
	return job;
}

void compact_free(struct compact_job *job)
{
	if (!job)
		return;
	for (int i = 0; i < job->nsrc; i++)
		fdref_put(job->src[i].log);
	for (int i = 0; i < job->nout; i++)
		if (job->out[i].seg)
			seg_close(job->out[i].seg);
	if (job->dir_fd >= 0)
		close(job->dir_fd);
	free(job->src);
	free(job->out);
	free(job->aborted);
	free(job->pids);
	free(job->dropped);
	free(job->dir);
	free(job);
}

/* ---- swap ---- */

static void compact_name(char *buf, size_t cap, int64_t base, const char *ext, const char *suffix)
{
	snprintf(buf, cap, "%020" PRId64 "%s%s", base, ext, suffix);
}

/* Unlinks the files of segment base with suffix ("" or ".swap"); ENOENT is fine. */
static void compact_unlink(int dir_fd, const char *dir, int64_t base, const char *suffix)
{
	char name[64];

	for (size_t i = 0; i < COMPACT_NEXTS; i++) {
		compact_name(name, sizeof(name), base, compact_exts[i], suffix);
		if (unlinkat(dir_fd, name, 0) < 0 && errno != ENOENT)
			log_warn("log: cannot unlink '%s/%s': %s", dir, name, strerror(errno));
	}
}

/* Unlinks "<base><name>" (ENOENT is fine). */
static void compact_unlink_one(int dir_fd, int64_t base, const char *name)
{
	char file[64];

	compact_name(file, sizeof(file), base, name, "");
	unlinkat(dir_fd, file, 0);
}

/* Renames the *.swap files of base to their plain names (.log last); 0 or -errno. */
static int compact_rename_swap(int dir_fd, int64_t base)
{
	char from[64], to[64];

	for (size_t i = 0; i < COMPACT_NEXTS; i++) {
		compact_name(from, sizeof(from), base, compact_exts[i], ".swap");
		compact_name(to, sizeof(to), base, compact_exts[i], "");
		if (renameat(dir_fd, from, dir_fd, to) < 0 && errno != ENOENT)
			return -errno;
	}
	return 0;
}

/* Puts o's segment in place of part->segs[o->first..o->last]. */
static void compact_install(struct part *part, struct compact_out *o)
{
	int drop = o->last - o->first + 1;
	struct seg **old = part->segs + o->first;
	struct seg *gone[drop];

	memcpy(gone, old, sizeof(gone));
	pthread_mutex_lock(&part->mu);
	old[0] = o->seg;
	memmove(old + 1, old + drop, (size_t)(part->nsegs - o->first - drop) * sizeof(*old));
	part->nsegs -= drop - 1;
	pthread_mutex_unlock(&part->mu);
	seg_retire(o->seg); /* a sealed segment like the others, opened when read */
	o->seg = NULL;
	for (int i = 0; i < drop; i++)
		seg_close(gone[i]); /* readers keep their references */
}

void compact_swap_discard(struct compact_job *job)
{
	for (int i = 0; i < job->nout; i++) {
		compact_unlink(job->dir_fd, job->dir, job->src[job->out[i].first].base, ".swap");
		compact_unlink_one(job->dir_fd, job->src[job->out[i].first].base, COMPACT_GROUPEND_EXT ".swap");
	}
}

int compact_swap(struct part *part, struct compact_job *job)
{
	int rc = job->err ? job->err : part->head_gen != job->gen ? -ESTALE : 0;

	if (rc) {
		compact_swap_discard(job);
		if (rc == -EBADMSG)
			part->uncleanable = true;
		return rc;
	}
	/* the outputs replace segs from the last down, so earlier indexes stay put */
	for (int i = job->nout - 1; i >= 0; i--) {
		struct compact_out *o = &job->out[i];

		/* the replaced files go as retention's do: renamed *.deleted, unlinked in the background */
		for (int k = o->first; k <= o->last; k++)
			part_delete_seg_files(part, job->src[k].base);
		rc = compact_rename_swap(job->dir_fd, job->src[o->first].base);
		if (rc) { /* the .swap files stay: the next start completes the swap */
			log_error("log: '%s': cannot rename the cleaned segment %" PRId64 ": %s", job->dir,
				  job->src[o->first].base, strerror(-rc));
			return rc;
		}
		compact_unlink_one(job->dir_fd, job->src[o->first].base, COMPACT_GROUPEND_EXT ".swap");
		compact_install(part, o);
	}
	txnidx_forget(part, job->dropped, job->ndropped);
	part->clean_offset = job->covered_end;
	part->clean_due_ms = job->due_ms;
	return 0;
}

int compact_finish(struct compact_job *job)
{
	return fsync(job->dir_fd) < 0 ? -errno : 0;
}

/* ---- recovery ---- */

static bool compact_has_suffix(const char *name, const char *suffix)
{
	size_t n = strlen(name), k = strlen(suffix);

	return n > k && !strcmp(name + n - k, suffix);
}

/* The base offset of a "<20 digits><ext><suffix>" name, or -1. */
static int64_t compact_name_base(const char *name, const char *ext, const char *suffix)
{
	char want[64];
	int64_t base;

	if (strlen(name) < 20 || strspn(name, "0123456789") != 20)
		return -1;
	base = strtoll(name, NULL, 10);
	compact_name(want, sizeof(want), base, ext, suffix);
	return strcmp(want, name) ? -1 : base;
}

/* The end of the group <base>.log.swap replaces (compact.h, COMPACT_GROUPEND_EXT), or -errno. */
static int64_t compact_swap_end(struct part *part, int64_t base)
{
	struct seg *seg;
	int64_t truncated = 0, end;
	char name[64], text[32];
	int rc = seg_open_as(part->dir, base, ".swap", false, part->cfg.segment_index_bytes, &seg);

	if (rc)
		return rc;
	rc = recover_load(seg, part->cfg.index_interval_bytes, part->scratch, PART_SCRATCH_BYTES, &truncated);
	end = rc < 0 ? rc : seg->next_offset;
	seg_close(seg);
	compact_name(name, sizeof(name), base, COMPACT_GROUPEND_EXT, ".swap");
	if (end >= 0 && checkpoint_read(part->dir, name, text, sizeof(text)) > 0) {
		long long group_end = strtoll(text, NULL, 10);

		if (group_end > end)
			end = group_end;
	}
	return end;
}

/* Finishes the swap of <base>.log.swap: the segments it replaced go, its files take their names. */
static int compact_complete(struct part *part, int64_t base, const int64_t *logs, int nlogs)
{
	int64_t end = compact_swap_end(part, base);
	int rc;

	if (end < 0)
		return (int)end;
	log_warn("log: '%s': completing the interrupted swap of cleaned segment %" PRId64 " (offsets up to %" PRId64
		 ")",
		 part->dir, base, end);
	for (int i = 0; i < nlogs; i++)
		if (logs[i] > base && logs[i] < end)
			compact_unlink(part->dir_fd, part->dir, logs[i], "");
	rc = compact_rename_swap(part->dir_fd, base);
	compact_unlink_one(part->dir_fd, base, COMPACT_GROUPEND_EXT ".swap");
	return rc;
}

/* Lists the base offsets of the files named <base><ext><suffix> in part's directory. */
static int compact_list(struct part *part, const char *ext, const char *suffix, int64_t **out, int *n)
{
	DIR *d = opendir(part->dir);
	struct dirent *de;
	int cap = 0;

	*out = NULL;
	*n = 0;
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		int64_t base = compact_name_base(de->d_name, ext, suffix);

		if (base < 0)
			continue;
		if (*n == cap) {
			int64_t *nv = realloc(*out, (size_t)(cap = cap ? cap * 2 : 8) * sizeof(**out));

			if (!nv) {
				closedir(d);
				return -ENOMEM;
			}
			*out = nv;
		}
		(*out)[(*n)++] = base;
	}
	closedir(d);
	return 0;
}

/* Deletes *.cleaned files and index *.swap files whose .log.swap is gone. */
static void compact_remove_leftovers(struct part *part)
{
	DIR *d = opendir(part->dir);
	struct dirent *de;

	if (!d)
		return;
	while ((de = readdir(d)))
		if (compact_has_suffix(de->d_name, ".cleaned") || compact_has_suffix(de->d_name, ".swap")) {
			log_info("log: removing unfinished cleaner file '%s/%s'", part->dir, de->d_name);
			unlinkat(dirfd(d), de->d_name, 0);
		}
	closedir(d);
}

int compact_recover(struct part *part)
{
	int64_t *swaps = NULL, *logs = NULL;
	int nswaps = 0, nlogs = 0, rc;

	rc = compact_list(part, ".log", ".swap", &swaps, &nswaps);
	if (!rc && nswaps)
		rc = compact_list(part, ".log", "", &logs, &nlogs);
	for (int i = 0; !rc && i < nswaps; i++)
		rc = compact_complete(part, swaps[i], logs, nlogs);
	free(swaps);
	free(logs);
	if (rc)
		log_error("log: '%s': cannot complete a cleaner swap: %s", part->dir, strerror(-rc));
	compact_remove_leftovers(part);
	if (!rc && nswaps && fsync(part->dir_fd) < 0)
		rc = -errno;
	return rc;
}
