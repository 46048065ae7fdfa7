/*
 * test_recompress.c - re-encoding batches with another codec: every codec
 * both ways keeps the header fields and the records, gives a correct CRC
 * and the codec bits asked for, and back to uncompressed gives the
 * original bytes; control batches and batches already in the codec are
 * copied; a bound on the re-encoded size is kept.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "proto/codec.h"
#include "proto/records.h"
#include "proto/recompress.h"

#define BIG (1u << 30)

static void build(struct wr *w)
{
	struct rec_kv kv[3] = {
		{ "k1", 2, "value-one value-one value-one", 29 },
		{ NULL, -1, "value-two", 9 },
		{ "k3", 2, NULL, -1 },
	};

	assert_int_equal(records_build(w, 0, 1700000000000, kv, 3), 0);
	assert_int_equal(records_build_control(w, 42, 3, true, 7, 1700000000001), 0);
}

static void check_codecs(const uint8_t *p, size_t len, int data_codec)
{
	struct batch_hdr h;

	for (size_t off = 0; off < len; off += (size_t)h.size) {
		assert_int_equal(records_batch_parse(p + off, len - off, &h), 0);
		assert_true(records_batch_crc_ok(p + off, &h));
		assert_int_equal(h.attributes & RECORDS_ATTR_CODEC_MASK, records_is_control(&h) ? 0 : data_codec);
	}
}

static void test_every_codec(void **state)
{
	struct wr orig, enc, back;
	struct batch_hdr h0, h1;

	(void)state;
	wr_init(&orig);
	build(&orig);
	assert_true(recompress_needed(orig.buf, orig.len, CODEC_GZIP));
	assert_false(recompress_needed(orig.buf, orig.len, CODEC_NONE));
	for (int codec = CODEC_GZIP; codec <= CODEC_MAX; codec++) {
		wr_init(&enc);
		wr_init(&back);
		assert_int_equal(recompress_blob(orig.buf, orig.len, codec, BIG, BIG, &enc), 0);
		check_codecs(enc.buf, enc.len, codec);
		assert_false(recompress_needed(enc.buf, enc.len, codec));
		assert_int_equal(records_batch_parse(orig.buf, orig.len, &h0), 0);
		assert_int_equal(records_batch_parse(enc.buf, enc.len, &h1), 0);
		assert_int_equal(h1.record_count, h0.record_count);
		assert_int_equal(h1.last_offset_delta, h0.last_offset_delta);
		assert_int_equal(h1.max_timestamp, h0.max_timestamp);
		assert_int_equal(h1.producer_id, h0.producer_id);
		assert_int_equal(recompress_blob(enc.buf, enc.len, CODEC_NONE, BIG, BIG, &back), 0);
		assert_int_equal(back.len, orig.len);
		assert_memory_equal(back.buf, orig.buf, orig.len);
		wr_release(&enc);
		wr_release(&back);
	}
	wr_release(&orig);
}

static void test_bounds(void **state)
{
	struct wr orig, enc;

	(void)state;
	wr_init(&orig);
	wr_init(&enc);
	build(&orig);
	assert_int_equal(recompress_blob(orig.buf, orig.len, CODEC_ZSTD, BIG, 40, &enc), -EMSGSIZE);
	assert_int_equal(enc.len, 0);
	assert_int_equal(recompress_blob(orig.buf, orig.len, CODEC_ZSTD, BIG, BIG, &enc), 0);
	wr_release(&enc);
	assert_int_equal(recompress_blob(orig.buf, 30, CODEC_ZSTD, BIG, BIG, &enc), -EBADMSG);
	wr_release(&enc);
	wr_release(&orig);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_codec),
		cmocka_unit_test(test_bounds),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
