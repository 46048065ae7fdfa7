/* test_records.c - record batch v2 parsing, validation, patching and building. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "proto/kerr.h"
#include "proto/records.h"
#include "proto/validate.h"
#include "util/crc32c.h"

static int count; /* records of the last validate() */

static int16_t validate(uint8_t *p, size_t len, int32_t max_bytes)
{
	struct validate_cfg vc = { max_bytes, false, 0, INT64_MAX, INT64_MAX, false };
	struct validate_result res;
	int16_t kerr = validate_records(p, len, &vc, &res);

	count = res.records;
	return kerr;
}

static void build3(struct wr *w)
{
	struct rec_kv kv[3] = {
		{ "k1", 2, "value-one", 9 },
		{ NULL, -1, "v2", 2 },
		{ "k3", 2, NULL, -1 },
	};

	wr_init(w);
	assert_int_equal(records_build(w, 0, 1700000000000LL, kv, 3), 0);
}

static void test_build_parse(void **state)
{
	struct batch_hdr h;
	struct wr w;

	(void)state;
	build3(&w);
	assert_int_equal(records_batch_parse(w.buf, w.len, &h), 0);
	assert_int_equal(h.size, (int64_t)w.len);
	assert_int_equal(h.magic, 2);
	assert_int_equal(h.record_count, 3);
	assert_int_equal(h.last_offset_delta, 2);
	assert_int_equal(h.max_timestamp, 1700000000000LL);
	assert_int_equal(h.producer_id, -1);
	assert_true(records_batch_crc_ok(w.buf, &h));
	assert_int_equal(validate(w.buf, w.len, 1 << 20), KERR_NONE);
	assert_int_equal(count, 3);
	/* two batches back to back */
	{
		struct wr w2;

		build3(&w2);
		wr_raw(&w2, w.buf, w.len);
		assert_int_equal(validate(w2.buf, w2.len, 1 << 20), KERR_NONE);
		assert_int_equal(count, 6);
		wr_release(&w2);
	}
	wr_release(&w);
}

static void test_invalid(void **state)
{
	struct batch_hdr h;
	struct wr w;

	(void)state;
	build3(&w);
	/* partial */
	assert_int_equal(records_batch_parse(w.buf, w.len - 1, &h), -EAGAIN);
	assert_int_equal(records_batch_parse(w.buf, 30, &h), -EAGAIN);
	assert_int_equal(validate(w.buf, w.len - 1, 1 << 20), KERR_CORRUPT_MESSAGE);
	assert_int_equal(validate(w.buf, 10, 1 << 20), KERR_CORRUPT_MESSAGE);
	/* too large */
	assert_int_equal(validate(w.buf, w.len, (int32_t)w.len - 1), KERR_MESSAGE_TOO_LARGE);
	/* corrupt payload byte */
	w.buf[w.len - 3] ^= 0x55;
	assert_int_equal(records_batch_parse(w.buf, w.len, &h), 0);
	assert_false(records_batch_crc_ok(w.buf, &h));
	assert_int_equal(validate(w.buf, w.len, 1 << 20), KERR_CORRUPT_MESSAGE);
	w.buf[w.len - 3] ^= 0x55;
	/* legacy magic */
	w.buf[RECORDS_MAGIC_OFF] = 1;
	assert_int_equal(validate(w.buf, w.len, 1 << 20), KERR_UNSUPPORTED_FOR_MESSAGE_FORMAT);
	assert_int_equal(records_batch_parse(w.buf, w.len, &h), -EBADMSG);
	w.buf[RECORDS_MAGIC_OFF] = 7;
	assert_int_equal(validate(w.buf, w.len, 1 << 20), KERR_CORRUPT_MESSAGE);
	w.buf[RECORDS_MAGIC_OFF] = 2;
	/* batchLength below the header */
	memcpy(w.buf + 8, "\0\0\0\x30", 4);
	assert_int_equal(records_batch_parse(w.buf, w.len, &h), -EBADMSG);
	wr_release(&w);
}

