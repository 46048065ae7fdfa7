/*
 * pstate.c - per-partition producer state (see pstate.h): the hash table of
 * producer ids, the sequence check, expiry, and the snapshot files.
 *
 * Snapshot file <20-digit offset>.snapshot in the partition directory: the
 * state after applying every batch below <offset> (the LEO when it was
 * written: at each segment roll and at clean close).  The layout is
 * Kafka's producer snapshot version 1 (ProducerStateManager), all integers
 * big-endian:
 *
 *   off len field
 *     0   2 version              i16  1
 *     2   4 crc                  u32  CRC-32C of bytes 6 .. end of file
 *     6   4 count                i32  number of 46-byte entries that follow
 *    10  46 entry[count]:
 *           +0  8 producerId           i64
 *           +8  2 producerEpoch        i16
 *          +10  4 lastSequence         i32  of the batch; -1: the producer has no cached batch
 *          +14  8 lastOffset           i64  of the batch; -1 with no batch
 *          +22  4 offsetDelta          i32  lastOffset - firstOffset (= lastSeq - firstSeq); 0 with no batch
 *          +26  8 timestamp            i64  the batch's maxTimestamp (the entry's expiry clock)
 *          +34  4 coordinatorEpoch     i32  -1 if none
 *          +38  8 currentTxnFirstOffset i64 -1 if no open transaction
 *
 * Kafka writes one entry per producer (its last batch).  We write one entry
 * per cached batch, oldest first, so that the whole 5-batch window survives
 * a restart; consecutive entries of one producer id (same epoch) rebuild its
 * window, and the transaction fields of its last entry win.  Kafka's own
 * loader keeps the last entry per producer id, so it reads these files too.
 * The file is replaced atomically and durably (util/durable.h: <name>.tmp,
 * fsync, rename, directory fsync; partition.c removes stray .tmp files at
 * open).  A snapshot past the log end after a crash is ignored and deleted.
 */
#include "log/pstate.h"

#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/crc32c.h"
#include "util/durable.h"
#include "util/log.h"

#define SNAP_VERSION 1
#define SNAP_HDR_SIZE 10
#define SNAP_CRC_OFF 2
#define SNAP_ENTRIES_OFF 6
#define SNAP_ENTRY_SIZE 46
#define SNAP_EXT ".snapshot"
#define SNAP_BYTES_MAX (256 << 20) /* sanity bound for a file we read whole */

/* ---- hash table ---- */

void pstate_init(struct pstate *ps)
{
	memset(ps, 0, sizeof(*ps));
	ps->snap_offset = -1;
}

void pstate_release(struct pstate *ps)
{
	free(ps->slots);
	ps->slots = NULL;
	ps->cap = ps->count = 0;
}

void pstate_clear(struct pstate *ps)
{
	for (uint32_t i = 0; i < ps->cap; i++)
		ps->slots[i].producer_id = -1;
	ps->dirty = ps->dirty || ps->count > 0;
	ps->count = 0;
}

static uint32_t pstate_hash(int64_t producer_id, uint32_t cap)
{
	return (uint32_t)(((uint64_t)producer_id * 0x9E3779B97F4A7C15ULL) >> 32) & (cap - 1);
}

static struct pstate_entry *pstate_slot(const struct pstate *ps, int64_t producer_id)
{
	uint32_t i = pstate_hash(producer_id, ps->cap);

	while (ps->slots[i].producer_id != -1 && ps->slots[i].producer_id != producer_id)
		i = (i + 1) & (ps->cap - 1);
	return &ps->slots[i];
}

const struct pstate_entry *pstate_find(const struct pstate *ps, int64_t producer_id)
{
	const struct pstate_entry *e;

	if (!ps->cap || producer_id < 0)
		return NULL;
	e = pstate_slot(ps, producer_id);
	return e->producer_id == producer_id ? e : NULL;
}

