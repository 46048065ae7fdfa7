/*
 * partition.c - one partition's log (directory layout in partition.h):
 * opening and recovering its segments, append with offset assignment and
 * segment roll, reads for sendfile, timestamp lookups, and group-committed
 * durability with the flusher thread.
 *
 * Offsets: LEO = active segment's next offset.  Batches are appended with
 * baseOffset = LEO and advance it by lastOffsetDelta + 1.  The recovery
 * point only grows, by part_sync; part_open() rescans every segment that
 * may hold data past it.
 */
#include "log/partition.h"

#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log/checkpoint.h"
#include "log/compact.h"
#include "log/part_int.h"
#include "log/recover.h"
#include "util/clock.h"
#include "util/dirdel.h"
#include "util/durable.h"
#include "util/log.h"

#define PART_MARKER_BYTES_MAX 4096 /* a marker batch is ~80 bytes */

void part_cfg_default(struct part_cfg *cfg)
{
	/* a compound literal: every field not named here (a new one too) is zero */
	*cfg = (struct part_cfg){
		.segment_bytes = 1LL << 30,
		.segment_ms = 7LL * 24 * 3600 * 1000,
		.retention_ms = 7LL * 24 * 3600 * 1000,
		.retention_bytes = -1,
		.retention_delete = true,
		.index_interval_bytes = 4096,
		.segment_index_bytes = 10 << 20,
		.producer_id_expiration_ms = 86400000,
		.hw_on_sync = true,
		.file_delete_delay_ms = 60000,
	};
}

/*
 * Kafka's rollJitterMs: each new active segment rolls a random
 * [0, min(segment.jitter.ms, segment.ms)) earlier than segment.ms, so
 * partitions created together do not all roll at once.
 */
static void part_draw_jitter(struct part *part)
{
	int64_t bound =
		part->cfg.segment_jitter_ms < part->cfg.segment_ms ? part->cfg.segment_jitter_ms : part->cfg.segment_ms;
	uint64_t r;

	if (bound <= 0) {
		part->roll_jitter_ms = 0;
		return;
	}
	if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != (ssize_t)sizeof(r))
		r = ((uint64_t)random() << 31) ^ (uint64_t)random();
	part->roll_jitter_ms = (int64_t)(r % (uint64_t)bound);
}

void part_set_cfg(struct part *part, const struct part_cfg *cfg)
{
	bool redraw = cfg->segment_jitter_ms != part->cfg.segment_jitter_ms || cfg->segment_ms != part->cfg.segment_ms;

	part->cfg = *cfg;
	if (redraw) /* the active segment keeps its jitter unless its bounds change */
		part_draw_jitter(part);
	if (part->cfg.segment_bytes > INT32_MAX || part->cfg.segment_bytes < 1)
		part->cfg.segment_bytes = INT32_MAX;
	if (part->cfg.segment_index_bytes < TIMEIDX_ENTRY_SIZE * 2)
		part->cfg.segment_index_bytes = TIMEIDX_ENTRY_SIZE * 2;
	if (part->cfg.index_interval_bytes < 0)
		part->cfg.index_interval_bytes = 0;
}

/* ---- opening ---- */

/* Parses "<20 digits><ext>"; true with *base set if name matches. */
static bool seg_name_parse(const char *name, const char *ext, int64_t *base)
{
	char *end;
	long long v;

	if (strlen(name) != 20 + strlen(ext) || strcmp(name + 20, ext))
		return false;
	for (int i = 0; i < 20; i++)
		if (name[i] < '0' || name[i] > '9')
			return false;
	errno = 0;
	v = strtoll(name, &end, 10);
	if (errno || end != name + 20 || v < 0)
		return false;
	*base = v;
	return true;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

static int part_push_seg(struct part *part, struct seg *seg)
{
	if (part->nsegs == part->segs_cap) {
		int cap = part->segs_cap ? part->segs_cap * 2 : 16;
		struct seg **ns;

		pthread_mutex_lock(&part->mu);
		ns = realloc(part->segs, (size_t)cap * sizeof(*ns));
		if (ns) {
			part->segs = ns;
			part->segs_cap = cap;
		}
		pthread_mutex_unlock(&part->mu);
		if (!ns)
			return -ENOMEM;
	}
	pthread_mutex_lock(&part->mu);
	part->segs[part->nsegs++] = seg;
	pthread_mutex_unlock(&part->mu);
	return 0;
}

/* Lists base offsets of the *.log files, ascending.  OUT *bases (caller frees). */
static int part_list(struct part *part, int64_t **bases, int *n)
{
	DIR *d = opendir(part->dir);
	struct dirent *de;
	int64_t *v = NULL, base;
	int cap = 0, rc = 0;

	*n = 0;
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		if (!seg_name_parse(de->d_name, ".log", &base))
			continue;
		if (*n == cap) {
			int64_t *nv = realloc(v, (size_t)(cap = cap ? cap * 2 : 16) * sizeof(*nv));

			if (!nv) {
				rc = -ENOMEM;
				break;
			}
			v = nv;
		}
		v[(*n)++] = base;
	}
	closedir(d);
	if (*n)
		qsort(v, (size_t)*n, sizeof(*v), cmp_i64);
	*bases = v;
	return rc;
}

/* A segment file deleted by retention or the cleaner, waiting for its removal (retain.c). */
static bool part_name_deleted(const char *name)
{
	size_t n = strlen(name), k = strlen(PART_DELETED_SUFFIX);

	return n > k && !strcmp(name + n - k, PART_DELETED_SUFFIX);
}

/* Removes index files without a .log, leftover *.tmp files and (in the background) *.deleted ones. */
static void part_remove_orphans(struct part *part)
{
	DIR *d = opendir(part->dir);
	struct dirent *de;
	int64_t base;

	if (!d)
		return;
	while ((de = readdir(d))) {
		bool orphan = false, known = false;

		if (seg_name_parse(de->d_name, ".index", &base) || seg_name_parse(de->d_name, ".timeindex", &base)) {
			for (int i = 0; i < part->nsegs && !known; i++)
				known = part->segs[i]->base_offset == base;
			orphan = !known;
		}
		orphan = orphan || (strlen(de->d_name) > 4 && !strcmp(de->d_name + strlen(de->d_name) - 4, ".tmp"));
		if (part_name_deleted(de->d_name)) {
			log_info("log: removing '%s/%s', deleted before the last stop", part->dir, de->d_name);
			part_discard_file(part, de->d_name, 0);
		} else if (orphan) {
			log_info("log: removing stray file '%s/%s'", part->dir, de->d_name);
			unlinkat(dirfd(d), de->d_name, 0);
		}
	}
	closedir(d);
}

