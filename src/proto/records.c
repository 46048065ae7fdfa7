/*
 * records.c - record batch v2 header parsing, validation, patching and
 * building (layout in records.h).
 *
 * Produce validation, which reads every record, is proto/validate.c; here
 * records are decoded only to read control markers, for time lookups and
 * for replaying internal topics.
 */
#include "proto/records.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "proto/codec.h"
#include "util/crc32c.h"

static uint64_t be_get(const uint8_t *p, int n)
{
	uint64_t v = 0;

	for (int i = 0; i < n; i++)
		v = (v << 8) | p[i];
	return v;
}

static void be_put(uint8_t *p, uint64_t v, int n)
{
	for (int i = n - 1; i >= 0; i--, v >>= 8)
		p[i] = (uint8_t)v;
}

int records_hdr_parse(const uint8_t *p, size_t len, struct batch_hdr *out)
{
	struct rd r;

	if (len <= RECORDS_MAGIC_OFF)
		return -EAGAIN;
	if (p[RECORDS_MAGIC_OFF] == 0 || p[RECORDS_MAGIC_OFF] == 1)
		return -EPROTO;
	if (p[RECORDS_MAGIC_OFF] != 2)
		return -EBADMSG;
	if (len < RECORDS_HDR_SIZE)
		return -EAGAIN;
	rd_init(&r, p, RECORDS_HDR_SIZE);
	out->base_offset = rd_i64(&r);
	out->batch_length = rd_i32(&r);
	out->leader_epoch = rd_i32(&r);
	out->magic = rd_i8(&r);
	out->crc = rd_u32(&r);
	out->attributes = rd_i16(&r);
	out->last_offset_delta = rd_i32(&r);
	out->base_timestamp = rd_i64(&r);
	out->max_timestamp = rd_i64(&r);
	out->producer_id = rd_i64(&r);
	out->producer_epoch = rd_i16(&r);
	out->base_sequence = rd_i32(&r);
	out->record_count = rd_i32(&r);
	out->size = RECORDS_LOG_OVERHEAD + (int64_t)out->batch_length;
	if (r.err || out->batch_length < RECORDS_MIN_BATCH_LENGTH || out->last_offset_delta < 0 ||
	    out->record_count < 0)
		return -EBADMSG;
	return 0;
}

int records_batch_parse(const uint8_t *p, size_t len, struct batch_hdr *out)
{
	int rc = records_hdr_parse(p, len, out);

	if (rc == -EPROTO)
		return -EBADMSG;
	if (rc)
		return rc;
	if ((uint64_t)out->size > len)
		return -EAGAIN;
	return 0;
}

bool records_batch_crc_ok(const uint8_t *p, const struct batch_hdr *h)
{
	return crc32c(p + RECORDS_ATTR_OFF, (size_t)h->size - RECORDS_ATTR_OFF) == h->crc;
}

void records_set_base_offset(uint8_t *p, int64_t base_offset)
{
	be_put(p, (uint64_t)base_offset, 8);
}

void records_set_leader_epoch(uint8_t *p, int32_t leader_epoch)
{
	be_put(p + 12, (uint32_t)leader_epoch, 4);
}

static void records_set_max_ts_attr(uint8_t *p, size_t len, int64_t ts, uint16_t attr)
{
	be_put(p + RECORDS_ATTR_OFF, attr, 2);
	be_put(p + 35, (uint64_t)ts, 8);
	be_put(p + RECORDS_CRC_OFF, crc32c(p + RECORDS_ATTR_OFF, len - RECORDS_ATTR_OFF), 4);
}

void records_set_log_append_time(uint8_t *p, size_t len, int64_t ts)
{
	uint16_t attr = (uint16_t)be_get(p + RECORDS_ATTR_OFF, 2);

	records_set_max_ts_attr(p, len, ts, attr | RECORDS_ATTR_LOG_APPEND_TIME);
}

void records_set_max_timestamp(uint8_t *p, size_t len, int64_t ts)
{
	records_set_max_ts_attr(p, len, ts, (uint16_t)be_get(p + RECORDS_ATTR_OFF, 2));
}

#define RECORDS_INFLATE_MAX (64 << 20)

/* ---- building ---- */

