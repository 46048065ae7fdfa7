/*
 * test_validate.c - Produce validation (proto/validate.c): batch counts,
 * record structure, offset deltas and timestamps in uncompressed and
 * compressed batches of every codec, maxTimestamp correction with a new
 * CRC, and the timestamp bounds at the edges of int64.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "proto/codec.h"
#include "proto/kerr.h"
#include "proto/records.h"
#include "proto/validate.h"
#include "util/crc32c.h"

#define NOW 1800000000000LL

static void put_be(uint8_t *p, uint64_t v, int n)
{
	for (int i = n - 1; i >= 0; i--, v >>= 8)
		p[i] = (uint8_t)v;
}

/* One record: ts delta, offset delta, key (NULL = null), one header if hkey_null >= 0. */
static void rec(struct wr *w, int64_t ts_delta, int32_t off_delta, const char *key, int hkey_null)
{
	struct wr b;

	wr_init(&b);
	wr_i8(&b, 0);
	wr_varlong(&b, ts_delta);
	wr_varint(&b, off_delta);
	wr_varint(&b, key ? (int32_t)strlen(key) : -1);
	if (key)
		wr_raw(&b, key, strlen(key));
	wr_varint(&b, 5);
	wr_raw(&b, "value", 5);
	wr_varint(&b, hkey_null >= 0 ? 1 : 0);
	if (hkey_null >= 0) {
		wr_varint(&b, hkey_null ? -1 : 1);
		if (!hkey_null)
			wr_raw(&b, "h", 1);
		wr_varint(&b, -1);
	}
	wr_varint(w, (int32_t)b.len);
	wr_raw(w, b.buf, b.len);
	wr_release(&b);
}

/* Wraps a records body into a batch of n records (lastOffsetDelta lod) with a right CRC. */
static void wrap(struct wr *w, int codec, const struct wr *body, int32_t n, int32_t lod, int64_t max_ts)
{
	struct wr c;
	const struct wr *b = body;

	wr_init(&c);
	if (codec) {
		assert_int_equal(codec_compress(codec, -1, body->buf, body->len, &c), 0);
		b = &c;
	}
	wr_init(w);
	wr_i64(w, 0);
	wr_i32(w, (int32_t)(RECORDS_HDR_SIZE - RECORDS_LOG_OVERHEAD + b->len));
	wr_i32(w, -1);
	wr_i8(w, 2);
	wr_u32(w, 0);
	wr_i16(w, (int16_t)codec);
	wr_i32(w, lod);
	wr_i64(w, NOW);
	wr_i64(w, max_ts);
	wr_i64(w, -1);
	wr_i16(w, -1);
	wr_i32(w, -1);
	wr_i32(w, n);
	wr_raw(w, b->buf, b->len);
	put_be(w->buf + RECORDS_CRC_OFF, crc32c(w->buf + RECORDS_ATTR_OFF, w->len - RECORDS_ATTR_OFF), 4);
	wr_release(&c);
}

static const struct validate_cfg cfg_default = { 1 << 20, true, NOW, INT64_MAX, 3600000, false };

static int16_t check(struct wr *w, const struct validate_cfg *cfg, struct validate_result *res)
{
	return validate_records(w->buf, w->len, cfg, res);
}

static void test_good_and_max_ts(void **state)
{
	(void)state;
	for (int codec = 0; codec <= CODEC_MAX; codec++) {
		struct validate_result res;
		struct batch_hdr h;
		struct wr body, w;

		wr_init(&body);
		rec(&body, 0, 0, "a", -1);
		rec(&body, 700, 1, "b", 0);
		rec(&body, 300, 2, NULL, -1);
		wrap(&w, codec, &body, 3, 2, -1); /* maxTimestamp -1, as sarama writes */
		assert_int_equal(check(&w, &cfg_default, &res), KERR_NONE);
		assert_int_equal(res.records, 3);
		assert_true(res.rewritten);
		assert_int_equal(records_batch_parse(w.buf, w.len, &h), 0);
		assert_int_equal(h.max_timestamp, NOW + 700);
		assert_true(records_batch_crc_ok(w.buf, &h));
		/* already right: untouched */
		assert_int_equal(check(&w, &cfg_default, &res), KERR_NONE);
		assert_false(res.rewritten);
		wr_release(&w);
		wr_release(&body);
	}
}