/* Rehashes into a table of cap slots, keeping entries keep() accepts (all if NULL). */
static int pstate_rehash(struct pstate *ps, uint32_t cap, bool (*keep)(const struct pstate_entry *e, int64_t arg),
			 int64_t arg)
{
	struct pstate_entry *old = ps->slots;
	uint32_t old_cap = ps->cap;

	ps->slots = malloc((size_t)cap * sizeof(*ps->slots));
	if (!ps->slots) {
		ps->slots = old;
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < cap; i++)
		ps->slots[i].producer_id = -1;
	ps->cap = cap;
	ps->count = 0;
	for (uint32_t i = 0; i < old_cap; i++) {
		if (old[i].producer_id == -1 || (keep && !keep(&old[i], arg)))
			continue;
		*pstate_slot(ps, old[i].producer_id) = old[i];
		ps->count++;
	}
	free(old);
	return 0;
}

int pstate_reserve(struct pstate *ps, uint32_t n)
{
	uint32_t cap = ps->cap ? ps->cap : 16;

	while ((uint64_t)(ps->count + n) * 2 > cap)
		cap *= 2;
	return cap == ps->cap ? 0 : pstate_rehash(ps, cap, NULL, 0);
}

/* The entry of producer_id, created empty if absent.  NULL on ENOMEM. */
static struct pstate_entry *pstate_get(struct pstate *ps, int64_t producer_id)
{
	struct pstate_entry *e;

	if (pstate_reserve(ps, 1))
		return NULL;
	e = pstate_slot(ps, producer_id);
	if (e->producer_id == producer_id)
		return e;
	memset(e, 0, sizeof(*e));
	e->producer_id = producer_id;
	e->epoch = -1;
	e->coordinator_epoch = -1;
	e->txn_first_offset = -1;
	e->last_ts = -1;
	ps->count++;
	return e;
}

/* ---- sequences ---- */

int32_t pstate_last_seq(int32_t base_seq, int32_t last_offset_delta)
{
	if (base_seq > INT32_MAX - last_offset_delta)
		return last_offset_delta - (INT32_MAX - base_seq) - 1;
	return base_seq + last_offset_delta;
}

static int32_t pstate_first_seq(int32_t last_seq, int32_t delta)
{
	if (last_seq < delta)
		return INT32_MAX - (delta - last_seq) + 1;
	return last_seq - delta;
}

static bool pstate_in_sequence(int32_t last_seq, int32_t next_seq)
{
	return next_seq == (last_seq == INT32_MAX ? 0 : last_seq + 1);
}

const struct pstate_batch *pstate_entry_batch(const struct pstate_entry *e, int i)
{
	assert(i >= 0 && i < e->nbatches);
	return &e->batches[(e->head + i) % PSTATE_BATCHES_MAX];
}

enum pstate_verdict pstate_check(const struct pstate *ps, const struct batch_hdr *h, struct pstate_batch *dup)
{
	const struct pstate_entry *e = pstate_find(ps, h->producer_id);
	int32_t last_seq = pstate_last_seq(h->base_sequence, h->last_offset_delta);

	assert(h->producer_id >= 0 && !records_is_control(h));
	if (!e)
		return h->base_sequence == 0 ? PSTATE_APPEND : PSTATE_UNKNOWN_PRODUCER;
	if (h->producer_epoch < e->epoch)
		return PSTATE_STALE_EPOCH;
	if (h->producer_epoch > e->epoch || e->nbatches == 0)
		return h->base_sequence == 0 ? PSTATE_APPEND : PSTATE_OUT_OF_ORDER;
	for (int i = 0; i < e->nbatches; i++) {
		const struct pstate_batch *b = pstate_entry_batch(e, i);

		if (b->first_seq == h->base_sequence && b->last_seq == last_seq) {
			*dup = *b;
			return PSTATE_DUPLICATE;
		}
	}
	if (pstate_in_sequence(pstate_entry_batch(e, e->nbatches - 1)->last_seq, h->base_sequence))
		return PSTATE_APPEND;
	return PSTATE_OUT_OF_ORDER;
}

static void pstate_push(struct pstate_entry *e, const struct pstate_batch *b)
{
	if (e->nbatches == PSTATE_BATCHES_MAX) {
		e->head = (uint8_t)((e->head + 1) % PSTATE_BATCHES_MAX);
		e->nbatches--;
	}
	e->batches[(e->head + e->nbatches) % PSTATE_BATCHES_MAX] = *b;
	e->nbatches++;
}

