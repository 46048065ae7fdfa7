/*
 * msgset.c - legacy message sets (magic 0 and 1): parsing with CRC checks,
 * conversion to one v2 batch on produce, and building from v2 batches on
 * fetch (formats in msgset.h).
 *
 * Compression goes through proto/codec.h; the only codec detail handled
 * here is the LZ4 frame header checksum of magic 0, a framing quirk of the
 * legacy format rather than of the codec.
 */
#include "proto/msgset.h"

#include <errno.h>
#include <isa-l/crc.h>
#include <stdlib.h>
#include <string.h>

#include "proto/codec.h"

#define MSG_HDR_V0 14 /* crc, magic, attributes, key and value lengths */
#define MSG_ATTR_LOG_APPEND_TIME 0x08
#define MSGSET_INFLATE_MAX (64 << 20) /* a batch's records, decompressed */

/* CRC-32 (IEEE 802.3, zlib's) of the legacy formats. */
static uint32_t msg_crc(const uint8_t *p, size_t len)
{
	return crc32_gzip_refl(0, p, len);
}

struct msg {
	int64_t offset;
	int8_t magic;
	int8_t attributes;
	int64_t timestamp; /* -1 for magic 0 */
	struct bytes key, value;
};

/* Reads one whole message with its CRC checked.  0, -EBADMSG or -EINVAL (a v2 batch). */
static int msg_read(struct rd *r, struct msg *m)
{
	int32_t size, klen, vlen;
	uint32_t crc;
	struct bytes body;
	struct rd b;

	m->offset = rd_i64(r);
	size = rd_i32(r);
	if (r->err || size < MSG_HDR_V0 || !rd_view(r, (size_t)size, &body))
		return -EBADMSG;
	rd_init(&b, body.p, (size_t)body.len);
	crc = rd_u32(&b);
	m->magic = rd_i8(&b);
	if (m->magic == 2)
		return -EINVAL;
	if ((m->magic != 0 && m->magic != 1) || crc != msg_crc(body.p + 4, (size_t)body.len - 4))
		return -EBADMSG;
	m->attributes = rd_i8(&b);
	m->timestamp = m->magic == 1 ? rd_i64(&b) : -1;
	m->key = (struct bytes){ NULL, -1 };
	m->value = (struct bytes){ NULL, -1 };
	klen = rd_i32(&b);
	if (klen >= 0)
		rd_view(&b, (size_t)klen, &m->key);
	vlen = rd_i32(&b);
	if (vlen >= 0)
		rd_view(&b, (size_t)vlen, &m->value);
	return b.err || rd_left(&b) ? -EBADMSG : 0;
}

bool msgset_is_legacy(const uint8_t *p, size_t len)
{
	return len > RECORDS_MAGIC_OFF && (p[RECORDS_MAGIC_OFF] == 0 || p[RECORDS_MAGIC_OFF] == 1);
}

/* ---- LZ4 frame header checksum (magic 0) ---- */

/* xxHash32 (seed 0) of fewer than 16 bytes: the LZ4 frame header checksum. */
static uint32_t lz4_hdr_hash(const uint8_t *p, size_t len)
{
	static const uint32_t P1 = 2654435761U, P2 = 2246822519U, P3 = 3266489917U, P4 = 668265263U, P5 = 374761393U;
	uint32_t h = P5 + (uint32_t)len;
	size_t i = 0;

	for (; i + 4 <= len; i += 4) {
		uint32_t v =
			(uint32_t)p[i] | (uint32_t)p[i + 1] << 8 | (uint32_t)p[i + 2] << 16 | (uint32_t)p[i + 3] << 24;

		h += v * P3;
		h = ((h << 17) | (h >> 15)) * P4;
	}
	for (; i < len; i++) {
		h += p[i] * P5;
		h = ((h << 11) | (h >> 21)) * P1;
	}
	h ^= h >> 15;
	h *= P2;
	h ^= h >> 13;
	h *= P3;
	h ^= h >> 16;
	return h;
}

