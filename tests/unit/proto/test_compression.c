/*
 * test_compression.c - the batch codecs (proto/codec.c): round trips of
 * each codec over sizes that cross the decoders' chunk and block edges,
 * batches librdkafka compressed (codec_fixtures.h), concatenated frames,
 * the xerial snappy stream, the output cap against decompression bombs,
 * truncated and corrupt input.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "codec_fixtures.h"
#include "proto/codec.h"
#include "proto/records.h"

#define BIG (300u << 10)

/* Text-like bytes: repetitive enough to compress, varied enough to matter. */
static uint8_t *sample(size_t n)
{
	uint8_t *p = malloc(n ? n : 1);
	uint32_t x = 12345;

	assert_non_null(p);
	for (size_t i = 0; i < n; i++) {
		x = x * 1103515245u + 12345u;
		p[i] = (i % 97 < 60) ? (uint8_t)('a' + i % 26) : (uint8_t)(x >> 16);
	}
	return p;
}

static void roundtrip(int codec, int level, size_t n)
{
	uint8_t *in = sample(n);
	struct wr c, d;

	wr_init(&c);
	wr_init(&d);
	assert_int_equal(codec_compress(codec, level, in, n, &c), 0);
	wr_raw(&d, "pre", 3); /* decompress appends */
	assert_int_equal(codec_decompress(codec, c.buf, c.len, &d, n), 0);
	assert_int_equal(d.len, n + 3);
	assert_memory_equal(d.buf, "pre", 3);
	if (n)
		assert_memory_equal(d.buf + 3, in, n);
	/* one byte short of the size: -EFBIG, and nothing appended */
	if (n) {
		assert_int_equal(codec_decompress(codec, c.buf, c.len, &d, n - 1), -EFBIG);
		assert_int_equal(d.len, n + 3);
	}
	wr_release(&c);
	wr_release(&d);
	free(in);
}

static void test_roundtrip(void **state)
{
	static const size_t sizes[] = { 0, 1, 100, 16384, 16385, 32768, 65537, BIG };

	(void)state;
	for (int codec = CODEC_GZIP; codec <= CODEC_MAX; codec++)
		for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
			roundtrip(codec, CODEC_LEVEL_DEFAULT, sizes[i]);
	for (int level = 0; level <= 9; level++)
		roundtrip(CODEC_GZIP, level, 70000);
	roundtrip(CODEC_LZ4, 1, 70000);
	roundtrip(CODEC_ZSTD, 19, 70000);
	assert_int_equal(codec_compress(CODEC_NONE, -1, (const uint8_t *)"x", 1, &(struct wr){ 0 }), -EINVAL);
	assert_int_equal(codec_decompress(5, (const uint8_t *)"x", 1, &(struct wr){ 0 }, 10), -EINVAL);
	/* a raw snappy block of nothing, into an empty writer (found by fuzz_records) */
	{
		struct wr d;

		wr_init(&d);
		assert_int_equal(codec_decompress(CODEC_SNAPPY, (const uint8_t *)"\0", 1, &d, 10), 0);
		assert_int_equal(d.len, 0);
		wr_release(&d);
	}
	assert_string_equal(codec_name(CODEC_ZSTD), "zstd");
	assert_string_equal(codec_name(7), "?");
}

struct seen {
	int n;
	int64_t offsets[8];
};

/* Checks the three fixture records after decompression and the time lookup. */
static void check_fixture(const uint8_t *batch, size_t len, int codec)
{
	struct batch_hdr h;
	struct wr d;
	int64_t off = -1, ts = -1;

	assert_int_equal(records_batch_parse(batch, len, &h), 0);
	assert_int_equal(h.attributes & RECORDS_ATTR_CODEC_MASK, codec);
	assert_true(records_batch_crc_ok(batch, &h));
	assert_int_equal(h.record_count, 3);
	wr_init(&d);
	assert_int_equal(codec_decompress(codec, batch + RECORDS_HDR_SIZE, len - RECORDS_HDR_SIZE, &d, 1 << 20), 0);
	assert_true(d.len > 3 * 45);
	for (int i = 0; i < 3; i++) {
		char k[3] = { 'k', (char)('0' + i), 0 };

		assert_non_null(memmem(d.buf, d.len, k, 2));
		assert_non_null(memmem(d.buf, d.len, "value-2-value-2-value-2-value-2-value-2-", 40));
	}
	wr_release(&d);
	assert_int_equal(records_find_time(batch, &h, 1700000000500LL, &off, &ts), 1);
	assert_int_equal(off, 1);
	assert_int_equal(ts, 1700000001000LL);
	assert_int_equal(records_find_time(batch, &h, 1700000002000LL, &off, &ts), 1);
	assert_int_equal(off, 2);
	assert_int_equal(records_find_time(batch, &h, 1699999999999LL, &off, &ts), 1);
	assert_int_equal(off, 0);
	assert_int_equal(records_find_time(batch, &h, 1700000002001LL, &off, &ts), 0);
}

