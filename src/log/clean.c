/*
 * clean.c - log compaction: the offset map and the rewrite of one
 * segment's batches (contract in clean.h).
 *
 * The map is one flat array of slots {128-bit key hash, offset}, open
 * addressing with linear probing, sized once from the byte budget as
 * Kafka's SkimpyOffsetMap is.  A slot stores its offset + 1, 0 marking a
 * free slot (log offsets are >= 0), so the array is an anonymous mapping
 * whose untouched pages are free slots: an idle broker's map costs no
 * memory, and a clear gives the pages back (MADV_DONTNEED) instead of
 * writing every slot.  Keys are never stored, only their hash: two keys
 * whose 128-bit hashes collide would share a slot, which is why the hash
 * is wide (Kafka takes the same risk with MD5).
 *
 * The rewrite reads each batch's records with records_foreach_body() (after
 * decompressing the body if needed) and copies the bytes of every kept
 * record, found by walking the records' length prefixes alongside, so a
 * kept record is byte for byte what the producer wrote (headers included).
 */
#include "log/clean.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "proto/codec.h"

struct clean_slot {
	uint64_t h1, h2;
	int64_t offset1; /* offset + 1; 0: free */
};

struct clean_map {
	struct clean_slot *slots; /* nslots, owned */
	size_t nslots;
	size_t max_keys; /* nslots * load factor, < nslots */
	size_t count;
	int64_t latest_offset; /* of the last put, -1 none */
};

_Static_assert(sizeof(struct clean_slot) == CLEAN_SLOT_BYTES, "slot size");

/* A 64-bit finaliser with full avalanche (splitmix64's). */
static uint64_t clean_mix(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	x ^= x >> 31;
	return x;
}

/* One 64-bit lane of the key hash: every 8-byte word mixed into the state in turn. */
static uint64_t clean_hash_lane(const uint8_t *p, size_t len, uint64_t seed)
{
	uint64_t h = clean_mix(seed ^ ((uint64_t)len * 0x9e3779b97f4a7c15ULL));
	uint64_t w;

	for (; len >= 8; p += 8, len -= 8) {
		memcpy(&w, p, 8);
		h = clean_mix((h ^ w) * 0xff51afd7ed558ccdULL + seed);
	}
	w = 0;
	if (len)
		memcpy(&w, p, len);
	return clean_mix((h ^ w ^ ((uint64_t)len << 56)) * 0xc4ceb9fe1a85ec53ULL + seed);
}

static void clean_hash(const uint8_t *key, size_t len, uint64_t *h1, uint64_t *h2)
{
	*h1 = clean_hash_lane(key, len, 0x243f6a8885a308d3ULL);
	*h2 = clean_hash_lane(key, len, 0x13198a2e03707344ULL);
}