/*
 * Rewrites the header checksum byte of the LZ4 frame at p: computed over
 * the frame descriptor only (the standard, broken = false) or over the
 * magic number and the descriptor (magic 0's framing, broken = true).
 * Frames too short or without the LZ4 magic are left alone.
 */
static void lz4_fix_hdr(uint8_t *p, size_t len, bool broken)
{
	size_t hc;

	if (len < 7 || p[0] != 0x04 || p[1] != 0x22 || p[2] != 0x4d || p[3] != 0x18)
		return;
	hc = 6 + ((p[4] & 0x08) ? 8 : 0) + ((p[4] & 0x01) ? 4 : 0); /* content size, dictionary id */
	if (hc >= len)
		return;
	p[hc] = (uint8_t)(lz4_hdr_hash(broken ? p : p + 4, broken ? hc : hc - 4) >> 8);
}

/* ---- produce: message set -> one v2 batch ---- */

struct conv {
	struct rec_kv *recs;
	int64_t *ts;
	int n, cap;
	int codec;       /* of the output batch */
	struct wr plain; /* inner message sets, decompressed, one after another */
	size_t *ends;    /* where each wrapper's inner set ends in plain */
	int nends, ends_cap;
	size_t max_bytes; /* cap on plain */
};

static int conv_add(struct conv *cv, const struct msg *m, int64_t ts)
{
	if (cv->n == cv->cap) {
		int cap = cv->cap ? cv->cap * 2 : 64;
		struct rec_kv *recs = realloc(cv->recs, (size_t)cap * sizeof(*recs));
		int64_t *t;

		if (!recs)
			return -ENOMEM;
		cv->recs = recs;
		t = realloc(cv->ts, (size_t)cap * sizeof(*t));
		if (!t)
			return -ENOMEM;
		cv->ts = t;
		cv->cap = cap;
	}
	cv->recs[cv->n] = (struct rec_kv){ m->key.p, m->key.len, m->value.p, m->value.len };
	cv->ts[cv->n++] = ts;
	return 0;
}

/* Decompresses a wrapper's value onto cv->plain. */
static int conv_inflate(struct conv *cv, const struct msg *m, int codec)
{
	size_t left = cv->max_bytes > cv->plain.len ? cv->max_bytes - cv->plain.len : 0, before = cv->plain.len;
	uint8_t *fixed = NULL;
	const uint8_t *in = m->value.p;
	int rc;

	if (m->value.len <= 0)
		return -EBADMSG;
	if (codec == CODEC_LZ4 && m->magic == 0) {
		fixed = malloc((size_t)m->value.len);
		if (!fixed)
			return -ENOMEM;
		memcpy(fixed, m->value.p, (size_t)m->value.len);
		lz4_fix_hdr(fixed, (size_t)m->value.len, false);
		in = fixed;
	}
	rc = codec_decompress(codec, in, (size_t)m->value.len, &cv->plain, left);
	free(fixed);
	if (!rc && cv->plain.len == before)
		rc = -EBADMSG; /* a wrapper holds at least one message */
	return rc == -EFBIG ? -EMSGSIZE : rc == -EINVAL ? -EBADMSG : rc;
}

/* Codec of a message: 0..3; zstd -ENOTSUP, anything else -EBADMSG. */
static int msg_codec(const struct msg *m)
{
	int codec = m->attributes & RECORDS_ATTR_CODEC_MASK;

	if (codec == CODEC_ZSTD)
		return -ENOTSUP;
	return codec > CODEC_ZSTD ? -EBADMSG : codec;
}