static void test_patch(void **state)
{
	struct batch_hdr h;
	struct wr w;

	(void)state;
	build3(&w);
	records_set_base_offset(w.buf, 123456789012LL);
	records_set_leader_epoch(w.buf, 7);
	assert_int_equal(records_batch_parse(w.buf, w.len, &h), 0);
	assert_int_equal(h.base_offset, 123456789012LL);
	assert_int_equal(h.leader_epoch, 7);
	assert_true(records_batch_crc_ok(w.buf, &h));
	records_set_log_append_time(w.buf, w.len, 1800000000000LL);
	assert_int_equal(records_batch_parse(w.buf, w.len, &h), 0);
	assert_true(h.attributes & RECORDS_ATTR_LOG_APPEND_TIME);
	assert_int_equal(h.max_timestamp, 1800000000000LL);
	assert_int_equal(h.base_timestamp, 1700000000000LL);
	assert_true(records_batch_crc_ok(w.buf, &h));
	wr_release(&w);
}

static void test_control(void **state)
{
	struct batch_hdr h;
	struct wr w;
	bool commit;
	int32_t coord_epoch;

	(void)state;
	for (int c = 0; c < 2; c++) {
		wr_init(&w);
		assert_int_equal(records_build_control(&w, 4242, 3, c == 1, 17, 1700000000000LL), 0);
		assert_int_equal(records_batch_parse(w.buf, w.len, &h), 0);
		assert_true(records_batch_crc_ok(w.buf, &h));
		assert_true(records_is_control(&h));
		assert_true(records_is_transactional(&h));
		assert_int_equal(h.producer_id, 4242);
		assert_int_equal(h.producer_epoch, 3);
		assert_int_equal(h.record_count, 1);
		assert_int_equal(h.last_offset_delta, 0);
		/* producers may not write control batches: Produce rejects them */
		assert_int_equal(validate(w.buf, w.len, 1 << 20), KERR_INVALID_RECORD);
		assert_int_equal(records_control_parse(w.buf, &h, &commit, &coord_epoch), 0);
		assert_int_equal(commit, c == 1);
		assert_int_equal(coord_epoch, 17);
		/* record layout: len, attr 0, tsDelta 0, offDelta 0, keyLen 4, key, valLen 6, val, 0 hdrs */
		{
			const uint8_t *r = w.buf + RECORDS_HDR_SIZE;
			static const uint8_t want[] = { 2 * 16, 0, 0, 0, 8, 0, 0, 0, 0, 12 };

			assert_memory_equal(r, want, 5);
			assert_int_equal(r[5 + 3], c == 1 ? 1 : 0);
			assert_int_equal(r[9], 12);
			assert_int_equal(w.len, RECORDS_HDR_SIZE + 1 + 16);
		}
		wr_release(&w);
	}
}

static int headers_seen; /* records_foreach() callback: header counts summed */

static int count_headers(void *arg, const struct record *rec)
{
	(void)arg;
	headers_seen += rec->header_count + (rec->headers.len ? 100 : 0);
	return 0;
}

/* records_header_next(): keys and values (a null one too), then the end; bad lengths stop it. */
static void test_headers(void **state)
{
	static const uint8_t hdrs[] = { 4, 'h', '1', 4, 'v', '1', 2, 'n', 1 };
	static const uint8_t bad[] = { 20, 'h', '1' };
	struct kstr key;
	struct bytes value;
	struct rd r;
	struct wr w;
	struct batch_hdr h;

	(void)state;
	rd_init(&r, hdrs, sizeof(hdrs));
	assert_true(records_header_next(&r, &key, &value));
	assert_int_equal(key.len, 2);
	assert_memory_equal(key.p, "h1", 2);
	assert_int_equal(value.len, 2);
	assert_memory_equal(value.p, "v1", 2);
	assert_true(records_header_next(&r, &key, &value));
	assert_int_equal(key.len, 1);
	assert_int_equal(value.len, -1);
	assert_false(records_header_next(&r, &key, &value));
	assert_int_equal(r.err, 0);
	rd_init(&r, bad, sizeof(bad));
	assert_false(records_header_next(&r, &key, &value));
	assert_int_not_equal(r.err, 0);
	/* records_build() writes no headers: count 0, no header bytes */
	build3(&w);
	assert_int_equal(records_batch_parse(w.buf, w.len, &h), 0);
	headers_seen = 0;
	assert_int_equal(records_foreach(w.buf, &h, count_headers, NULL), 0);
	assert_int_equal(headers_seen, 0);
	wr_release(&w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_build_parse), cmocka_unit_test(test_invalid), cmocka_unit_test(test_patch),
		cmocka_unit_test(test_control),     cmocka_unit_test(test_headers),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