static void test_structure(void **state)
{
	(void)state;
	for (int codec = 0; codec <= CODEC_MAX; codec++) {
		struct validate_result res;
		struct wr body, w;

		wr_init(&body);
		rec(&body, 0, 0, "a", -1);
		rec(&body, 0, 1, "b", -1);
		wrap(&w, codec, &body, 2, 1 << 30, NOW); /* lastOffsetDelta far past the records */
		assert_int_equal(check(&w, &cfg_default, &res), KERR_INVALID_RECORD);
		wr_release(&w);
		wrap(&w, codec, &body, 3, 2, NOW); /* claims 3 records, holds 2 */
		assert_int_equal(check(&w, &cfg_default, &res), KERR_INVALID_RECORD);
		wr_release(&w);
		rec(&body, 0, 2, "c", 1); /* null header key */
		wrap(&w, codec, &body, 3, 2, NOW);
		assert_int_equal(check(&w, &cfg_default, &res), KERR_INVALID_RECORD);
		wr_release(&w);
		wr_release(&body);

		wr_init(&body);
		rec(&body, 0, 0, "a", -1);
		rec(&body, 0, 5, "b", -1); /* offset delta 5 at index 1 */
		rec(&body, 0, 2, "c", -1);
		wrap(&w, codec, &body, 3, 2, NOW);
		assert_int_equal(check(&w, &cfg_default, &res), KERR_INVALID_RECORD);
		assert_int_equal(res.n_errors, 1);
		assert_int_equal(res.batch_index[0], 1);
		wr_release(&w);
		wr_raw(&body, "\0", 1); /* a trailing byte after the last record */
		wrap(&w, codec, &body, 3, 2, NOW);
		assert_int_equal(check(&w, &cfg_default, &res), KERR_INVALID_RECORD);
		wr_release(&w);
		wr_release(&body);
	}
}

static void test_timestamps(void **state)
{
	struct validate_cfg cfg = cfg_default;
	struct validate_result res;
	struct wr body, w;

	(void)state;
	wr_init(&body);
	rec(&body, 0, 0, "a", -1);
	rec(&body, 3600001, 1, "b", -1); /* 1 h + 1 ms ahead */
	rec(&body, -5, 2, "c", -1);
	wrap(&w, CODEC_LZ4, &body, 3, 2, NOW);
	assert_int_equal(check(&w, &cfg, &res), KERR_INVALID_TIMESTAMP);
	assert_int_equal(res.n_errors, 1);
	assert_int_equal(res.batch_index[0], 1);
	cfg.create_time = false; /* LogAppendTime: no bounds */
	assert_int_equal(check(&w, &cfg, &res), KERR_NONE);
	cfg = cfg_default;
	cfg.after_max_ms = 3600001;
	assert_int_equal(check(&w, &cfg, &res), KERR_NONE);
	cfg.before_max_ms = 4;
	assert_int_equal(check(&w, &cfg, &res), KERR_INVALID_TIMESTAMP);
	assert_int_equal(res.batch_index[0], 2);
	/* the bounds saturate instead of overflowing */
	cfg.now_ms = INT64_MAX - 10;
	cfg.after_max_ms = INT64_MAX;
	cfg.before_max_ms = INT64_MAX;
	assert_int_equal(check(&w, &cfg, &res), KERR_NONE);
	cfg.now_ms = -10;
	assert_int_equal(check(&w, &cfg, &res), KERR_NONE);
	wr_release(&w);
	wr_release(&body);
}

static void test_compacted_and_limits(void **state)
{
	struct validate_cfg cfg = cfg_default;
	struct validate_result res;
	struct wr body, w;
	uint8_t saved;

	(void)state;
	wr_init(&body);
	rec(&body, 0, 0, "a", -1);
	rec(&body, 0, 1, NULL, -1);
	wrap(&w, CODEC_ZSTD, &body, 2, 1, NOW);
	cfg.keys_required = true;
	assert_int_equal(check(&w, &cfg, &res), KERR_INVALID_RECORD);
	assert_int_equal(res.batch_index[0], 1);
	cfg.keys_required = false;
	cfg.max_message_bytes = (int32_t)w.len - 1;
	assert_int_equal(check(&w, &cfg, &res), KERR_MESSAGE_TOO_LARGE);
	cfg.max_message_bytes = 1 << 20;
	saved = w.buf[RECORDS_HDR_SIZE];
	w.buf[RECORDS_HDR_SIZE] ^= 0xff; /* corrupt the zstd magic, then fix the CRC */
	put_be(w.buf + RECORDS_CRC_OFF, crc32c(w.buf + RECORDS_ATTR_OFF, w.len - RECORDS_ATTR_OFF), 4);
	assert_int_equal(check(&w, &cfg, &res), KERR_CORRUPT_MESSAGE);
	w.buf[RECORDS_HDR_SIZE] = saved;
	assert_int_equal(check(&w, &cfg, &res), KERR_CORRUPT_MESSAGE); /* now the CRC is wrong */
	w.buf[RECORDS_ATTR_OFF + 1] = 6;                               /* an unknown codec */
	put_be(w.buf + RECORDS_CRC_OFF, crc32c(w.buf + RECORDS_ATTR_OFF, w.len - RECORDS_ATTR_OFF), 4);
	assert_int_equal(check(&w, &cfg, &res), KERR_CORRUPT_MESSAGE);
	wr_release(&w);
	wr_release(&body);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_good_and_max_ts),
		cmocka_unit_test(test_structure),
		cmocka_unit_test(test_timestamps),
		cmocka_unit_test(test_compacted_and_limits),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