/* Records of one wrapper's inner set, cv->plain[from, to). */
static int conv_inner(struct conv *cv, const struct msg *m, size_t from, size_t to)
{
	struct rd in;
	struct msg im;
	int rc = 0;

	rd_init(&in, cv->plain.buf + from, to - from);
	if (!rd_left(&in))
		return -EBADMSG;
	while (!rc && rd_left(&in)) {
		rc = msg_read(&in, &im);
		if (!rc && im.magic != m->magic)
			rc = -EBADMSG; /* inner messages have the wrapper's format */
		if (!rc && (im.attributes & RECORDS_ATTR_CODEC_MASK))
			rc = -EINVAL; /* compression is one level deep */
		if (!rc)
			rc = conv_add(cv, &im,
				      (m->attributes & MSG_ATTR_LOG_APPEND_TIME) ? m->timestamp : im.timestamp);
	}
	return rc;
}

/*
 * Pass 1 (inflate = true): checks every outer message and decompresses
 * each wrapper onto cv->plain, noting where its inner set ends.  Pass 2:
 * collects the records, the inner sets read back from cv->plain.
 */
static int conv_walk(struct conv *cv, const uint8_t *p, size_t len, bool inflate)
{
	int wrapper = 0;
	struct rd r;
	struct msg m;
	int rc = 0;

	rd_init(&r, p, len);
	while (!rc && rd_left(&r)) {
		int codec;

		rc = msg_read(&r, &m);
		codec = rc ? rc : msg_codec(&m);
		if (codec < 0)
			return codec;
		if (!codec) {
			rc = inflate ? 0 : conv_add(cv, &m, m.timestamp);
			continue;
		}
		if (!inflate) {
			rc = conv_inner(cv, &m, wrapper ? cv->ends[wrapper - 1] : 0, cv->ends[wrapper]);
			wrapper++;
			continue;
		}
		cv->codec = codec;
		rc = conv_inflate(cv, &m, codec);
		if (!rc && cv->nends == cv->ends_cap) {
			int cap = cv->ends_cap ? cv->ends_cap * 2 : 8;
			size_t *ends = realloc(cv->ends, (size_t)cap * sizeof(*ends));

			if (!ends)
				return -ENOMEM;
			cv->ends = ends;
			cv->ends_cap = cap;
		}
		if (!rc)
			cv->ends[cv->nends++] = cv->plain.len;
	}
	return rc;
}

int msgset_to_batch(const uint8_t *p, size_t len, size_t max_bytes, struct wr *w)
{
	struct conv cv = { .max_bytes = max_bytes };
	size_t w_len = w->len;
	int rc;

	wr_init(&cv.plain);
	rc = conv_walk(&cv, p, len, true);
	if (!rc)
		rc = conv_walk(&cv, p, len, false);
	if (!rc && cv.n == 0)
		rc = -EINVAL;
	if (!rc)
		rc = records_build_ts(w, cv.recs, cv.ts, cv.n, cv.codec);
	if (rc)
		w->len = w_len;
	wr_release(&cv.plain);
	free(cv.recs);
	free(cv.ts);
	free(cv.ends);
	return rc;
}

/* ---- fetch: v2 batch -> message set ---- */

/* Appends one message (w->err set on ENOMEM). */
static void msg_write(struct wr *w, int magic, int64_t offset, int8_t attributes, int64_t ts, struct bytes key,
		      struct bytes value)
{
	size_t start = w->len, crc_at;

	wr_i64(w, offset);
	wr_i32(w, 0); /* messageSize, patched below */
	crc_at = wr_u32(w, 0);
	wr_i8(w, (int8_t)magic);
	wr_i8(w, attributes);
	if (magic == 1)
		wr_i64(w, ts);
	wr_i32(w, key.len);
	if (key.len > 0)
		wr_raw(w, key.p, (size_t)key.len);
	wr_i32(w, value.len);
	if (value.len > 0)
		wr_raw(w, value.p, (size_t)value.len);
	if (w->err)
		return;
	wr_patch_i32(w, start + 8, (int32_t)(w->len - start - 12));
	wr_patch_u32(w, crc_at, msg_crc(w->buf + crc_at + 4, w->len - crc_at - 4));
}