int pstate_apply(struct pstate *ps, const struct batch_hdr *h)
{
	struct pstate_entry *e;

	if (h->producer_id < 0)
		return 0;
	e = pstate_get(ps, h->producer_id);
	if (!e)
		return -ENOMEM;
	if (h->producer_epoch != e->epoch) {
		e->epoch = h->producer_epoch;
		e->nbatches = e->head = 0;
	}
	e->last_ts = h->max_timestamp;
	ps->dirty = true;
	if (records_is_control(h)) {
		e->txn_first_offset = -1; /* coordinator_epoch: pstate_set_coordinator_epoch */
		return 0;
	}
	if (records_is_transactional(h) && e->txn_first_offset < 0)
		e->txn_first_offset = h->base_offset;
	pstate_push(e, &(struct pstate_batch){
			       .first_seq = h->base_sequence,
			       .last_seq = pstate_last_seq(h->base_sequence, h->last_offset_delta),
			       .first_offset = h->base_offset,
			       .last_offset = records_last_offset(h),
			       .max_ts = h->max_timestamp,
		       });
	return 0;
}

void pstate_set_coordinator_epoch(struct pstate *ps, int64_t producer_id, int32_t coordinator_epoch)
{
	const struct pstate_entry *e = pstate_find(ps, producer_id);

	if (e && e->coordinator_epoch != coordinator_epoch) {
		((struct pstate_entry *)e)->coordinator_epoch = coordinator_epoch;
		ps->dirty = true;
	}
}

/* ---- expiry and head truncation ---- */

static bool pstate_keep_unexpired(const struct pstate_entry *e, int64_t deadline_ms)
{
	return e->txn_first_offset >= 0 || e->last_ts > deadline_ms;
}

static bool pstate_keep_above(const struct pstate_entry *e, int64_t log_start)
{
	return e->nbatches > 0 && pstate_entry_batch(e, e->nbatches - 1)->last_offset >= log_start;
}

/* Drops the entries keep() rejects; returns how many. */
static int pstate_filter(struct pstate *ps, bool (*keep)(const struct pstate_entry *e, int64_t arg), int64_t arg)
{
	uint32_t before = ps->count, n = 0;

	for (uint32_t i = 0; i < ps->cap; i++)
		n += ps->slots[i].producer_id != -1 && !keep(&ps->slots[i], arg);
	if (!n)
		return 0;
	if (pstate_rehash(ps, ps->cap, keep, arg)) {
		log_warn("log: out of memory dropping %u producer(s); keeping them", n);
		return 0;
	}
	ps->dirty = true;
	return (int)(before - ps->count);
}

int pstate_expire(struct pstate *ps, int64_t now_ms, int64_t expiration_ms)
{
	return pstate_filter(ps, pstate_keep_unexpired, now_ms - expiration_ms);
}

int pstate_truncate_head(struct pstate *ps, int64_t log_start)
{
	return pstate_filter(ps, pstate_keep_above, log_start);
}

/* ---- snapshot image ---- */

static void pstate_encode_line(struct wr *w, const struct pstate_entry *e, const struct pstate_batch *b)
{
	wr_i64(w, e->producer_id);
	wr_i16(w, e->epoch);
	wr_i32(w, b ? b->last_seq : -1);
	wr_i64(w, b ? b->last_offset : -1);
	wr_i32(w, b ? (int32_t)(b->last_offset - b->first_offset) : 0);
	wr_i64(w, b ? b->max_ts : e->last_ts);
	wr_i32(w, e->coordinator_epoch);
	wr_i64(w, e->txn_first_offset);
}

int pstate_encode(const struct pstate *ps, struct wr *w)
{
	size_t start = w->len, crc_at;
	int32_t lines = 0;

	wr_i16(w, SNAP_VERSION);
	crc_at = wr_u32(w, 0);
	wr_i32(w, 0);
	for (uint32_t i = 0; i < ps->cap; i++) {
		const struct pstate_entry *e = &ps->slots[i];

		if (e->producer_id == -1)
			continue;
		if (!e->nbatches) {
			pstate_encode_line(w, e, NULL);
			lines++;
		}
		for (int j = 0; j < e->nbatches; j++, lines++)
			pstate_encode_line(w, e, pstate_entry_batch(e, j));
	}
	if (w->err)
		return w->err;
	wr_patch_i32(w, start + SNAP_ENTRIES_OFF, lines);
	wr_patch_u32(w, crc_at, crc32c(w->buf + start + SNAP_ENTRIES_OFF, w->len - start - SNAP_ENTRIES_OFF));
	assert(w->len - start == SNAP_HDR_SIZE + (size_t)lines * SNAP_ENTRY_SIZE);
	return 0;
}