/* Deletes segments from index i on (recovery cut the log before them). */
static void part_drop_tail(struct part *part, int i)
{
	log_warn("log: '%s': deleting %d segment(s) after the truncated one", part->dir, part->nsegs - i);
	while (part->nsegs > i) {
		struct seg *seg = part->segs[part->nsegs - 1];

		pthread_mutex_lock(&part->mu);
		part->nsegs--;
		pthread_mutex_unlock(&part->mu);
		seg_unlink(seg);
		seg_close(seg);
	}
}

/* Loads or recovers writable segment i; recovery_point decides how much to trust it. */
static int part_load_seg(struct part *part, int i, int64_t recovery_point)
{
	struct seg *seg = part->segs[i];
	int32_t interval = part->cfg.index_interval_bytes;
	int64_t truncated = 0, checked = -1;
	int rc;

	rc = recover_load(seg, interval, part->scratch, PART_SCRATCH_BYTES, &truncated);
	if (rc == 0 && seg->next_offset > recovery_point)
		/* may hold unsynced data: check every CRC past the recovery point */
		rc = recover_seg(seg, recovery_point, interval, part->scratch, PART_SCRATCH_BYTES, &truncated,
				 &checked);
	if (rc == 0 && seg->next_offset > recovery_point)
		rc = 1;
	if (rc < 0)
		return rc;
	if (rc == 1) { /* read, its indexes rebuilt */
		part->scanned_segs++;
		part->scanned_bytes += (checked >= 0 ? checked : seg->size) + truncated;
	}
	if (seg->roll_ts < 0 && seg->size > 0)
		seg->roll_ts = seg_created_ms(seg, clock_wall_ms());
	if (i > 0 && part->segs[i - 1]->next_offset > seg->base_offset) {
		log_error("log: '%s.log' overlaps the previous segment (ends at %" PRId64 ")", seg->path,
			  part->segs[i - 1]->next_offset);
		return -EBADMSG;
	}
	if (truncated && i + 1 < part->nsegs)
		part_drop_tail(part, i + 1);
	return 0;
}

/*
 * Segment i (a sealed stand-in) opened writable in its place, loaded or
 * recovered, and sealed again unless it is the last: its indexes are
 * rebuilt if they disagree with the log and, as it ends past the recovery
 * point, synced by the first round with the recovered tail (idx_from).
 */
static int part_recover_seg(struct part *part, int i, int64_t recovery_point)
{
	struct seg *stand_in = part->segs[i], *seg;
	int rc = seg_open(part->dir, stand_in->base_offset, false, part->cfg.segment_index_bytes, &seg);

	if (rc)
		return rc;
	pthread_mutex_lock(&part->mu);
	part->segs[i] = seg;
	pthread_mutex_unlock(&part->mu);
	seg_close(stand_in);
	rc = part_load_seg(part, i, recovery_point);
	if (rc || i + 1 == part->nsegs)
		return rc;
	seg_seal(seg);
	seg_retire(seg);
	pthread_mutex_lock(&part->mu);
	if (seg->base_offset < part->idx_from)
		part->idx_from = seg->base_offset; /* lies past the recovery point: synced with the recovered tail */
	pthread_mutex_unlock(&part->mu);
	return 0;
}

/*
 * Every segment is first listed sealed (a statx each, nothing opened): a
 * segment that ends at or below the recovery point is trusted as it is and
 * opened only when read.  From the first one that may hold unsynced data
 * to the last, each is opened writable and checked in turn (recover.h), so
 * at most one segment's files are open at a time.
 */
static int part_load_segs(struct part *part, int64_t recovery_point, int64_t log_start)
{
	int64_t *bases = NULL, now_ms = clock_wall_ms();
	int n, rc, first;

	rc = part_list(part, &bases, &n);
	for (int i = 0; !rc && i < n; i++) {
		struct seg *seg;

		rc = seg_open_sealed(part->dir, bases[i], i + 1 < n ? bases[i + 1] : bases[i], now_ms, &seg);
		if (!rc && (rc = part_push_seg(part, seg)))
			seg_close(seg);
	}
	free(bases);
	for (first = 0; first + 1 < part->nsegs && part->segs[first + 1]->base_offset <= recovery_point; first++)
		;
	for (int i = first; !rc && i < part->nsegs; i++)
		rc = part_recover_seg(part, i, recovery_point);
	if (!rc && part->scanned_segs)
		log_info("log: '%s': recovery read %d of %d segment(s), %" PRId64
			 " bytes, past the recovery point %" PRId64,
			 part->dir, part->scanned_segs, part->nsegs, part->scanned_bytes, recovery_point);
	if (!rc && part->nsegs == 0) {
		struct seg *seg;

		rc = seg_open(part->dir, log_start, true, part->cfg.segment_index_bytes, &seg);
		if (!rc && (rc = part_push_seg(part, seg)))
			seg_close(seg);
		part->dir_dirty = true;
	}
	return rc;
}

static int64_t part_read_log_start(struct part *part)
{
	char buf[64];
	long long v;
	char *end;
	int rc = checkpoint_read(part->dir, LOG_START_FILE, buf, sizeof(buf));

	if (rc == -ENOENT)
		return 0;
	if (rc < 0 || strncmp(buf, "0\n", 2) || (v = strtoll(buf + 2, &end, 10)) < 0 || end == buf + 2 ||
	    strcmp(end, "\n")) {
		log_warn("log: '%s/%s' is malformed, ignoring it", part->dir, LOG_START_FILE);
		return 0;
	}
	return v;
}

static int part_init_epochs(struct part *part, int32_t leader_epoch)
{
	struct epochs *ep = &part->epochs;
	int rc = epochs_load(ep, part->dir);
	bool changed;

	if (rc)
		return rc;
	changed = epochs_truncate_end(ep, part->leo + 1);
	changed |= epochs_truncate_start(ep, part->log_start_offset);
	if (leader_epoch >= 0)
		changed |= epochs_assign(ep, leader_epoch, part->leo);
	part->leader_epoch = ep->n ? ep->e[ep->n - 1].epoch : leader_epoch;
	return changed ? epochs_write(ep, part->dir_fd) : 0;
}

