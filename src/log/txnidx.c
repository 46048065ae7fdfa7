/*
 * txnidx.c - the aborted transaction index and the last stable offset of
 * a partition (format and rules in txnidx.h).
 *
 * Why a full rebuild after a crash rather than Kafka's "recover the
 * segments past the recovery point": an entry needs the first offset of
 * its transaction, which may lie anywhere before the marker, and entries
 * past the recovery point may be missing.  The rebuild reads only batch
 * headers (and the few bytes of control batches), so it costs one pass
 * over the headers of the partition.
 */
#include "log/txnidx.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log/part_int.h"
#include "util/durable.h"
#include "util/log.h"

#define TXNIDX_CONTROL_BYTES_MAX 4096 /* a marker batch is ~80 bytes */

static int64_t txnidx_lso_without(struct part *part, int64_t producer_id);

void txnidx_init(struct txnidx *ti)
{
	memset(ti, 0, sizeof(*ti));
}

void txnidx_release(struct txnidx *ti)
{
	free(ti->v);
	ti->v = NULL;
	ti->n = ti->cap = 0;
}

const struct txnidx *txnidx_of(struct part *part)
{
	return &part->txnidx;
}

static int txnidx_push(struct txnidx *ti, const struct txnidx_entry *e)
{
	if (ti->n == ti->cap) {
		int cap = ti->cap ? ti->cap * 2 : 16;
		struct txnidx_entry *v = realloc(ti->v, (size_t)cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		ti->v = v;
		ti->cap = cap;
	}
	ti->v[ti->n++] = *e;
	return 0;
}

static void be_put64(uint8_t *p, uint64_t v, int n)
{
	for (int i = n - 1; i >= 0; i--, v >>= 8)
		p[i] = (uint8_t)v;
}

static uint64_t be_get64(const uint8_t *p, int n)
{
	uint64_t v = 0;

	for (int i = 0; i < n; i++)
		v = v << 8 | p[i];
	return v;
}

void txnidx_entry_encode(const struct txnidx_entry *e, uint8_t *p)
{
	be_put64(p, 0, 2);
	be_put64(p + 2, (uint64_t)e->producer_id, 8);
	be_put64(p + 10, (uint64_t)e->first_offset, 8);
	be_put64(p + 18, (uint64_t)e->last_offset, 8);
	be_put64(p + 26, (uint64_t)e->last_stable_offset, 8);
}

static void txnidx_path(const struct part *part, int64_t base, char *buf, size_t cap)
{
	snprintf(buf, cap, "%s/%020" PRId64 TXNIDX_EXT, part->dir, base);
}

/*
 * Appends entries to the .txnindex of the segment with base offset base.
 * A rebuild (trunc) syncs the file at once: it happens at start-up, before
 * the recovery point is moved to the LEO.  An appended entry is synced by
 * the next part_sync (txn_dirty).
 */
static void txnidx_write(struct part *part, int64_t base, const struct txnidx_entry *v, int n, bool trunc)
{
	char name[PATH_MAX];
	uint8_t buf[TXNIDX_ENTRY_SIZE];
	int fd, rc;

	txnidx_path(part, base, name, sizeof(name));
	fd = open(name, O_WRONLY | O_CREAT | O_CLOEXEC | (trunc ? O_TRUNC : O_APPEND), 0644);
	if (fd < 0) {
		log_warn("log: '%s': cannot open: %s", name, strerror(errno));
		return;
	}
	for (int i = 0; i < n; i++) {
		txnidx_entry_encode(&v[i], buf);
		if (write(fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf)) {
			log_warn("log: '%s': write failed: %s", name, strerror(errno));
			break;
		}
	}
	if (trunc && (rc = durable_fdatasync(fd)) < 0)
		log_warn("log: '%s': sync failed: %s", name, strerror(-rc));
	close(fd);
}

/* Reads <base>.txnindex (absent: nothing).  Entries past the LEO are dropped. */
static int txnidx_read_file(struct part *part, int64_t base)
{
	char name[PATH_MAX];
	uint8_t buf[TXNIDX_ENTRY_SIZE];
	int fd, rc = 0;

	txnidx_path(part, base, name, sizeof(name));
	fd = open(name, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	while (!rc && read(fd, buf, sizeof(buf)) == (ssize_t)sizeof(buf)) {
		struct txnidx_entry e = {
			.producer_id = (int64_t)be_get64(buf + 2, 8),
			.first_offset = (int64_t)be_get64(buf + 10, 8),
			.last_offset = (int64_t)be_get64(buf + 18, 8),
			.last_stable_offset = (int64_t)be_get64(buf + 26, 8),
		};

		if (be_get64(buf, 2) != 0 || e.last_offset >= part->leo || e.first_offset > e.last_offset)
			continue;
		if (part->txnidx.n && part->txnidx.v[part->txnidx.n - 1].last_offset >= e.last_offset)
			continue;
		rc = txnidx_push(&part->txnidx, &e);
	}
	close(fd);
	return rc;
}

/* Deletes every .txnindex file whose base offset is below below (INT64_MAX: all). */
static void txnidx_unlink_files(struct part *part, int64_t below)
{
	DIR *d = opendir(part->dir);
	struct dirent *de;

	if (!d)
		return;
	while ((de = readdir(d))) {
		size_t len = strlen(de->d_name);
		int64_t base;

		if (len != 20 + strlen(TXNIDX_EXT) || strcmp(de->d_name + 20, TXNIDX_EXT))
			continue;
		base = strtoll(de->d_name, NULL, 10);
		if (base < below)
			unlinkat(dirfd(d), de->d_name, 0);
	}
	closedir(d);
}

/* ---- rebuild from the log ---- */

struct txnidx_open_txn {
	int64_t producer_id, first_offset;
};

struct txnidx_scan {
	struct txnidx_open_txn *v;
	int n, cap;
};

static struct txnidx_open_txn *txnidx_scan_find(struct txnidx_scan *sc, int64_t pid)
{
	for (int i = 0; i < sc->n; i++)
		if (sc->v[i].producer_id == pid)
			return &sc->v[i];
	return NULL;
}

static int txnidx_scan_batch(struct part *part, struct seg *seg, int64_t pos, const struct batch_hdr *h,
			     struct txnidx_scan *sc)
{
	struct txnidx_open_txn *o = txnidx_scan_find(sc, h->producer_id);
	uint8_t buf[TXNIDX_CONTROL_BYTES_MAX];
	bool commit;
	int32_t coord_epoch;

	if (h->producer_id < 0 || !records_is_transactional(h))
		return 0;
	if (!records_is_control(h)) {
		if (o)
			return 0;
		if (sc->n == sc->cap) {
			int cap = sc->cap ? sc->cap * 2 : 16;
			struct txnidx_open_txn *v = realloc(sc->v, (size_t)cap * sizeof(*v));

			if (!v)
				return -ENOMEM;
			sc->v = v;
			sc->cap = cap;
		}
		sc->v[sc->n++] = (struct txnidx_open_txn){ h->producer_id, h->base_offset };
		return 0;
	}
	if (h->size > (int64_t)sizeof(buf) || seg_pread(seg, buf, (size_t)h->size, pos) != h->size ||
	    records_control_parse(buf, h, &commit, &coord_epoch))
		commit = true; /* unreadable marker: treat as commit (logged by recovery) */
	if (!commit) {
		struct txnidx_entry e = { h->producer_id, o ? o->first_offset : h->base_offset, h->base_offset,
					  h->base_offset + 1 };
		int rc;

		for (int i = 0; i < sc->n; i++)
			if (&sc->v[i] != o && sc->v[i].first_offset < e.last_stable_offset)
				e.last_stable_offset = sc->v[i].first_offset;
		rc = txnidx_push(&part->txnidx, &e);

		if (rc)
			return rc;
	}
	if (o)
		*o = sc->v[--sc->n];
	return 0;
}

static int txnidx_rebuild(struct part *part)
{
	struct txnidx_scan sc = { 0 };
	int rc = 0;

	part->txnidx.n = 0;
	txnidx_unlink_files(part, INT64_MAX);
	for (int i = 0; !rc && i < part->nsegs; i++) {
		struct seg *seg = part->segs[i];
		struct seg_iter it;
		struct batch_hdr h;
		int first = part->txnidx.n;

		seg_iter_init(&it, seg, 0, seg->size, false, part->scratch, PART_SCRATCH_BYTES);
		while ((rc = seg_iter_next(&it, &h)) == 1) {
			rc = txnidx_scan_batch(part, seg, it.pos, &h, &sc);
			if (rc)
				break;
			seg_iter_skip(&it, &h);
		}
		if (rc == -EBADMSG)
			rc = 0; /* recovery already truncated torn tails; stop at anything else */
		if (part->txnidx.n > first)
			txnidx_write(part, seg->base_offset, part->txnidx.v + first, part->txnidx.n - first, true);
	}
	free(sc.v);
	return rc;
}

/*
 * Makes every entry's lastStableOffset a valid stop bound for
 * txnidx_collect: no later entry, and no transaction still open, starts
 * below it.  Kafka's value (what we write) already is one; files written
 * by older versions may not be, so the bound is recomputed in memory:
 * min(stored, lastOffset + 1, firstOffset of every later entry, of every
 * open transaction that started before the marker).
 */
static void txnidx_fix_bounds(struct part *part)
{
	struct txnidx *ti = &part->txnidx;
	int64_t later = INT64_MAX, open = txnidx_last_stable_offset(part);

	for (int i = ti->n - 1; i >= 0; i--) {
		struct txnidx_entry *e = &ti->v[i];

		if (e->last_offset + 1 < e->last_stable_offset)
			e->last_stable_offset = e->last_offset + 1;
		if (later < e->last_stable_offset)
			e->last_stable_offset = later;
		if (open <= e->last_offset && open < e->last_stable_offset)
			e->last_stable_offset = open;
		if (e->first_offset < later)
			later = e->first_offset;
	}
}

int txnidx_load(struct part *part, bool clean)
{
	int rc = 0;

	part->txnidx.n = 0;
	if (!clean) {
		rc = txnidx_rebuild(part);
		if (part->txnidx.n)
			log_info("log: '%s': rebuilt %d aborted transaction(s) from the log", part->dir,
				 part->txnidx.n);
	}
	for (int i = 0; clean && !rc && i < part->nsegs; i++)
		rc = txnidx_read_file(part, part->segs[i]->base_offset);
	txnidx_fix_bounds(part);
	return rc;
}

/* ---- append path ---- */

void txnidx_on_batch(struct part *part, const uint8_t *p, const struct batch_hdr *h)
{
	const struct pstate_entry *pe;
	struct txnidx_entry e;
	bool commit;
	int32_t coord_epoch;

	if (!records_is_control(h) || h->producer_id < 0)
		return;
	if (records_control_parse(p, h, &commit, &coord_epoch) || commit)
		return;
	pe = pstate_find(&part->pstate, h->producer_id);
	if (!pe || pe->txn_first_offset < 0)
		return; /* nothing open: an empty abort leaves nothing to skip */
	e = (struct txnidx_entry){ h->producer_id, pe->txn_first_offset, h->base_offset,
				   txnidx_lso_without(part, h->producer_id) };
	if (txnidx_push(&part->txnidx, &e)) {
		log_error("log: '%s': out of memory indexing an aborted transaction", part->dir);
		return;
	}
	txnidx_write(part, part_active(part)->base_offset, &e, 1, false);
	pthread_mutex_lock(&part->mu);
	part->txn_dirty = true; /* before the LEO passes the marker (part_append) */
	pthread_mutex_unlock(&part->mu);
}

void txnidx_forget(struct part *part, const int64_t *offsets, int n)
{
	struct txnidx *ti = &part->txnidx;
	int keep = 0, k = 0;

	for (int i = 0; i < ti->n; i++) {
		while (k < n && offsets[k] < ti->v[i].last_offset)
			k++;
		if (k < n && offsets[k] == ti->v[i].last_offset)
			continue;
		ti->v[keep++] = ti->v[i];
	}
	ti->n = keep;
}

void txnidx_truncate_head(struct part *part)
{
	struct txnidx *ti = &part->txnidx;
	int drop = 0;

	while (drop < ti->n && ti->v[drop].last_offset < part->log_start_offset)
		drop++;
	if (drop) {
		memmove(ti->v, ti->v + drop, (size_t)(ti->n - drop) * sizeof(*ti->v));
		ti->n -= drop;
	}
	txnidx_unlink_files(part, part->segs[0]->base_offset);
}

void txnidx_truncate_tail(struct part *part, int64_t end_offset)
{
	struct txnidx *ti = &part->txnidx;
	int64_t base = part_active(part)->base_offset;
	int n = ti->n, first;

	while (ti->n && ti->v[ti->n - 1].last_offset >= end_offset)
		ti->n--;
	if (n == ti->n)
		return;
	for (first = ti->n; first > 0 && ti->v[first - 1].last_offset >= base; first--)
		;
	if (first < ti->n) {
		txnidx_write(part, base, ti->v + first, ti->n - first, true); /* rewritten and synced */
	} else { /* none left in the active segment: no file (the directory fsync follows) */
		char name[PATH_MAX];

		txnidx_path(part, base, name, sizeof(name));
		if (unlink(name) < 0 && errno != ENOENT)
			log_warn("log: '%s': cannot unlink: %s", name, strerror(errno));
	}
}

/* ---- reads ---- */

/* min(HW, first offset of every open transaction but producer_id's); producer_id -1: all of them. */
static int64_t txnidx_lso_without(struct part *part, int64_t producer_id)
{
	const struct pstate *ps = &part->pstate;
	int64_t lso = part_hw_advance(part);

	for (uint32_t i = 0; i < ps->cap; i++) {
		const struct pstate_entry *e = &ps->slots[i];

		if (e->producer_id >= 0 && e->producer_id != producer_id && e->txn_first_offset >= 0 &&
		    e->txn_first_offset < lso)
			lso = e->txn_first_offset;
	}
	return lso;
}

int64_t txnidx_last_stable_offset(struct part *part)
{
	return txnidx_lso_without(part, -1);
}

int txnidx_collect(struct part *part, int64_t from, int64_t upper, struct txnidx_entry *out, int max)
{
	const struct txnidx *ti = &part->txnidx;
	int lo = 0, hi = ti->n, found = 0;

	while (lo < hi) { /* first entry with last_offset >= from */
		int mid = lo + (hi - lo) / 2;

		if (ti->v[mid].last_offset < from)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (int i = lo; i < ti->n; i++) {
		if (ti->v[i].first_offset < upper) {
			if (found < max)
				out[found] = ti->v[i];
			found++;
		}
		if (ti->v[i].last_stable_offset >= upper)
			break; /* no later entry starts below upper (txnidx_fix_bounds) */
	}
	return found;
}