/* Applies one decoded entry line; prev is the producer id of the line before. */
static int pstate_decode_line(struct pstate *ps, struct rd *r, int64_t *prev)
{
	int64_t pid = rd_i64(r);
	int16_t epoch = rd_i16(r);
	int32_t last_seq = rd_i32(r);
	int64_t last_offset = rd_i64(r);
	int32_t delta = rd_i32(r);
	int64_t ts = rd_i64(r);
	int32_t coord_epoch = rd_i32(r);
	int64_t txn_first = rd_i64(r);
	struct pstate_entry *e;

	if (pid < 0 || epoch < 0 || delta < 0 || (last_seq >= 0 && last_offset < delta))
		return -EBADMSG;
	e = pstate_get(ps, pid);
	if (!e)
		return -ENOMEM;
	if (pid != *prev || epoch != e->epoch) {
		e->epoch = epoch;
		e->nbatches = e->head = 0;
	}
	*prev = pid;
	e->last_ts = ts;
	e->coordinator_epoch = coord_epoch;
	e->txn_first_offset = txn_first;
	if (last_seq >= 0)
		pstate_push(e, &(struct pstate_batch){
				       .first_seq = pstate_first_seq(last_seq, delta),
				       .last_seq = last_seq,
				       .first_offset = last_offset - delta,
				       .last_offset = last_offset,
				       .max_ts = ts,
			       });
	return 0;
}

int pstate_decode(struct pstate *ps, const uint8_t *p, size_t len)
{
	struct rd r;
	int32_t n;
	int64_t prev = -1;
	int rc = 0;

	pstate_clear(ps);
	rd_init(&r, p, len);
	if (rd_i16(&r) != SNAP_VERSION || r.err)
		return -EBADMSG;
	if (rd_u32(&r) != crc32c(p + SNAP_ENTRIES_OFF, len - SNAP_ENTRIES_OFF) || r.err)
		return -EBADMSG;
	n = rd_i32(&r);
	if (r.err || n < 0 || (size_t)n * SNAP_ENTRY_SIZE != rd_left(&r))
		return -EBADMSG;
	for (int32_t i = 0; i < n && !rc; i++)
		rc = pstate_decode_line(ps, &r, &prev);
	if (rc || r.err) {
		pstate_clear(ps);
		return rc ? rc : -EBADMSG;
	}
	return 0;
}

/* ---- snapshot files ---- */

/* Parses "<20 digits>.snapshot"; true with *offset set if name matches. */
static bool snap_name_parse(const char *name, int64_t *offset)
{
	int64_t v = 0;

	if (strlen(name) != 20 + strlen(SNAP_EXT) || strcmp(name + 20, SNAP_EXT))
		return false;
	for (int i = 0; i < 20; i++) {
		if (name[i] < '0' || name[i] > '9' || v > (INT64_MAX - 9) / 10)
			return false;
		v = v * 10 + (name[i] - '0');
	}
	*offset = v;
	return true;
}

static int cmp_desc_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x < y) - (x > y);
}

/* Offsets of the snapshot files in dir, newest first.  OUT *offs (caller frees). */
static int snap_list(const char *dir, int64_t **offs, int *n)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int64_t *v = NULL, off;
	int cap = 0, rc = 0;

	*n = 0;
	*offs = NULL;
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		if (!snap_name_parse(de->d_name, &off))
			continue;
		if (*n == cap) {
			int64_t *nv = realloc(v, (size_t)(cap = cap ? cap * 2 : 8) * sizeof(*nv));

			if (!nv) {
				rc = -ENOMEM;
				break;
			}
			v = nv;
		}
		v[(*n)++] = off;
	}
	closedir(d);
	if (*n)
		qsort(v, (size_t)*n, sizeof(*v), cmp_desc_i64);
	*offs = v;
	return rc;
}