/* The coordinator epoch of a marker batch at p (transactions, log/marker.h). */
static void part_apply_marker(struct part *part, const uint8_t *p, const struct batch_hdr *h)
{
	bool commit;
	int32_t coordinator_epoch;

	if (records_is_control(h) && h->producer_id >= 0 && !records_control_parse(p, h, &commit, &coordinator_epoch))
		pstate_set_coordinator_epoch(&part->pstate, h->producer_id, coordinator_epoch);
}

/* part_apply_marker for a marker batch read from seg at pos (a rebuild: headers only otherwise). */
static void part_scan_marker(struct part *part, struct seg *seg, int64_t pos, const struct batch_hdr *h)
{
	uint8_t buf[PART_MARKER_BYTES_MAX];

	if (records_is_control(h) && h->size <= (int64_t)sizeof(buf) &&
	    seg_pread(seg, buf, (size_t)h->size, pos) == h->size)
		part_apply_marker(part, buf, h);
}

/* Applies every batch header from offset from to the LEO to the producer state. */
static int part_scan_pstate(struct part *part, int64_t from, int64_t *batches)
{
	for (int i = 0; i < part->nsegs; i++) {
		struct seg *seg = part->segs[i];
		struct seg_iter it;
		struct batch_hdr h;
		int rc;

		if (seg->next_offset <= from)
			continue;
		rc = seg_find(seg, from, &it, &h, part->scratch, PART_SCRATCH_BYTES);
		while (rc == 1) {
			rc = pstate_apply(&part->pstate, &h);
			if (rc)
				return rc;
			part_scan_marker(part, seg, it.pos, &h);
			++*batches;
			seg_iter_skip(&it, &h);
			rc = seg_iter_next(&it, &h);
		}
		if (rc == -EBADMSG)
			log_error("log: '%s.log' position %" PRId64 ": %s", seg->path, it.pos,
				  it.why ? it.why : "corrupt");
		if (rc < 0)
			return rc;
	}
	return 0;
}

/*
 * Rebuilds the producer state after the segments are loaded: the newest
 * valid snapshot at or below the LEO, then the log after it (from the log
 * start without one), then expiry and the log start applied.
 */
int part_load_pstate(struct part *part)
{
	struct pstate *ps = &part->pstate;
	int64_t snap, from, batches = 0;
	int rc;

	rc = pstate_snapshot_load(ps, part->dir_fd, part->dir, part->leo, &snap);
	from = snap > part->segs[0]->base_offset ? snap : part->segs[0]->base_offset;
	if (!rc && from < part->leo)
		rc = part_scan_pstate(part, from, &batches);
	if (rc)
		return rc;
	pstate_expire(ps, clock_wall_ms(), part->cfg.producer_id_expiration_ms);
	pstate_truncate_head(ps, part->log_start_offset);
	if (batches || ps->count)
		log_info("log: '%s': producer state of %u producer(s) from %s%" PRId64 " and %" PRId64
			 " batch(es) up to %" PRId64,
			 part->dir, ps->count, snap >= 0 ? "the snapshot at " : "the log from ",
			 snap >= 0 ? snap : from, batches, part->leo);
	return 0;
}

struct pstate *part_pstate(struct part *part)
{
	return &part->pstate;
}

/*
 * Snapshots the producer state at the LEO unless the newest snapshot
 * already says it or the log is empty (a start has nothing to read then);
 * sync: see pstate_snapshot_write.
 */
static void part_write_pstate(struct part *part, const char *why, bool sync)
{
	struct pstate *ps = &part->pstate;
	int rc;

	if (!ps->dirty && (ps->snap_offset == part->leo || part->leo == part->segs[0]->base_offset))
		return;
	rc = part_dir_hold(part);
	if (rc >= 0) {
		rc = pstate_snapshot_write(ps, part->dir_fd, part->dir, part->leo, sync);
		part_dir_release(part);
	}
	if (rc)
		log_warn("log: '%s': cannot write the producer snapshot at %s: %s", part->dir, why, strerror(-rc));
}

static struct part *part_alloc(const char *dir, const struct part_cfg *cfg)
{
	struct part *part = calloc(1, sizeof(*part));

	if (!part)
		return NULL;
	part->dir_fd = -1;
	part->dir = strdup(dir);
	part->scratch = malloc(PART_SCRATCH_BYTES);
	if (!part->dir || !part->scratch) {
		free(part->dir);
		free(part->scratch);
		free(part);
		return NULL;
	}
	pthread_mutex_init(&part->mu, NULL);
	part->idx_from = INT64_MAX;
	part->clean_offset = -1;
	part->clean_due_ms = INT64_MAX;
	part->hw_limit = INT64_MAX;
	pstate_init(&part->pstate);
	txnidx_init(&part->txnidx);
	part_set_cfg(part, cfg);
	return part;
}

static void part_free(struct part *part)
{
	for (int i = 0; i < part->nsegs; i++)
		seg_close(part->segs[i]);
	free(part->segs);
	epochs_release(&part->epochs);
	pstate_release(&part->pstate);
	txnidx_release(&part->txnidx);
	if (part->dir_fd >= 0)
		close(part->dir_fd);
	pthread_mutex_destroy(&part->mu);
	free(part->scratch);
	free(part->dir);
	free(part);
}

/*
 * After a crash the tail past the recovery point survived in the page
 * cache, not necessarily on disk: it is synced before anything is served
 * from it, so the high watermark may start at the LEO.
 */
static int part_sync_recovered(struct part *part)
{
	int rc;

	rc = part_sync(part); /* idx_from: the indexes recovery rebuilt (part_recover_seg) */
	if (rc)
		log_error("log: '%s': cannot sync the recovered log: %s", part->dir, strerror(-rc));
	return rc;
}

int part_open(const char *dir, const struct part_cfg *cfg, int64_t recovery_point, int32_t leader_epoch,
	      struct part **out)
{
	struct part *part = part_alloc(dir, cfg);
	int64_t log_start;
	int rc;

