/*
 * validate.c - Produce-side validation of record batches v2 (rules in
 * validate.h).
 *
 * Structure: validate_records() walks the blob batch by batch;
 * batch_check() does the header, size and CRC; body_check() gets the
 * record bytes (decompressing if needed) and walks them with
 * record_check(), which reads one record's fields through a bounded
 * reader and applies the per-record rules.  Record-level errors are
 * collected (Kafka lists every offending record); structural ones stop
 * at once.
 */
#include "proto/validate.h"

#include <errno.h>
#include <string.h>

#include "proto/codec.h"
#include "proto/kerr.h"
#include "proto/records.h"
#include "util/buf.h"

struct vctx {
	const struct validate_cfg *cfg;
	struct validate_result *res;
	int64_t ts_lo, ts_hi; /* accepted CreateTime range */
	int16_t record_err;   /* the error of the records listed in res, KERR_NONE if none */
};

/* Notes a record-level error of record i (first kind of error wins). */
static void record_error(struct vctx *vc, int16_t kerr, int32_t i, const char *why)
{
	struct validate_result *res = vc->res;

	if (vc->record_err != KERR_NONE && vc->record_err != kerr)
		return;
	vc->record_err = kerr;
	if (!res->why)
		res->why = why;
	if (res->n_errors < VALIDATE_MAX_RECORD_ERRORS)
		res->batch_index[res->n_errors++] = i;
}

static bool skip_bytes(struct rd *b, int32_t n)
{
	return n >= -1 && (n < 0 || rd_skip(b, (size_t)n));
}

/* Headers: count, then each non-null key and a value (may be null). */
static bool headers_ok(struct rd *b)
{
	int32_t n = rd_varint(b);

	if (n < 0)
		return false;
	for (int32_t j = 0; j < n && !b->err; j++) {
		int32_t klen = rd_varint(b);

		if (klen < 0 || !skip_bytes(b, klen) || !skip_bytes(b, rd_varint(b)))
			return false;
	}
	return !b->err;
}

/*
 * One record (index i) of batch h at r; advances r past it.  Returns false
 * for a structural error (res->why set), true otherwise, record-level
 * errors noted in vc.  OUT *ts: the record's timestamp.
 */
static bool record_check(struct rd *r, const struct batch_hdr *h, int32_t i, struct vctx *vc, int64_t *ts)
{
	int32_t len = rd_varint(r), klen;
	struct rd b;

	if (r->err || len < 0 || (size_t)len > rd_left(r)) {
		vc->res->why = "record length runs past the batch";
		return false;
	}
	rd_init(&b, r->p, (size_t)len);
	r->p += len;
	rd_i8(&b); /* attributes: unused in v2 */
	*ts = (int64_t)((uint64_t)h->base_timestamp + (uint64_t)rd_varlong(&b));
	if (rd_varint(&b) != i && !b.err)
		record_error(vc, KERR_INVALID_RECORD, i, "record offset deltas must be 0, 1, 2, ... in order");
	klen = rd_varint(&b);
	if (!skip_bytes(&b, klen) || !skip_bytes(&b, rd_varint(&b)) || !headers_ok(&b) || b.err || rd_left(&b)) {
		vc->res->why = "record length does not match its fields";
		return false;
	}
	if (klen < 0 && vc->cfg->keys_required)
		record_error(vc, KERR_INVALID_RECORD, i, "a compacted topic accepts only records with a key");
	if (vc->cfg->create_time && *ts != -1 && (*ts < vc->ts_lo || *ts > vc->ts_hi))
		record_error(vc, KERR_INVALID_TIMESTAMP, i,
			     "record timestamp is outside message.timestamp.before.max.ms/after.max.ms of the "
			     "broker's time");
	return true;
}

/* Walks the records of a (decompressed) body.  OUT *max_ts. */
static int16_t records_check(const struct batch_hdr *h, const uint8_t *p, size_t len, struct vctx *vc, int64_t *max_ts)
{
	struct rd r;

	*max_ts = -1;
	rd_init(&r, p, len);
	for (int32_t i = 0; i < h->record_count; i++) {
		int64_t ts;

		if (!record_check(&r, h, i, vc, &ts))
			return KERR_INVALID_RECORD;
		if (ts > *max_ts)
			*max_ts = ts;
	}
	if (rd_left(&r)) {
		vc->res->why = "bytes left after the last record of the batch";
		return KERR_INVALID_RECORD;
	}
	return KERR_NONE;
}