struct batch_spec {
	int64_t base_offset;
	int16_t attributes;
	int64_t ts_ms;     /* baseTimestamp */
	int64_t max_ts_ms; /* maxTimestamp */
	int64_t producer_id;
	int16_t producer_epoch;
	int32_t base_sequence;
	const int64_t *rec_ts_ms; /* per-record timestamps, or NULL: all ts_ms */
};

static size_t bytes_len_size(int32_t len)
{
	return varint_size(len) + (len > 0 ? (size_t)len : 0);
}

static void record_write(struct wr *w, int32_t offset_delta, int64_t ts_delta, const struct rec_kv *kv)
{
	size_t body = 1 + varlong_size(ts_delta) + varint_size(offset_delta) + bytes_len_size(kv->key_len) +
		      bytes_len_size(kv->value_len) + varint_size(0);

	wr_varint(w, (int32_t)body);
	wr_i8(w, 0); /* attributes */
	wr_varlong(w, ts_delta);
	wr_varint(w, offset_delta);
	wr_varint(w, kv->key_len);
	if (kv->key_len > 0)
		wr_raw(w, kv->key, (size_t)kv->key_len);
	wr_varint(w, kv->value_len);
	if (kv->value_len > 0)
		wr_raw(w, kv->value, (size_t)kv->value_len);
	wr_varint(w, 0); /* headers */
}

/* The records of a batch, compressed with the codec in s->attributes. */
static int batch_write_records(struct wr *w, const struct batch_spec *s, const struct rec_kv *recs, int n)
{
	int codec = s->attributes & RECORDS_ATTR_CODEC_MASK;
	struct wr plain, *out = codec ? &plain : w;
	int rc = 0;

	wr_init(&plain);
	for (int i = 0; i < n; i++)
		record_write(out, i, s->rec_ts_ms ? (int64_t)((uint64_t)s->rec_ts_ms[i] - (uint64_t)s->ts_ms) : 0,
			     &recs[i]);
	rc = out->err;
	if (!rc && codec)
		rc = codec_compress(codec, CODEC_LEVEL_DEFAULT, plain.buf, plain.len, w);
	wr_release(&plain);
	return rc;
}

static int batch_write(struct wr *w, const struct batch_spec *s, const struct rec_kv *recs, int n)
{
	size_t start = w->len, len_at;
	uint32_t crc;
	int rc;

	wr_i64(w, s->base_offset);
	len_at = wr_i32(w, 0);
	wr_i32(w, -1); /* partitionLeaderEpoch: set by the log */
	wr_i8(w, 2);
	wr_u32(w, 0); /* crc, patched below */
	wr_i16(w, s->attributes);
	wr_i32(w, n - 1);
	wr_i64(w, s->ts_ms);
	wr_i64(w, s->max_ts_ms);
	wr_i64(w, s->producer_id);
	wr_i16(w, s->producer_epoch);
	wr_i32(w, s->base_sequence);
	wr_i32(w, n);
	rc = batch_write_records(w, s, recs, n);
	if (rc || w->err) {
		w->len = start;
		return rc ? rc : w->err;
	}
	wr_patch_i32(w, len_at, (int32_t)(w->len - start - RECORDS_LOG_OVERHEAD));
	crc = crc32c(w->buf + start + RECORDS_ATTR_OFF, w->len - start - RECORDS_ATTR_OFF);
	wr_patch_u32(w, start + RECORDS_CRC_OFF, crc);
	return 0;
}

int records_build(struct wr *w, int64_t base_offset, int64_t ts_ms, const struct rec_kv *recs, int n)
{
	struct batch_spec s = { .base_offset = base_offset,
				.ts_ms = ts_ms,
				.max_ts_ms = ts_ms,
				.producer_id = -1,
				.producer_epoch = -1,
				.base_sequence = -1 };

	if (n < 1)
		return -EINVAL;
	return batch_write(w, &s, recs, n);
}

int records_build_ts(struct wr *w, const struct rec_kv *recs, const int64_t *ts_ms, int n, int codec)
{
	struct batch_spec s = { .attributes = (int16_t)codec,
				.producer_id = -1,
				.producer_epoch = -1,
				.base_sequence = -1,
				.rec_ts_ms = ts_ms };

	if (n < 1 || codec < 0 || codec > CODEC_MAX)
		return -EINVAL;
	s.ts_ms = s.max_ts_ms = ts_ms[0];
	for (int i = 1; i < n; i++)
		s.max_ts_ms = ts_ms[i] > s.max_ts_ms ? ts_ms[i] : s.max_ts_ms;
	return batch_write(w, &s, recs, n);
}