	if (!part)
		return -ENOMEM;
	rc = durable_mkdir(dir, 0755); /* a new directory's entry synced in the log dir */
	if (rc)
		goto out_free;
	rc = part_dir_hold(part); /* released once open: idle, the partition holds no directory descriptor */
	if (rc < 0)
		goto out_free;
	log_start = part_read_log_start(part);
	rc = compact_recover(part); /* before the segments are listed */
	if (!rc)
		rc = part_load_segs(part, recovery_point, log_start);
	if (rc)
		goto out_free;
	part_remove_orphans(part);
	if (part->cfg.preallocate) /* after recovery cut any zero tail off */
		seg_preallocate(part_active(part), part->cfg.segment_bytes);
	part->leo = part->hw = part_active(part)->next_offset;
	part->log_start_offset = part->segs[0]->base_offset;
	if (log_start > part->log_start_offset)
		part->log_start_offset = log_start < part->leo ? log_start : part->leo;
	part->recovery_point = recovery_point < part->leo ? recovery_point : part->leo;
	rc = part_init_epochs(part, leader_epoch);
	if (!rc)
		rc = part_load_pstate(part);
	if (!rc) /* transactions: aborted-txn index, rebuilt unless closed cleanly */
		rc = txnidx_load(part, recovery_point >= part->leo);
	if (!rc && part->recovery_point < part->leo)
		rc = part_sync_recovered(part);
	if (rc)
		goto out_free;
	part_dir_release(part);
	seg_park(part_active(part)); /* an idle partition maps nothing */
	*out = part;
	return 0;
out_free:
	part_free(part);
	return rc;
}

/*
 * Cuts a preallocated active .log back to its data before it is sealed,
 * and syncs the new length at once: start-up trusts a sealed segment's
 * file length (seg_open_sealed) once the recovery point is past it, and
 * the point may already be there.  Once per segment.bytes, with preallocate.
 */
static int part_trim_active(struct part *part)
{
	struct seg *seg = part_active(part);
	int rc = seg_trim(seg);

	if (rc == 1)
		rc = durable_fdatasync(seg->log->fd);
	return rc;
}

int part_create(const char *dir, const struct part_cfg *cfg, struct part **out)
{
	struct part *part = part_alloc(dir, cfg);
	struct seg *seg;
	int rc;

	if (!part)
		return -ENOMEM;
	rc = seg_open(dir, 0, true, part->cfg.segment_index_bytes, &seg);
	if (!rc && (rc = part_push_seg(part, seg)) != 0)
		seg_close(seg);
	if (!rc && !epochs_assign(&part->epochs, 0, 0))
		rc = -ENOMEM;
	if (!rc)
		rc = txnidx_load(part, true);
	if (rc) {
		part_free(part);
		return rc;
	}
	if (part->cfg.preallocate)
		seg_preallocate(part_active(part), part->cfg.segment_bytes);
	seg_park(part_active(part));
	*out = part;
	return 0;
}

void part_prepare_close(struct part *part)
{
	int rc = seg_trim(part_active(part)); /* the syncfs that follows makes the new length durable */

	if (rc < 0)
		log_error("log: '%s': cutting the preallocated segment back failed: %s", part->dir, strerror(-rc));
	part_write_pstate(part, "close", false);
}

int part_close(struct part *part)
{
	int rc;

	/*
	 * Not sealed: the active segment stays active, and the next start
	 * learns its max timestamp from the tail past its last index entry
	 * (recover.c) without a time-index entry (a new file, for most).
	 * A preallocated one is cut back to its data (already done, and
	 * made durable by the log dir's syncfs, after part_prepare_close).
	 */
	rc = part_trim_active(part);
	if (!rc)
		rc = part_sync(part);
	if (rc)
		log_error("log: '%s': sync at close failed: %s", part->dir, strerror(-rc));
	part_write_pstate(part, "close", true); /* nothing left after part_prepare_close() */
	part_free(part);
	return rc;
}

void part_abandon(struct part *part)
{
	part_free(part);
}

int *part_sync_mark(struct part *part)
{
	return &part->sync_mark;
}

int part_delete(struct part *part)
{
	char *dir = strdup(part->dir);
	int rc;

	if (!dir)
		return -ENOMEM;
	part_free(part);
	rc = dirdel_remove(dir);
	free(dir);
	return rc;
}

/* ---- append ---- */

struct append_plan {
	int64_t span; /* offsets taken: sum of lastOffsetDelta + 1 */
	int64_t records;
	uint32_t producers; /* batches with a producer id (an upper bound of new producers) */
};

static int append_plan(const uint8_t *blob, size_t len, struct append_plan *plan)
{
	size_t off = 0;

	plan->span = plan->records = 0;
	plan->producers = 0;
	if (len == 0 || len > INT32_MAX)
		return len ? -EMSGSIZE : -EBADMSG;
	while (off < len) {
		struct batch_hdr h;

		if (records_batch_parse(blob + off, len - off, &h))
			return -EBADMSG;
		plan->span += (int64_t)h.last_offset_delta + 1;
		plan->records += h.record_count;
		plan->producers += h.producer_id >= 0;
		off += (size_t)h.size;
	}
	return 0;
}

static int part_roll(struct part *part)
{
	struct seg *seg;
	int rc;

	seg_seal(part_active(part));
	rc = part_trim_active(part);
	if (!rc)
		rc = seg_open(part->dir, part->leo, true, part->cfg.segment_index_bytes, &seg);
	if (rc)
		return rc;
	if (part->cfg.preallocate)
		seg_preallocate(seg, part->cfg.segment_bytes);
	rc = part_push_seg(part, seg);
	if (rc) {
		seg_unlink(seg);
		seg_close(seg);
		return rc;
	}
	pthread_mutex_lock(&part->mu);
	part->dir_dirty = true;
	if (part->segs[part->nsegs - 2]->base_offset < part->idx_from)
		part->idx_from = part->segs[part->nsegs - 2]->base_offset; /* sealed: its indexes are final */
	pthread_mutex_unlock(&part->mu);
	seg_retire(part->segs[part->nsegs - 2]); /* no longer the flusher's: it syncs sealed files by name */
	part_write_pstate(part, "roll", true);   /* its directory fsync makes the new segment durable too */
	part_draw_jitter(part);
	log_debug(LOGC_LOG, "log", "'%s': rolled new segment at offset %" PRId64, part->dir, part->leo);
	return 0;
}