static void test_librdkafka_fixtures(void **state)
{
	(void)state;
	check_fixture(fixture_gzip, sizeof(fixture_gzip), CODEC_GZIP);
	check_fixture(fixture_snappy, sizeof(fixture_snappy), CODEC_SNAPPY); /* a raw snappy block */
	check_fixture(fixture_lz4, sizeof(fixture_lz4), CODEC_LZ4);
	check_fixture(fixture_zstd, sizeof(fixture_zstd), CODEC_ZSTD);
}

/* Two compressed streams back to back decode as their concatenation. */
static void test_concatenated(void **state)
{
	uint8_t *a = sample(40000);

	(void)state;
	for (int codec = CODEC_GZIP; codec <= CODEC_MAX; codec++) {
		struct wr c, d;

		if (codec == CODEC_SNAPPY)
			continue; /* one xerial stream is already many blocks */
		wr_init(&c);
		wr_init(&d);
		assert_int_equal(codec_compress(codec, -1, a, 40000, &c), 0);
		assert_int_equal(codec_compress(codec, -1, a, 1000, &c), 0);
		assert_int_equal(codec_decompress(codec, c.buf, c.len, &d, 1 << 20), 0);
		assert_int_equal(d.len, 41000);
		assert_memory_equal(d.buf + 40000, a, 1000);
		wr_release(&c);
		wr_release(&d);
	}
	free(a);
}

static void test_xerial(void **state)
{
	static const uint8_t magic[8] = { 0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0 };
	uint8_t *a = sample(100000);
	struct wr c, d;

	(void)state;
	wr_init(&c);
	wr_init(&d);
	assert_int_equal(codec_compress(CODEC_SNAPPY, -1, a, 100000, &c), 0);
	assert_memory_equal(c.buf, magic, 8);
	/* four 32 KiB blocks: header, then the first block's length */
	assert_true(c.len > 16 + 4 * 4);
	assert_int_equal(codec_decompress(CODEC_SNAPPY, c.buf, c.len, &d, 100000), 0);
	assert_memory_equal(d.buf, a, 100000);
	/* a block length past the end */
	c.buf[16] = 0x7f;
	assert_int_equal(codec_decompress(CODEC_SNAPPY, c.buf, c.len, &d, 1 << 20), -EBADMSG);
	assert_int_equal(d.len, 100000);
	wr_release(&c);
	wr_release(&d);
	free(a);
}

/* 64 MiB of zeros in a few KiB must stop at the cap, not allocate it. */
static void test_bomb(void **state)
{
	size_t n = 64u << 20;
	uint8_t *zeros = calloc(1, n);

	(void)state;
	assert_non_null(zeros);
	for (int codec = CODEC_GZIP; codec <= CODEC_MAX; codec++) {
		struct wr c, d;

		wr_init(&c);
		wr_init(&d);
		assert_int_equal(codec_compress(codec, -1, zeros, n, &c), 0);
		assert_true(c.len < n / 15);
		assert_int_equal(codec_decompress(codec, c.buf, c.len, &d, 1 << 20), -EFBIG);
		assert_int_equal(d.len, 0);
		assert_true(d.cap <= (2u << 20));
		wr_release(&c);
		wr_release(&d);
	}
	free(zeros);
}

static void test_truncated_corrupt(void **state)
{
	uint8_t *a = sample(50000);

	(void)state;
	for (int codec = CODEC_GZIP; codec <= CODEC_MAX; codec++) {
		struct wr c, d;
		size_t cuts[] = { 0, 1, 5, 17, 0 };

		wr_init(&c);
		wr_init(&d);
		assert_int_equal(codec_compress(codec, -1, a, 50000, &c), 0);
		cuts[4] = c.len / 2;
		for (size_t i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++) {
			int rc = codec_decompress(codec, c.buf, c.len - 1 - cuts[i], &d, 1 << 20);

			if (rc != -EBADMSG)
				fail_msg("%s cut %zu: rc %d", codec_name(codec), 1 + cuts[i], rc);
			assert_int_equal(d.len, 0);
		}
		/* every single-byte flip: an error or wrong bytes, never a crash or overrun */
		for (size_t i = 0; i < c.len; i += 7) {
			c.buf[i] ^= 0x5a;
			if (codec_decompress(codec, c.buf, c.len, &d, 60000) == 0)
				assert_true(d.len <= 60000);
			d.len = 0;
			c.buf[i] ^= 0x5a;
		}
		wr_release(&c);
		wr_release(&d);
	}
	free(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip),    cmocka_unit_test(test_librdkafka_fixtures),
		cmocka_unit_test(test_concatenated), cmocka_unit_test(test_xerial),
		cmocka_unit_test(test_bomb),         cmocka_unit_test(test_truncated_corrupt),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