/* Transactions: a transactional data batch (TxnOffsetCommit in __consumer_offsets). */
int records_build_txn(struct wr *w, int64_t ts_ms, int64_t producer_id, int16_t producer_epoch,
		      const struct rec_kv *recs, int n)
{
	struct batch_spec s = { .attributes = RECORDS_ATTR_TRANSACTIONAL,
				.ts_ms = ts_ms,
				.max_ts_ms = ts_ms,
				.producer_id = producer_id,
				.producer_epoch = producer_epoch,
				.base_sequence = -1 };

	if (n < 1)
		return -EINVAL;
	return batch_write(w, &s, recs, n);
}

int records_build_control(struct wr *w, int64_t producer_id, int16_t producer_epoch, bool commit,
			  int32_t coordinator_epoch, int64_t ts_ms)
{
	struct batch_spec s = { .attributes = RECORDS_ATTR_TRANSACTIONAL | RECORDS_ATTR_CONTROL,
				.ts_ms = ts_ms,
				.max_ts_ms = ts_ms,
				.producer_id = producer_id,
				.producer_epoch = producer_epoch,
				.base_sequence = -1 };
	uint8_t key[4], value[6];
	struct rec_kv kv = { key, sizeof(key), value, sizeof(value) };

	be_put(key, 0, 2);                  /* version */
	be_put(key + 2, commit ? 1 : 0, 2); /* type: 0 abort, 1 commit */
	be_put(value, 0, 2);                /* version */
	be_put(value + 2, (uint32_t)coordinator_epoch, 4);
	return batch_write(w, &s, &kv, 1);
}

int records_control_parse(const uint8_t *p, const struct batch_hdr *h, bool *commit, int32_t *coordinator_epoch)
{
	struct rd r;
	struct bytes key, value;
	int32_t klen, vlen, type;

	if (!records_is_control(h) || h->record_count < 1)
		return -EBADMSG;
	rd_init(&r, p + RECORDS_HDR_SIZE, (size_t)h->size - RECORDS_HDR_SIZE);
	rd_varint(&r);  /* length */
	rd_i8(&r);      /* attributes */
	rd_varlong(&r); /* timestampDelta */
	rd_varint(&r);  /* offsetDelta */
	klen = rd_varint(&r);
	if (klen < 4 || !rd_view(&r, (size_t)klen, &key))
		return -EBADMSG;
	vlen = rd_varint(&r);
	if (vlen < 6 || !rd_view(&r, (size_t)vlen, &value) || r.err)
		return -EBADMSG;
	type = (int32_t)be_get(key.p + 2, 2);
	if (type != 0 && type != 1)
		return -EBADMSG;
	*commit = type == 1;
	*coordinator_epoch = (int32_t)be_get(value.p + 2, 4);
	return 0;
}

/* Finds the first record with timestamp >= ts in n uncompressed records. */
static int records_scan_time(const struct batch_hdr *h, const uint8_t *p, size_t len, int64_t ts, int64_t *offset_out,
			     int64_t *ts_out)
{
	struct rd r;

	rd_init(&r, p, len);
	for (int32_t i = 0; i < h->record_count && !r.err; i++) {
		int32_t rlen = rd_varint(&r);
		const uint8_t *next;
		int64_t rts, delta;

		if (r.err || rlen < 0 || (size_t)rlen > rd_left(&r))
			return -EBADMSG;
		next = r.p + rlen;
		rd_i8(&r); /* attributes */
		/* client bytes: wrap rather than overflow (signed overflow is UB) */
		rts = (int64_t)((uint64_t)h->base_timestamp + (uint64_t)rd_varlong(&r));
		delta = rd_varint(&r);
		if (!r.err && rts >= ts) {
			*offset_out = (int64_t)((uint64_t)h->base_offset + (uint64_t)delta);
			*ts_out = rts;
			return 1;
		}
		r.p = next;
	}
	return r.err ? -EBADMSG : 0;
}