/*
 * Rolls before an append that would overflow the segment: segment.bytes,
 * full indexes, or offsets whose distance from the segment base would not
 * fit the indexes' int32 (span counts real offsets: validation made every
 * batch's lastOffsetDelta its record count - 1).  segment.ms counts broker
 * time from the segment's first append, never producer timestamps, so a
 * producer cannot force a roll per request by sending times far apart.
 */
static int part_maybe_roll(struct part *part, size_t len, int64_t span, int64_t now_ms, bool *rolled)
{
	const struct seg *seg = part_active(part);
	const struct part_cfg *cfg = &part->cfg;
	bool roll;

	if (span - 1 > INT32_MAX)
		return -EMSGSIZE; /* cannot fit even an empty segment */
	if (seg->size == 0)
		return 0;
	roll = seg->size + (int64_t)len > cfg->segment_bytes ||
	       (seg->roll_ts >= 0 && now_ms - seg->roll_ts > cfg->segment_ms - part->roll_jitter_ms) ||
	       offidx_full(&seg->oi) || timeidx_full(&seg->ti) || part->leo + span - 1 - seg->base_offset > INT32_MAX;
	if (!roll)
		return 0;
	*rolled = true;
	return part_roll(part);
}

/* Rewrites offsets, epochs and (if configured) timestamps in the blob. */
static void part_stamp(struct part *part, uint8_t *blob, size_t len, int64_t now_ms)
{
	int64_t next = part->leo;
	size_t off = 0;

	while (off < len) {
		struct batch_hdr h;

		if (records_batch_parse(blob + off, len - off, &h))
			break; /* cannot happen: append_plan parsed it */
		records_set_base_offset(blob + off, next);
		records_set_leader_epoch(blob + off, part->leader_epoch);
		if (part->cfg.log_append_time)
			records_set_log_append_time(blob + off, (size_t)h.size, now_ms);
		next += (int64_t)h.last_offset_delta + 1;
		off += (size_t)h.size;
	}
}

/* Records the appended (stamped) batches in the producer state; room was reserved. */
static void part_apply_pstate(struct part *part, const uint8_t *blob, size_t len)
{
	size_t off = 0;

	while (off < len) {
		struct batch_hdr h;
		int rc = records_batch_parse(blob + off, len - off, &h);

		if (!rc)
			txnidx_on_batch(part, blob + off, &h); /* transactions: ABORT markers */
		if (!rc)
			rc = pstate_apply(&part->pstate, &h);
		assert(rc == 0); /* parsed by append_plan, room reserved */
		part_apply_marker(part, blob + off, &h);
		if (rc)
			break;
		off += (size_t)h.size;
	}
}

int part_append(struct part *part, uint8_t *blob, size_t len, int64_t now_ms, struct part_append_info *info)
{
	struct append_plan plan;
	int64_t base = part->leo;
	int rc;

	info->rolled = false;
	rc = append_plan(blob, len, &plan);
	if (!rc)
		rc = pstate_reserve(&part->pstate, plan.producers);
	if (!rc)
		rc = part_maybe_roll(part, len, plan.span, now_ms, &info->rolled);
	if (rc)
		return rc;
	part_stamp(part, blob, len, now_ms);
	rc = seg_append(part_active(part), blob, len, part->cfg.index_interval_bytes, now_ms);
	if (rc) {
		log_error("log: '%s': append at offset %" PRId64 " failed: %s", part->dir, base, strerror(-rc));
		return rc;
	}
	/* before the LEO moves: a sync that covers an ABORT marker covers its .txnindex entry */
	part_apply_pstate(part, blob, len);
	pthread_mutex_lock(&part->mu);
	part->leo = base + plan.span;
	part->unflushed += plan.records;
	part->unflushed_bytes += (int64_t)len;
	pthread_mutex_unlock(&part->mu);
	if (!part->cfg.hw_on_sync)
		part_hw_advance(part);
	info->base_offset = base;
	info->last_offset = part->leo - 1;
	info->log_append_time = part->cfg.log_append_time ? now_ms : -1;
	info->log_start_offset = part->log_start_offset;
	return 0;
}

/*
 * A leader's batches for a replica append: each parses, its CRC holds,
 * and offsets only grow from the log end (a compacted leader's batches
 * may leave gaps between them, never overlap).  *end is the offset after
 * the last batch.  0 or -EBADMSG / -ERANGE.
 */
static int append_check_replica(struct part *part, const uint8_t *blob, size_t len, int64_t *end)
{
	int64_t next = part->leo;
	size_t off = 0;

	while (off < len) {
		struct batch_hdr h;

		if (records_batch_parse(blob + off, len - off, &h) || !records_batch_crc_ok(blob + off, &h))
			return -EBADMSG;
		if (h.base_offset < next || (off == 0 && h.base_offset != next))
			return -ERANGE;
		next = h.base_offset + (int64_t)h.last_offset_delta + 1;
		off += (size_t)h.size;
	}
	*end = next;
	return 0;
}

int part_epochs_save(struct part *part)
{
	int rc = part_dir_hold(part);

	if (rc < 0)
		return rc;
	rc = epochs_write(&part->epochs, part->dir_fd);
	part_dir_release(part);
	return rc;
}

/* Records each batch's partitionLeaderEpoch in the epoch cache; writes the checkpoint if it changed. */
static int part_learn_epochs(struct part *part, const uint8_t *blob, size_t len)
{
	bool changed = false;
	size_t off = 0;

	while (off < len) {
		struct batch_hdr h;

		if (records_batch_parse(blob + off, len - off, &h))
			break; /* cannot happen: append_check_replica parsed it */
		if (h.leader_epoch >= 0)
			changed |= epochs_assign(&part->epochs, h.leader_epoch, h.base_offset);
		off += (size_t)h.size;
	}
	return changed ? part_epochs_save(part) : 0;
}

int part_append_replica(struct part *part, const uint8_t *blob, size_t len, int64_t now_ms,
			struct part_append_info *info)
{
	struct append_plan plan;
	int64_t base = part->leo, end = 0;
	int rc;