static void snap_name(char *buf, size_t n, int64_t offset, const char *suffix)
{
	snprintf(buf, n, "%020" PRId64 SNAP_EXT "%s", offset, suffix);
}

static void snap_unlink(int dir_fd, const char *dir, int64_t offset, const char *why)
{
	char name[64];

	snap_name(name, sizeof(name), offset, "");
	log_debug(LOGC_LOG, "log", "'%s': deleting producer snapshot '%s' (%s)", dir, name, why);
	if (unlinkat(dir_fd, name, 0) < 0 && errno != ENOENT)
		log_warn("log: '%s': cannot delete '%s': %s", dir, name, strerror(errno));
}

int pstate_snapshot_write(struct pstate *ps, int dir_fd, const char *dir, int64_t offset, bool sync)
{
	char name[64];
	struct wr w;
	int64_t *offs;
	int n, rc;

	assert(offset >= 0);
	wr_init(&w);
	rc = pstate_encode(ps, &w);
	snap_name(name, sizeof(name), offset, "");
	if (!rc) /* atomic, and with sync durable: a crash leaves the old snapshots or this one */
		rc = sync ? durable_replace(dir_fd, name, w.buf, w.len)
			  : durable_replace_unsynced(dir_fd, name, w.buf, w.len);
	wr_release(&w);
	if (rc)
		return rc;
	ps->snap_offset = offset;
	ps->dirty = false;
	if (snap_list(dir, &offs, &n) == 0)
		for (int i = PSTATE_SNAPSHOTS_KEPT; i < n; i++)
			snap_unlink(dir_fd, dir, offs[i], "superseded");
	free(offs);
	return 0;
}

/* Reads and decodes dir/<offset>.snapshot into ps. */
static int snap_read(struct pstate *ps, int dir_fd, int64_t offset)
{
	char name[64];
	struct stat st;
	uint8_t *buf;
	int fd, rc = 0;

	snap_name(name, sizeof(name), offset, "");
	fd = openat(dir_fd, name, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || st.st_size > SNAP_BYTES_MAX) {
		close(fd);
		return -EBADMSG;
	}
	buf = malloc((size_t)st.st_size + 1);
	if (!buf) {
		close(fd);
		return -ENOMEM;
	}
	if (pread(fd, buf, (size_t)st.st_size, 0) != (ssize_t)st.st_size)
		rc = -EBADMSG;
	close(fd);
	if (!rc)
		rc = pstate_decode(ps, buf, (size_t)st.st_size);
	free(buf);
	return rc;
}

int pstate_snapshot_load(struct pstate *ps, int dir_fd, const char *dir, int64_t max_offset, int64_t *offset)
{
	int64_t *offs;
	int n, rc;

	*offset = -1;
	pstate_clear(ps);
	rc = snap_list(dir, &offs, &n);
	for (int i = 0; !rc && i < n && *offset < 0; i++) {
		if (offs[i] > max_offset) {
			snap_unlink(dir_fd, dir, offs[i], "beyond the log end");
			continue;
		}
		rc = snap_read(ps, dir_fd, offs[i]);
		if (rc == 0) {
			*offset = offs[i];
		} else if (rc != -ENOMEM) {
			log_warn("log: '%s': producer snapshot at offset %" PRId64 " is unreadable (%s), ignoring it",
				 dir, offs[i], rc == -EBADMSG ? "bad size or CRC" : strerror(-rc));
			snap_unlink(dir_fd, dir, offs[i], "corrupt");
			rc = 0;
		}
	}
	free(offs);
	ps->snap_offset = *offset;
	ps->dirty = false;
	return rc;
}

void pstate_snapshot_delete_below(struct pstate *ps, int dir_fd, const char *dir, int64_t offset)
{
	int64_t *offs;
	int n;

	if (ps->snap_offset < offset)
		ps->snap_offset = -1;

	if (snap_list(dir, &offs, &n) == 0)
		for (int i = 0; i < n; i++)
			if (offs[i] < offset)
				snap_unlink(dir_fd, dir, offs[i], "below the log start");
	free(offs);
}