int records_find_time(const uint8_t *p, const struct batch_hdr *h, int64_t ts, int64_t *offset_out, int64_t *ts_out)
{
	int codec = h->attributes & RECORDS_ATTR_CODEC_MASK;
	bool lat = h->attributes & RECORDS_ATTR_LOG_APPEND_TIME;
	bool unknown = h->max_timestamp < 0 && !lat; /* no max timestamp: only the records can tell */
	const uint8_t *body = p + RECORDS_HDR_SIZE;
	size_t body_len = (size_t)(h->size - RECORDS_HDR_SIZE);
	struct wr plain;
	int rc;

	if (h->max_timestamp < ts && !unknown)
		return 0;
	*offset_out = h->base_offset;
	*ts_out = h->max_timestamp;
	if (lat)
		return 1; /* one time for the whole batch */
	wr_init(&plain);
	if (codec) {
		if (codec_decompress(codec, body, body_len, &plain, RECORDS_INFLATE_MAX) < 0) {
			wr_release(&plain);
			return unknown ? 0 : 1;
		}
		body = plain.len ? plain.buf : body; /* an empty result may have no buffer */
		body_len = plain.len;
	}
	rc = records_scan_time(h, body, body_len, ts, offset_out, ts_out);
	wr_release(&plain);
	if (unknown)
		return rc;
	return rc == 0 ? 1 : rc; /* max_timestamp >= ts, so a record qualifies */
}

int records_foreach(const uint8_t *p, const struct batch_hdr *h, records_fn *fn, void *arg)
{
	if (h->attributes & RECORDS_ATTR_CODEC_MASK)
		return -EPROTO;
	return records_foreach_body(p + RECORDS_HDR_SIZE, (size_t)(h->size - RECORDS_HDR_SIZE), h, fn, arg);
}

int records_foreach_body(const uint8_t *body_p, size_t body_len, const struct batch_hdr *h, records_fn *fn, void *arg)
{
	struct rd r;
	int err = 0;

	rd_init(&r, body_p, body_len);
	for (int32_t i = 0; !err && i < h->record_count; i++) {
		struct record rec = { .key = { NULL, -1 }, .value = { NULL, -1 } };
		int32_t len = rd_varint(&r), klen, vlen;
		struct bytes body;
		struct rd b;

		if (len < 0 || !rd_view(&r, (size_t)len, &body))
			return -EBADMSG;
		rd_init(&b, body.p, (size_t)body.len);
		rd_i8(&b); /* attributes */
		rec.timestamp = (int64_t)((uint64_t)h->base_timestamp + (uint64_t)rd_varlong(&b));
		rec.offset = (int64_t)((uint64_t)h->base_offset + (uint64_t)(int64_t)rd_varint(&b));
		klen = rd_varint(&b);
		if (klen >= 0)
			rd_view(&b, (size_t)klen, &rec.key);
		vlen = rd_varint(&b);
		if (vlen >= 0)
			rd_view(&b, (size_t)vlen, &rec.value);
		rec.header_count = rd_left(&b) ? rd_varint(&b) : 0; /* validate.c checks it is there */
		rec.headers = (struct bytes){ b.p, (int32_t)rd_left(&b) };
		if (b.err)
			return -EBADMSG;
		err = fn(arg, &rec);
	}
	return err;
}

bool records_header_next(struct rd *r, struct kstr *key, struct bytes *value)
{
	int32_t klen, vlen;
	struct bytes k = { NULL, 0 };

	if (r->err || !rd_left(r))
		return false;
	klen = rd_varint(r);
	if (klen < 0 || !rd_view(r, (size_t)klen, &k)) {
		rd_fail(r, RD_INVALID);
		return false;
	}
	*key = (struct kstr){ (const char *)k.p, k.len };
	*value = (struct bytes){ NULL, -1 };
	vlen = rd_varint(r);
	if (vlen >= 0 && !rd_view(r, (size_t)vlen, value))
		return false;
	return !r->err;
}

bool records_has_codec(const uint8_t *p, size_t len, int codec)
{
	struct batch_hdr h;

	for (size_t off = 0; off < len && !records_hdr_parse(p + off, len - off, &h); off += (size_t)h.size)
		if ((h.attributes & RECORDS_ATTR_CODEC_MASK) == codec)
			return true;
	return false;
}