	info->rolled = false;
	rc = append_plan(blob, len, &plan);
	if (!rc)
		rc = append_check_replica(part, blob, len, &end);
	if (!rc)
		rc = pstate_reserve(&part->pstate, plan.producers);
	if (!rc)
		rc = part_maybe_roll(part, len, end - base, now_ms, &info->rolled);
	if (rc)
		return rc;
	rc = seg_append(part_active(part), blob, len, part->cfg.index_interval_bytes, now_ms);
	if (rc) {
		log_error("log: '%s': replica append at offset %" PRId64 " failed: %s", part->dir, base, strerror(-rc));
		return rc;
	}
	part_apply_pstate(part, blob, len);
	pthread_mutex_lock(&part->mu);
	part->leo = end;
	part->unflushed += plan.records;
	part->unflushed_bytes += (int64_t)len;
	pthread_mutex_unlock(&part->mu);
	if (!part->cfg.hw_on_sync)
		part_hw_advance(part);
	info->base_offset = base;
	info->last_offset = end - 1;
	info->log_append_time = -1;
	info->log_start_offset = part->log_start_offset;
	return part_learn_epochs(part, blob, len);
}

void part_restore_hw(struct part *part, int64_t hw)
{
	if (hw >= 0 && hw < part->hw)
		part->hw = part->hw_limit = hw; /* held there until replication sets its bound */
}

void part_set_hw_limit(struct part *part, int64_t limit)
{
	part->hw_limit = limit;
}

/* ---- reads ---- */