struct down {
	struct wr *w;       /* messages go here */
	int magic;          /* 0 or 1 */
	bool wrapped;       /* compressed: inner offsets per magic */
	int64_t min_offset; /* records below are skipped */
	int64_t lat_ts;     /* LogAppendTime batch: its time, else -1 */
	int64_t first_offset, last_offset, max_ts;
	int n;
};

static int down_record(void *arg, const struct record *rec)
{
	struct down *d = arg;
	int64_t ts = d->lat_ts >= 0 ? d->lat_ts : rec->timestamp;
	int64_t offset = rec->offset;

	if (rec->offset < d->min_offset)
		return 0;
	if (d->n++ == 0)
		d->first_offset = rec->offset;
	d->last_offset = rec->offset;
	d->max_ts = ts > d->max_ts ? ts : d->max_ts;
	if (d->wrapped && d->magic == 1)
		offset = rec->offset - d->first_offset; /* relative inside a magic 1 wrapper */
	msg_write(d->w, d->magic, offset, d->lat_ts >= 0 && !d->wrapped ? MSG_ATTR_LOG_APPEND_TIME : 0, ts, rec->key,
		  rec->value);
	return d->w->err;
}

/* Appends the wrapper holding the inner set d->w compressed with codec. */
static int down_wrap(struct down *d, int codec, struct wr *w)
{
	struct wr z;
	int8_t attr = (int8_t)(codec | (d->magic == 1 && d->lat_ts >= 0 ? MSG_ATTR_LOG_APPEND_TIME : 0));
	int rc;

	wr_init(&z);
	rc = codec_compress(codec, CODEC_LEVEL_DEFAULT, d->w->buf, d->w->len, &z);
	if (!rc && codec == CODEC_LZ4 && d->magic == 0)
		lz4_fix_hdr(z.buf, z.len, true);
	if (!rc) {
		msg_write(w, d->magic, d->last_offset, attr, d->max_ts, (struct bytes){ NULL, -1 },
			  (struct bytes){ z.buf, (int32_t)z.len });
		rc = w->err ? -ENOMEM : 0;
	}
	wr_release(&z);
	return rc;
}

int msgset_from_batch(const uint8_t *p, const struct batch_hdr *h, int magic, int64_t min_offset, struct wr *w)
{
	int codec = h->attributes & RECORDS_ATTR_CODEC_MASK;
	const uint8_t *body = p + RECORDS_HDR_SIZE;
	size_t body_len = (size_t)(h->size - RECORDS_HDR_SIZE), w_len = w->len;
	struct wr plain, inner;
	struct down d = { .w = codec ? &inner : w,
			  .magic = magic,
			  .wrapped = codec != 0,
			  .min_offset = min_offset,
			  .lat_ts = (h->attributes & RECORDS_ATTR_LOG_APPEND_TIME) ? h->max_timestamp : -1,
			  .max_ts = -1 };
	int rc = 0;

	if (records_is_control(h))
		return 0;
	if (codec == CODEC_ZSTD)
		return -ENOTSUP;
	if (codec > CODEC_ZSTD)
		return -EBADMSG;
	wr_init(&plain);
	wr_init(&inner);
	if (codec) {
		rc = codec_decompress(codec, body, body_len, &plain, MSGSET_INFLATE_MAX);
		if (!rc && !plain.len)
			rc = -EBADMSG; /* a data batch holds records */
		body = plain.buf;
		body_len = plain.len;
	}
	if (!rc)
		rc = records_foreach_body(body, body_len, h, down_record, &d);
	if (!rc && codec && d.n)
		rc = down_wrap(&d, codec, w);
	if (rc) {
		w->len = w_len;
		rc = rc == -ENOMEM ? rc : -EBADMSG;
	}
	wr_release(&plain);
	wr_release(&inner);
	return rc ? rc : d.n;
}