int clean_map_new(size_t buffer_bytes, double load_factor, struct clean_map **out)
{
	struct clean_map *map;
	size_t nslots = buffer_bytes / CLEAN_SLOT_BYTES;
	size_t max_keys = (size_t)((double)nslots * load_factor);

	if (!(load_factor > 0 && load_factor < 1) || max_keys < 1 || max_keys >= nslots)
		return -EINVAL;
	map = calloc(1, sizeof(*map));
	if (!map)
		return -ENOMEM;
	map->slots =
		mmap(NULL, nslots * sizeof(*map->slots), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (map->slots == MAP_FAILED) {
		free(map);
		return -ENOMEM;
	}
	map->nslots = nslots;
	map->max_keys = max_keys;
	map->latest_offset = -1;
	*out = map;
	return 0;
}

void clean_map_free(struct clean_map *map)
{
	if (!map)
		return;
	munmap(map->slots, map->nslots * sizeof(*map->slots));
	map->slots = NULL;
	free(map);
}

void clean_map_clear(struct clean_map *map)
{
	if (map->count && madvise(map->slots, map->nslots * sizeof(*map->slots), MADV_DONTNEED) < 0)
		memset(map->slots, 0, map->nslots * sizeof(*map->slots)); /* cannot happen for an anonymous mapping */
	map->count = 0;
	map->latest_offset = -1;
}

/*
 * The slot of the key hashed to h1, h2: its own, or the free one where it
 * would go (there is always a free slot: max_keys < nslots).
 */
static struct clean_slot *clean_map_find(const struct clean_map *map, uint64_t h1, uint64_t h2)
{
	for (size_t i = (size_t)(h1 % map->nslots);; i = i + 1 == map->nslots ? 0 : i + 1) {
		struct clean_slot *s = &map->slots[i];

		if (!s->offset1 || (s->h1 == h1 && s->h2 == h2))
			return s;
	}
}

int clean_map_put(struct clean_map *map, const uint8_t *key, size_t key_len, int64_t offset)
{
	uint64_t h1, h2;
	struct clean_slot *s;

	clean_hash(key, key_len, &h1, &h2);
	s = clean_map_find(map, h1, h2);
	if (!s->offset1) {
		if (map->count >= map->max_keys)
			return -ENOSPC;
		map->count++;
		s->h1 = h1;
		s->h2 = h2;
	}
	s->offset1 = offset + 1;
	map->latest_offset = offset;
	return 0;
}

int64_t clean_map_get(const struct clean_map *map, const uint8_t *key, size_t key_len)
{
	uint64_t h1, h2;

	clean_hash(key, key_len, &h1, &h2);
	return clean_map_find(map, h1, h2)->offset1 - 1;
}

int64_t clean_map_latest_offset(const struct clean_map *map)
{
	return map->latest_offset;
}

size_t clean_map_size(const struct clean_map *map)
{
	return map->count;
}

size_t clean_map_max_keys(const struct clean_map *map)
{
	return map->max_keys;
}

/* ---- reading batches ---- */

/* The batch at p + off (of len) into *h, whole and with a good CRC; 0 or -EBADMSG. */
static int clean_batch_next(const uint8_t *p, size_t len, size_t off, struct batch_hdr *h)
{
	if (records_batch_parse(p + off, len - off, h) || !records_batch_crc_ok(p + off, h))
		return -EBADMSG;
	return 0;
}

static bool clean_is_aborted(const struct clean_aborted *ab, const struct batch_hdr *h)
{
	if (!records_is_transactional(h) || records_is_control(h))
		return false;
	for (int i = 0; i < ab->n; i++)
		if (ab->v[i].producer_id == h->producer_id && ab->v[i].first_offset <= h->base_offset &&
		    h->base_offset <= ab->v[i].last_offset)
			return true;
	return false;
}

/*
 * The records section of batch p (header h): in place if uncompressed,
 * else decompressed into plain.  0, -EBADMSG, -EFBIG or -ENOMEM.
 */
static int clean_body(const uint8_t *p, const struct batch_hdr *h, size_t max_bytes, struct wr *plain,
		      const uint8_t **body, size_t *body_len)
{
	int codec = h->attributes & RECORDS_ATTR_CODEC_MASK;
	int rc;

	*body = p + RECORDS_HDR_SIZE;
	*body_len = (size_t)h->size - RECORDS_HDR_SIZE;
	if (codec == CODEC_NONE)
		return 0;
	if (codec > CODEC_MAX)
		return -EBADMSG;
	rc = codec_decompress(codec, *body, *body_len, plain, max_bytes);
	if (rc == -EINVAL)
		rc = -EBADMSG;
	*body = plain->buf;
	*body_len = plain->len;
	return rc;
}

/* Calls fn for each record of batch p (h), decompressing it first if needed. */
static int clean_foreach(const uint8_t *p, const struct batch_hdr *h, size_t max_bytes, records_fn *fn, void *arg)
{
	struct wr plain;
	const uint8_t *body;
	size_t body_len;
	int rc;

	wr_init(&plain);
	rc = clean_body(p, h, max_bytes, &plain, &body, &body_len);
	if (!rc)
		rc = records_foreach_body(body, body_len, h, fn, arg);
	wr_release(&plain);
	return rc;
}

static bool clean_offset_ok(const struct batch_hdr *h, const struct record *rec)
{
	return rec->offset >= h->base_offset && rec->offset <= records_last_offset(h);
}

/* ---- the offset map ---- */

struct clean_build {
	struct clean_map *map;
	const struct batch_hdr *h;
	int64_t start_offset;
};

static int clean_build_record(void *arg, const struct record *rec)
{
	struct clean_build *b = arg;

	if (!clean_offset_ok(b->h, rec))
		return -EBADMSG;
	if (rec->key.len < 0 || rec->offset < b->start_offset)
		return 0;
	return clean_map_put(b->map, rec->key.p, (size_t)rec->key.len, rec->offset) ? 1 : 0;
}

int clean_map_build(struct clean_map *map, const uint8_t *p, size_t len, int64_t start_offset,
		    const struct clean_aborted *aborted, size_t max_records_bytes)
{
	struct clean_build b = { .map = map, .start_offset = start_offset };
	struct batch_hdr h;
	int rc = 0;

	for (size_t off = 0; !rc && off < len; off += (size_t)h.size) {
		rc = clean_batch_next(p, len, off, &h);
		if (rc)
			break;
		if (records_is_control(&h) || clean_is_aborted(aborted, &h) || records_last_offset(&h) < start_offset)
			continue;
		b.h = &h;
		rc = clean_foreach(p + off, &h, max_records_bytes, clean_build_record, &b);
	}
	return rc == -EFBIG ? -EBADMSG : rc;
}

int clean_seg_read(struct seg *seg, struct wr *out)
{
	size_t n = (size_t)seg->size, done = 0;
	uint8_t *dst = wr_reserve(out, n);

	if (!dst && n)
		return -ENOMEM;
	while (done < n) {
		ssize_t got = pread(seg->log->fd, dst + done, n - done, (off_t)done);

		if (got <= 0) {
			out->len -= n;
			return got < 0 ? -errno : -EBADMSG; /* shorter than its size: truncated */
		}
		done += (size_t)got;
	}
	return 0;
}

int clean_map_build_segs(struct clean_map *map, struct seg *const *segs, int n, int64_t start_offset,
			 const struct clean_aborted *aborted, size_t max_records_bytes)
{
	struct wr buf;
	int rc = 0;

	wr_init(&buf);
	for (int i = 0; !rc && i < n; i++) {
		buf.len = 0;
		rc = clean_seg_read(segs[i], &buf);
		if (!rc)
			rc = clean_map_build(map, buf.buf, buf.len, start_offset, aborted, max_records_bytes);
	}
	wr_release(&buf);
	return rc;
}

/* ---- the rewrite ---- */

struct clean_batch {
	const struct clean_opts *o;
	const struct batch_hdr *h;
	bool aborted;
	struct rd raw;  /* the records' bytes, walked alongside records_foreach_body */
	struct wr kept; /* bytes of the kept records */
	int32_t nkept;  /* their number */
	int64_t max_ts; /* and largest timestamp */
};

static bool clean_keep(const struct clean_batch *b, const struct record *rec)
{
	const struct clean_map *map = b->o->map;

	if (b->aborted)
		return false;
	if (rec->key.len < 0 || rec->offset >= b->o->covered_end)
		return true;
	if (rec->offset < clean_map_get(map, rec->key.p, (size_t)rec->key.len))
		return false;
	/* maxTimestamp -1 (stored before Produce set it): age unknown, the tombstone stays */
	if (rec->value.len >= 0 || b->h->max_timestamp < 0)
		return true;
	if (b->h->max_timestamp < b->o->delete_horizon_ms)
		return false;
	if (b->o->tombstone_ts_min && b->h->max_timestamp < *b->o->tombstone_ts_min)
		*b->o->tombstone_ts_min = b->h->max_timestamp;
	return true;
}

static int clean_rewrite_record(void *arg, const struct record *rec)
{
	struct clean_batch *b = arg;
	const uint8_t *start = b->raw.p;
	int32_t len = rd_varint(&b->raw); /* records_foreach_body checked the length */

	rd_skip(&b->raw, (size_t)len);
	if (!clean_offset_ok(b->h, rec))
		return -EBADMSG;
	if (!clean_keep(b, rec))
		return 0;
	wr_raw(&b->kept, start, (size_t)(b->raw.p - start));
	if (b->nkept++ == 0 || rec->timestamp > b->max_ts)
		b->max_ts = rec->timestamp;
	return b->kept.err;
}

/* The records of batch p (h) that stay, into b->kept. */
static int clean_rewrite_records(struct clean_batch *b, const uint8_t *p)
{
	struct wr plain;
	const uint8_t *body;
	size_t body_len;
	int rc;

	wr_init(&plain);
	rc = clean_body(p, b->h, b->o->max_records_bytes, &plain, &body, &body_len);
	if (!rc) {
		rd_init(&b->raw, body, body_len);
		rc = records_foreach_body(body, body_len, b->h, clean_rewrite_record, b);
	}
	wr_release(&plain);
	return rc;
}

/*
 * Appends batch p (h) with only b's kept records: header copied, records
 * compressed with the batch's codec (none for an empty batch), then
 * batchLength, recordCount, maxTimestamp and the CRC set.
 */
static int clean_batch_rebuild(const struct clean_batch *b, const uint8_t *p, struct wr *out)
{
	const struct batch_hdr *h = b->h;
	int codec = b->nkept ? h->attributes & RECORDS_ATTR_CODEC_MASK : CODEC_NONE;
	bool lat = h->attributes & RECORDS_ATTR_LOG_APPEND_TIME;
	size_t start = out->len;
	int rc = 0;

	wr_raw(out, p, RECORDS_HDR_SIZE);
	if (codec != CODEC_NONE)
		rc = codec_compress(codec, CODEC_LEVEL_DEFAULT, b->kept.buf, b->kept.len, out);
	else
		wr_raw(out, b->kept.buf, b->kept.len);
	if (!rc)
		rc = out->err;
	if (!rc && out->len - start - RECORDS_LOG_OVERHEAD > INT32_MAX)
		rc = -EMSGSIZE;
	if (rc) {
		out->len = start;
		return rc;
	}
	wr_patch_i32(out, start + 8, (int32_t)(out->len - start - RECORDS_LOG_OVERHEAD));
	wr_patch_i32(out, start + RECORDS_HDR_SIZE - 4, b->nkept);
	out->buf[start + RECORDS_ATTR_OFF + 1] &= (uint8_t)~RECORDS_ATTR_CODEC_MASK;
	out->buf[start + RECORDS_ATTR_OFF + 1] |= (uint8_t)codec;
	records_set_max_timestamp(out->buf + start, out->len - start, lat || !b->nkept ? h->max_timestamp : b->max_ts);
	return 0;
}

static bool clean_producer_last(const struct clean_opts *o, const struct batch_hdr *h)
{
	return h->producer_id >= 0 && o->producer_last && o->producer_last(o->arg, h);
}

/* Appends what remains of batch p (h) to out (possibly nothing). */
static int clean_batch(const struct clean_opts *o, const uint8_t *p, const struct batch_hdr *h, struct wr *out)
{
	struct clean_batch b = { .o = o, .h = h };
	bool keep_empty;
	int rc;

	if (records_is_control(h)) {
		if (!clean_producer_last(o, h) && o->marker_discardable && o->marker_discardable(o->arg, h))
			return 0;
		wr_raw(out, p, (size_t)h->size);
		return out->err;
	}
	b.aborted = clean_is_aborted(&o->aborted, h);
	wr_init(&b.kept);
	rc = clean_rewrite_records(&b, p);
	if (rc)
		goto out_release;
	keep_empty = b.nkept == 0 && clean_producer_last(o, h);
	if ((b.nkept > 0 || keep_empty) && o->kept && (h->attributes & RECORDS_ATTR_TRANSACTIONAL))
		o->kept(o->arg, h);
	if (b.nkept == h->record_count && b.nkept > 0) {
		wr_raw(out, p, (size_t)h->size);
		rc = out->err;
	} else if (b.nkept > 0 || keep_empty) {
		rc = clean_batch_rebuild(&b, p, out);
	}
out_release:
	wr_release(&b.kept);
	return rc;
}

int clean_segment(const struct clean_opts *o, const uint8_t *p, size_t len, struct wr *out)
{
	size_t start = out->len;
	struct batch_hdr h;
	int rc = 0;

	for (size_t off = 0; off < len; off += (size_t)h.size) {
		rc = clean_batch_next(p, len, off, &h);
		if (!rc)
			rc = clean_batch(o, p + off, &h, out);
		if (rc)
			break;
	}
	if (rc == -EFBIG)
		rc = -EBADMSG;
	if (rc)
		out->len = start;
	return rc;
}