/* Index of the last segment whose base offset <= offset (0 if none). */
int part_seg_for(const struct part *part, int64_t offset)
{
	int lo = 0, hi = part->nsegs; /* first segment with base > offset */

	while (lo < hi) {
		int mid = lo + (hi - lo) / 2;

		if (part->segs[mid]->base_offset <= offset)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? lo - 1 : 0;
}

/* Finds the batch holding offset from segment i on.  1 found, 0 none, or -errno. */
static int part_find(struct part *part, int i, int64_t offset, struct seg_iter *it, struct batch_hdr *h)
{
	for (; i < part->nsegs; i++) {
		int rc = seg_find(part->segs[i], offset, it, h, part->scratch, PART_SCRATCH_BYTES);

		if (rc == -EBADMSG)
			log_error("log: '%s.log' position %" PRId64 ": %s", part->segs[i]->path, it->pos,
				  it->why ? it->why : "corrupt");
		if (rc)
			return rc;
	}
	return 0;
}

/*
 * File position where offset max_offset starts in seg (a batch boundary:
 * HW or LSO; a batch holding it is excluded), or the segment's end when
 * max_offset lies beyond it.
 */
static int part_end_pos(struct part *part, struct seg *seg, int64_t max_offset, int64_t *end)
{
	struct seg_iter it;
	struct batch_hdr h;
	int rc;

	*end = seg->size;
	if (max_offset >= seg->next_offset)
		return 0;
	rc = seg_find(seg, max_offset, &it, &h, part->scratch, PART_SCRATCH_BYTES);
	if (rc == 1)
		*end = it.pos; /* the batch holding max_offset is not served */
	return rc < 0 ? rc : 0;
}

/*
 * Like Kafka, the slice is cut by bytes, not walked batch by batch: only
 * the batch holding offset and the one at max_offset are looked at, so
 * serving a fetch reads no record data into user space.  The slice may end
 * inside a batch (clients drop a partial trailing batch), but always holds
 * the first whole batch when min_one is set (KIP-74).
 */
int part_read(struct part *part, int64_t offset, int64_t max_offset, int32_t max_bytes, bool min_one,
	      struct fslice *out)
{
	struct seg_iter it;
	struct batch_hdr h;
	int64_t end, len;
	int rc;

	out->ref = NULL;
	out->pos = out->len = 0;
	if (offset < part->log_start_offset || offset > part->leo)
		return -ERANGE;
	if (offset >= max_offset || offset == part->leo)
		return 0;
	rc = part_find(part, part_seg_for(part, offset), offset, &it, &h);
	if (rc <= 0 || records_last_offset(&h) >= max_offset)
		return rc;
	rc = part_end_pos(part, it.seg, max_offset, &end);
	if (rc < 0)
		return rc;
	len = end - it.pos < max_bytes ? end - it.pos : max_bytes;
	if (len < h.size) {
		if (!min_one)
			return 0;
		len = h.size;
	}
	rc = seg_ref(it.seg, &out->ref);
	if (rc)
		return rc;
	out->pos = it.pos;
	out->len = len;
	return 0;
}

int64_t part_read_upper(struct part *part, int64_t offset, const struct fslice *s)
{
	int64_t end = s->pos + s->len;
	struct seg *seg = NULL;
	int32_t lo = 0, hi;

	/* part_read() just took s->ref from seg->log: nothing evicted it since (segment.h) */
	for (int i = part_seg_for(part, offset); i < part->nsegs && !seg; i++)
		if (part->segs[i]->log == s->ref)
			seg = part->segs[i];
	if (!seg || seg_use(seg))
		return part->leo; /* above every offset: read_committed lists more aborted transactions, never fewer */
	hi = seg->oi.f.n;
	while (lo < hi) { /* first index entry at or after the slice's end */
		int32_t mid = lo + (hi - lo) / 2;

		if (offidx_ent(&seg->oi, mid).pos < end)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < seg->oi.f.n ? seg->base_offset + offidx_ent(&seg->oi, lo).rel + 1 : seg->next_offset;
}

int64_t part_log_start_offset(const struct part *part)
{
	return part->log_start_offset;
}
int64_t part_log_end_offset(const struct part *part)
{
	return part->leo;
}
int64_t part_high_watermark(struct part *part)
{
	return part_hw_advance(part);
}

int part_segment_count(const struct part *part)
{
	return part->nsegs;
}

int64_t part_size_bytes(const struct part *part)
{
	int64_t size = 0;

	for (int i = 0; i < part->nsegs; i++)
		size += part->segs[i]->size;
	return size;
}

/* Reads batch h at pos of segment i for the first record at or after ts: records_find_time(). */
static int part_time_in_batch(struct part *part, int i, int64_t pos, const struct batch_hdr *h, int64_t ts,
			      int64_t *offset_out, int64_t *ts_out)
{
	uint8_t *buf;
	ssize_t n;
	int rc;

	*offset_out = h->base_offset;
	*ts_out = h->max_timestamp;
	if (h->size > 64 << 20)
		return h->max_timestamp >= ts; /* the batch, not the record */
	buf = malloc((size_t)h->size);
	if (!buf)
		return -ENOMEM;
	n = seg_pread(part->segs[i], buf, (size_t)h->size, pos);
	rc = n == h->size ? records_find_time(buf, h, ts, offset_out, ts_out) : -EIO;
	free(buf);
	return rc;
}

/* May batch h hold a record at or after ts?  Its max timestamp says, unless it has none (-1). */
static bool part_time_candidate(const struct seg *seg, const struct batch_hdr *h, int64_t ts)
{
	return h->max_timestamp >= ts || (seg->ts_unknown && h->max_timestamp < 0 && !records_is_control(h));
}

/*
 * First record at or after ts in segment i, from the time index entry at
 * or below ts (the segment start if there is none, or if the segment may
 * hold batches without a max timestamp).  1 found, 0 none, -errno.
 */
static int part_time_in_seg(struct part *part, int i, int64_t ts, int64_t *offset_out, int64_t *ts_out)
{
	struct seg *seg = part->segs[i];
	int32_t rel = seg->ts_unknown || seg_use(seg) ? -1 : timeidx_lookup(&seg->ti, ts);
	int64_t from = rel < 0 ? seg->base_offset : seg->base_offset + rel;
	struct seg_iter it;
	struct batch_hdr h;
	int rc;

	if (from < part->log_start_offset)
		from = part->log_start_offset;
	rc = seg_find(seg, from, &it, &h, part->scratch, PART_SCRATCH_BYTES);
	while (rc == 1) {
		if (part_time_candidate(seg, &h, ts)) {
			rc = part_time_in_batch(part, i, it.pos, &h, ts, offset_out, ts_out);
			if (rc != 0)
				return rc;
		}
		seg_iter_skip(&it, &h);
		rc = seg_iter_next(&it, &h);
	}
	return rc;
}

int part_offset_for_time(struct part *part, int64_t ts, int64_t *offset_out, int64_t *ts_out)
{
	for (int i = 0; i < part->nsegs; i++) {
		struct seg *seg = part->segs[i];
		int rc;

		if (seg->next_offset <= part->log_start_offset)
			continue;
		rc = seg_load_stats(seg);
		if (rc < 0)
			return rc;
		if (seg->max_ts < ts && !seg->ts_unknown)
			continue;
		rc = part_time_in_seg(part, i, ts, offset_out, ts_out);
		if (rc < 0)
			return rc;
		if (rc == 1) {
			if (*offset_out < part->log_start_offset)
				*offset_out = part->log_start_offset;
			return 0;
		}
	}
	*offset_out = *ts_out = -1;
	return 0;
}

int part_max_timestamp(struct part *part, int64_t *offset_out, int64_t *ts_out)
{
	*offset_out = *ts_out = -1;
	for (int i = 0; i < part->nsegs; i++) {
		struct seg *seg = part->segs[i];

		if (seg_load_stats(seg))
			continue; /* unreadable: no timestamp known */
		if (seg->max_ts > *ts_out && seg->max_ts_offset >= part->log_start_offset) {
			*ts_out = seg->max_ts;
			*offset_out = seg->max_ts_offset;
		}
	}
	return 0;
}

int part_offsets_before(struct part *part, int64_t ts, int64_t now_ms, int64_t *out, int max)
{
	int n = part->nsegs + (part_active(part)->size > 0 ? 1 : 0), start = n - 1, count = 0, above = 0;
	int64_t hw = part_high_watermark(part);

	if (ts == -2) /* earliest */
		start = 0;
	else if (ts != -1) /* a time: the newest entry not after it */
		while (start >= 0 && (start == part->nsegs ? now_ms : seg_mtime_ms(part->segs[start])) > ts)
			start--;
	for (int i = start; i >= 0 && count < max; i--) {
		int64_t base = i == part->nsegs ? part->leo : part->segs[i]->base_offset;

		out[count++] = base > part->log_start_offset ? base : part->log_start_offset;
	}
	/* a consumer sees nothing past the high watermark: it replaces the offsets above it (Kafka) */
	while (above < count && out[above] > hw)
		above++;
	if (above) {
		memmove(out + 1, out + above, (size_t)(count - above) * sizeof(*out));
		out[0] = hw;
		count -= above - 1;
	}
	return count;
}

/* ---- leader epochs ---- */

int32_t part_leader_epoch(const struct part *part)
{
	return part->leader_epoch;
}

int part_set_leader_epoch(struct part *part, int32_t leader_epoch)
{
	part->leader_epoch = leader_epoch;
	if (!epochs_assign(&part->epochs, leader_epoch, part->leo))
		return 0;
	return part_epochs_save(part);
}

bool part_epoch_end_offset(struct part *part, int32_t epoch, int32_t *epoch_out, int64_t *end_offset_out)
{
	return epochs_end_offset(&part->epochs, epoch, part->leo, epoch_out, end_offset_out);
}

/* ---- durability ---- */

/* A sealed segment's files to sync, opened by name: sealed segments hold no descriptor for the flusher. */
struct sync_file {
	int64_t base;
	bool log, idx; /* its .log; its .index and .timeindex */
};

struct sync_set {
	struct fdref *active; /* the active segment's .log */
	struct sync_file *files;
	int n;
	int64_t *txn_bases; /* segments whose .txnindex to sync (txn_dirty) */
	int ntxn;
	int64_t leo, unflushed, unflushed_bytes, idx_from;
	uint64_t trunc_gen; /* part->trunc_gen when collected: a truncation meanwhile voids leo */
	bool dir, txn;
};

/* Index in segs of the first segment that may hold offset (or start at base). */
static int sync_first(const struct part *part, int64_t offset)
{
	int first = part->nsegs - 1;

	while (first > 0 && part->segs[first]->base_offset > offset)
		first--;
	return first;
}

/*
 * Under mu: every file that may hold data past the recovery point, plus
 * the index files of segments sealed since the last sync: a reference to
 * the active segment's .log, the names of sealed segments' files.  The
 * active segment's index files are left out: a round needs only the .log
 * durable, because recovery checks indexes against the log and rebuilds
 * them (recover.c).  They are synced once the segment is sealed (the next
 * round after a roll) and at close.  A .txnindex entry is written before
 * the LEO passes its ABORT marker, so a round whose LEO covers the marker
 * syncs the entry too: start-up trusts the files below the recovery point.
 */
static int sync_collect(struct part *part, struct sync_set *s)
{
	int from = sync_first(part, part->recovery_point), first = from, last = part->nsegs - 1;

	if (part->idx_from != INT64_MAX && sync_first(part, part->idx_from) < first)
		first = sync_first(part, part->idx_from);
	s->files = malloc((size_t)(last - first + 1) * sizeof(*s->files));
	s->txn_bases = malloc((size_t)(part->nsegs - from) * sizeof(*s->txn_bases));
	if (!s->files || !s->txn_bases)
		return -ENOMEM;
	s->active = fdref_get(part->segs[last]->log);
	for (int i = first; i < last; i++) /* a sealed segment holds data past the point if the next starts past it */
		s->files[s->n++] = (struct sync_file){ .base = part->segs[i]->base_offset,
						       .log = part->segs[i + 1]->base_offset > part->recovery_point,
						       .idx = true };
	for (int i = from; part->txn_dirty && i < part->nsegs; i++)
		s->txn_bases[s->ntxn++] = part->segs[i]->base_offset;
	s->leo = part->leo;
	s->unflushed = part->unflushed;
	s->unflushed_bytes = part->unflushed_bytes;
	s->dir = part->dir_dirty;
	s->txn = part->txn_dirty;
	s->idx_from = part->idx_from;
	s->trunc_gen = part->trunc_gen;
	part->dir_dirty = part->txn_dirty = false;
	part->idx_from = INT64_MAX;
	return 0;
}

/* fdatasyncs <base><ext> if it still exists (retention or the cleaner may have removed it meanwhile). */
static int sync_by_name(int dir_fd, int64_t base, const char *ext)
{
	char name[64];
	int fd, rc;

	snprintf(name, sizeof(name), "%020" PRId64 "%s", base, ext);
	fd = openat(dir_fd, name, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	rc = durable_fdatasync(fd);
	close(fd);
	return rc;
}

/*
 * fdatasyncs the collected files, then the directory.  The directory is
 * opened here, only when a round has more than the active .log to sync (any
 * thread: part->dir_fd is the event loop's).
 */
static int sync_files(struct part *part, struct sync_set *s)
{
	int rc = durable_fdatasync(s->active->fd), dir_fd = -1;

	if (!rc && (s->n || s->ntxn || s->dir)) {
		dir_fd = open(part->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (dir_fd < 0)
			rc = -errno;
	}
	for (int i = 0; i < s->n && !rc; i++) {
		if (s->files[i].log)
			rc = sync_by_name(dir_fd, s->files[i].base, ".log");
		if (!rc && s->files[i].idx)
			rc = sync_by_name(dir_fd, s->files[i].base, ".index");
		if (!rc && s->files[i].idx)
			rc = sync_by_name(dir_fd, s->files[i].base, ".timeindex");
	}
	for (int i = 0; i < s->ntxn && !rc; i++)
		rc = sync_by_name(dir_fd, s->txn_bases[i], TXNIDX_EXT);
	if (!rc && s->dir)
		rc = durable_fsync(dir_fd);
	if (dir_fd >= 0)
		close(dir_fd);
	return rc;
}

int part_sync(struct part *part)
{
	struct sync_set s = { .idx_from = INT64_MAX };
	int rc = 0;

	pthread_mutex_lock(&part->mu);
	if (part->recovery_point < part->leo || part->dir_dirty || part->txn_dirty || part->idx_from != INT64_MAX)
		rc = sync_collect(part, &s);
	pthread_mutex_unlock(&part->mu);
	if (!rc && s.active)
		rc = sync_files(part, &s);
	fdref_put(s.active);
	free(s.files);
	free(s.txn_bases);
	if (!s.active)
		return rc;
	pthread_mutex_lock(&part->mu);
	if (!rc && s.leo > part->recovery_point && s.trunc_gen == part->trunc_gen)
		__atomic_store_n(&part->recovery_point, s.leo, __ATOMIC_RELEASE);
	if (!rc) {
		part->unflushed -= s.unflushed;
		part->unflushed_bytes -= s.unflushed_bytes;
		part->synced_bytes += (uint64_t)s.unflushed_bytes;
	}
	if (rc) { /* what this round took is still unsynced */
		part->dir_dirty |= s.dir;
		part->txn_dirty |= s.txn;
		if (s.idx_from < part->idx_from)
			part->idx_from = s.idx_from;
	}
	pthread_mutex_unlock(&part->mu);
	return rc;
}

void part_start_writeback(struct part *part, int64_t min_bytes)
{
	struct seg *seg = part_active(part);

	if (seg->size < part->writeback_pos)
		part->writeback_pos = 0; /* rolled: a new active segment */
	if (seg->size - part->writeback_pos < min_bytes)
		return;
	if (seg->size > part->writeback_pos)
		sync_file_range(seg->log->fd, part->writeback_pos, seg->size - part->writeback_pos,
				SYNC_FILE_RANGE_WRITE);
	part->writeback_pos = seg->size;
}

int64_t part_recovery_point(const struct part *part)
{
	struct part *p = (struct part *)part;
	int64_t v;

	pthread_mutex_lock(&p->mu);
	v = p->recovery_point;
	pthread_mutex_unlock(&p->mu);
	return v;
}

void part_recovery_scanned(const struct part *part, int *segs, int64_t *bytes)
{
	*segs = part->scanned_segs;
	*bytes = part->scanned_bytes;
}

uint64_t part_synced_bytes(struct part *part)
{
	uint64_t v;

	pthread_mutex_lock(&part->mu);
	v = part->synced_bytes;
	pthread_mutex_unlock(&part->mu);
	return v;
}

int64_t part_unflushed_messages(const struct part *part)
{
	struct part *p = (struct part *)part;
	int64_t v;

	pthread_mutex_lock(&p->mu);
	v = p->unflushed;
	pthread_mutex_unlock(&p->mu);
	return v;
}