/* The records of the whole batch p, decompressed if needed.  OUT *max_ts. */
static int16_t body_check(const uint8_t *p, const struct batch_hdr *h, struct vctx *vc, int64_t *max_ts)
{
	int codec = h->attributes & RECORDS_ATTR_CODEC_MASK;
	const uint8_t *body = p + RECORDS_HDR_SIZE;
	size_t len = (size_t)h->size - RECORDS_HDR_SIZE;
	struct wr plain;
	int16_t kerr;
	int rc;

	if (codec == CODEC_NONE)
		return records_check(h, body, len, vc, max_ts);
	wr_init(&plain);
	rc = codec_decompress(codec, body, len, &plain, VALIDATE_INFLATE_MAX(vc->cfg->max_message_bytes));
	if (rc == -EFBIG) {
		vc->res->why = "the batch decompresses to more than the broker accepts";
		kerr = KERR_MESSAGE_TOO_LARGE;
	} else if (rc == -ENOMEM) {
		vc->res->why = "out of memory decompressing the batch";
		kerr = KERR_CORRUPT_MESSAGE;
	} else if (rc) {
		vc->res->why = "the batch does not decompress";
		kerr = KERR_CORRUPT_MESSAGE;
	} else {
		kerr = records_check(h, plain.len ? plain.buf : body, plain.len, vc, max_ts); /* empty: no buffer */
	}
	wr_release(&plain);
	return kerr;
}

/* Header, size, CRC and counts of the batch at p (left bytes in the blob). */
static int16_t batch_check(const uint8_t *p, size_t left, const struct validate_cfg *cfg, struct batch_hdr *h,
			   const char **why)
{
	int rc = records_hdr_parse(p, left, h);

	*why = "malformed batch header";
	if (rc == -EPROTO) {
		*why = "message format v0/v1 is not accepted";
		return KERR_UNSUPPORTED_FOR_MESSAGE_FORMAT;
	}
	if (rc)
		return KERR_CORRUPT_MESSAGE; /* includes a partial header */
	if (h->size > cfg->max_message_bytes) {
		*why = "batch larger than max.message.bytes";
		return KERR_MESSAGE_TOO_LARGE;
	}
	if ((uint64_t)h->size > left || (h->attributes & RECORDS_ATTR_CODEC_MASK) > CODEC_MAX) {
		*why = (uint64_t)h->size > left ? "batch runs past the records" : "unknown compression codec";
		return KERR_CORRUPT_MESSAGE;
	}
	if (!records_batch_crc_ok(p, h)) {
		*why = "batch CRC mismatch";
		return KERR_CORRUPT_MESSAGE;
	}
	*why = NULL;
	if (records_is_control(h))
		*why = "producers may not write control batches";
	else if (h->record_count <= 0 || h->last_offset_delta != h->record_count - 1)
		*why = "lastOffsetDelta does not match the record count";
	return *why ? KERR_INVALID_RECORD : KERR_NONE;
}

/* now - before.max and now + after.max, saturated. */
static void ts_bounds(const struct validate_cfg *cfg, int64_t *lo, int64_t *hi)
{
	if (__builtin_sub_overflow(cfg->now_ms, cfg->before_max_ms, lo))
		*lo = INT64_MIN;
	if (__builtin_add_overflow(cfg->now_ms, cfg->after_max_ms, hi))
		*hi = INT64_MAX;
}

int16_t validate_records(uint8_t *blob, size_t len, const struct validate_cfg *cfg, struct validate_result *res)
{
	struct vctx vc = { cfg, res, 0, 0, KERR_NONE };
	int64_t count = 0;
	size_t off = 0;

	memset(res, 0, sizeof(*res));
	ts_bounds(cfg, &vc.ts_lo, &vc.ts_hi);
	while (off < len) {
		struct batch_hdr h;
		int64_t max_ts = -1;
		int16_t kerr = batch_check(blob + off, len - off, cfg, &h, &res->why);

		if (kerr == KERR_NONE)
			kerr = body_check(blob + off, &h, &vc, &max_ts);
		if (kerr == KERR_NONE)
			kerr = vc.record_err;
		if (kerr != KERR_NONE)
			return kerr;
		if (cfg->create_time && max_ts != h.max_timestamp) {
			records_set_max_timestamp(blob + off, (size_t)h.size, max_ts);
			res->rewritten = true;
		}
		count += h.record_count;
		if (count > INT32_MAX) {
			res->why = "too many records";
			return KERR_CORRUPT_MESSAGE;
		}
		off += (size_t)h.size;
	}
	res->records = (int32_t)count;
	return KERR_NONE;
}
