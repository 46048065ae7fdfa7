/* test_msgset.c - legacy message sets (magic 0/1) to and from record batches v2. */
#include <errno.h>
#include <isa-l/crc.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "proto/codec.h"
#include "proto/msgset.h"
#include "proto/records.h"

/* Appends one legacy message with its CRC-32 (or a wrong one). */
static void msg(struct wr *w, int magic, int64_t offset, int8_t attr, int64_t ts, const char *key, const void *value,
		int32_t value_len, bool crc_ok)
{
	size_t start = w->len, crc_at;

	wr_i64(w, offset);
	wr_i32(w, 0);
	crc_at = wr_u32(w, 0);
	wr_i8(w, (int8_t)magic);
	wr_i8(w, attr);
	if (magic == 1)
		wr_i64(w, ts);
	wr_i32(w, key ? (int32_t)strlen(key) : -1);
	if (key)
		wr_raw(w, key, strlen(key));
	wr_i32(w, value ? value_len : -1);
	if (value)
		wr_raw(w, value, (size_t)value_len);
	wr_patch_i32(w, start + 8, (int32_t)(w->len - start - 12));
	wr_patch_u32(w, crc_at, crc32_gzip_refl(0, w->buf + crc_at + 4, w->len - crc_at - 4) ^ (crc_ok ? 0 : 1));
}

/* Three messages "k0".."k2" / "v0".."v2" (the first with a null key), timestamps ts + i. */
static void inner_set(struct wr *w, int magic, int64_t ts)
{
	static const char *const keys[] = { NULL, "k1", "k2" }, *const values[] = { "v0", "v1", "v2" };

	for (int i = 0; i < 3; i++)
		msg(w, magic, i, 0, ts + i, keys[i], values[i], 2, true);
}

struct got {
	int n;
	int64_t offset[8], ts[8];
	char key[8][4], value[8][4];
};

static int collect(void *arg, const struct record *rec)
{
	struct got *g = arg;

	g->offset[g->n] = rec->offset;
	g->ts[g->n] = rec->timestamp;
	snprintf(g->key[g->n], 4, "%.*s", rec->key.len > 0 ? rec->key.len : 0, rec->key.p ? (char *)rec->key.p : "");
	snprintf(g->value[g->n], 4, "%.*s", rec->value.len, (const char *)rec->value.p);
	g->n++;
	return 0;
}

/* Converts set to a batch and reads its records back; returns the batch codec. */
static int to_records(const struct wr *set, struct got *g)
{
	struct wr b, plain;
	struct batch_hdr h;
	int codec;

	wr_init(&b);
	wr_init(&plain);
	assert_int_equal(msgset_to_batch(set->buf, set->len, 1 << 20, &b), 0);
	assert_int_equal(records_batch_parse(b.buf, b.len, &h), 0);
	assert_int_equal((int64_t)b.len, h.size);
	assert_true(records_batch_crc_ok(b.buf, &h));
	assert_int_equal(h.producer_id, -1);
	codec = h.attributes & RECORDS_ATTR_CODEC_MASK;
	memset(g, 0, sizeof(*g));
	if (codec)
		assert_int_equal(codec_decompress(codec, b.buf + RECORDS_HDR_SIZE, (size_t)h.size - RECORDS_HDR_SIZE,
						  &plain, 1 << 20),
				 0);
	assert_int_equal(records_foreach_body(codec ? plain.buf : b.buf + RECORDS_HDR_SIZE,
					      codec ? plain.len : (size_t)h.size - RECORDS_HDR_SIZE, &h, collect, g),
			 0);
	wr_release(&b);
	wr_release(&plain);
	return codec;
}

static void test_plain(void **state)
{
	struct wr set;
	struct got g;

	(void)state;
	wr_init(&set);
	inner_set(&set, 0, -1);
	inner_set(&set, 1, 1700000000000LL);
	assert_true(msgset_is_legacy(set.buf, set.len));
	assert_int_equal(to_records(&set, &g), 0);
	assert_int_equal(g.n, 6);
	for (int i = 0; i < 6; i++) {
		assert_int_equal(g.offset[i], i);
		assert_int_equal(g.ts[i], i < 3 ? -1 : 1700000000000LL + i - 3);
		assert_int_equal(g.value[i][1], '0' + i % 3);
	}
	assert_string_equal(g.key[0], "");
	assert_string_equal(g.key[4], "k1");
	wr_release(&set);
}

/* Appends a wrapper of codec around the inner set of magic (lz4 with the standard header checksum). */
static void wrapper(struct wr *set, int magic, int codec, int8_t extra_attr, int64_t ts)
{
	struct wr inner, z;

	wr_init(&inner);
	wr_init(&z);
	inner_set(&inner, magic, ts);
	assert_int_equal(codec_compress(codec, CODEC_LEVEL_DEFAULT, inner.buf, inner.len, &z), 0);
	msg(set, magic, 2, (int8_t)(codec | extra_attr), ts + 2, NULL, z.buf, (int32_t)z.len, true);
	wr_release(&inner);
	wr_release(&z);
}

static void test_wrappers(void **state)
{
	(void)state;
	for (int magic = 0; magic <= 1; magic++)
		for (int codec = CODEC_GZIP; codec <= CODEC_LZ4; codec++) {
			struct wr set;
			struct got g;

			wr_init(&set);
			wrapper(&set, magic, codec, 0, 1000);
			wrapper(&set, magic, codec, 0, 2000);
			assert_int_equal(to_records(&set, &g), codec);
			assert_int_equal(g.n, 6);
			for (int i = 0; i < 6; i++) {
				assert_int_equal(g.offset[i], i);
				assert_int_equal(g.ts[i], magic ? (i < 3 ? 1000 : 2000) + i % 3 : -1);
			}
			wr_release(&set);
		}
}

static void test_log_append_time_wrapper(void **state)
{
	struct wr set;
	struct got g;

	(void)state;
	wr_init(&set);
	wrapper(&set, 1, CODEC_GZIP, 0x08, 5000); /* LogAppendTime: every inner message takes the wrapper's time */
	assert_int_equal(to_records(&set, &g), CODEC_GZIP);
	for (int i = 0; i < 3; i++)
		assert_int_equal(g.ts[i], 5002);
	wr_release(&set);
}

static void test_errors(void **state)
{
	struct wr set, out;
	uint8_t zstd[16] = { 0x28, 0xb5, 0x2f, 0xfd };

	(void)state;
	wr_init(&out);
	wr_init(&set);
	msg(&set, 0, 0, 0, -1, "k", "v", 1, false);
	assert_int_equal(msgset_to_batch(set.buf, set.len, 1 << 20, &out), -EBADMSG);
	set.len = 0;
	inner_set(&set, 1, 0);
	assert_int_equal(msgset_to_batch(set.buf, set.len - 1, 1 << 20, &out), -EBADMSG); /* truncated */
	set.len = 0;
	msg(&set, 1, 0, CODEC_ZSTD, 0, NULL, zstd, sizeof(zstd), true);
	assert_int_equal(msgset_to_batch(set.buf, set.len, 1 << 20, &out), -ENOTSUP);
	set.len = 0;
	msg(&set, 1, 0, 5, 0, NULL, zstd, sizeof(zstd), true);
	assert_int_equal(msgset_to_batch(set.buf, set.len, 1 << 20, &out), -EBADMSG);
	set.len = 0;
	wrapper(&set, 0, CODEC_GZIP, 0, -1);
	{ /* a wrapper inside a wrapper */
		struct wr z, outer;

		wr_init(&z);
		wr_init(&outer);
		assert_int_equal(codec_compress(CODEC_GZIP, CODEC_LEVEL_DEFAULT, set.buf, set.len, &z), 0);
		msg(&outer, 0, 0, CODEC_GZIP, -1, NULL, z.buf, (int32_t)z.len, true);
		assert_int_equal(msgset_to_batch(outer.buf, outer.len, 1 << 20, &out), -EINVAL);
		assert_int_equal(msgset_to_batch(outer.buf, outer.len, 10, &out), -EMSGSIZE); /* inflate cap */
		wr_release(&z);
		wr_release(&outer);
	}
	{ /* a wrapper around nothing */
		struct wr z, empty;

		wr_init(&z);
		wr_init(&empty);
		assert_int_equal(codec_compress(CODEC_SNAPPY, CODEC_LEVEL_DEFAULT, (const uint8_t *)"", 0, &z), 0);
		msg(&empty, 1, 0, CODEC_SNAPPY, 0, NULL, z.buf, (int32_t)z.len, true);
		assert_int_equal(msgset_to_batch(empty.buf, empty.len, 1 << 20, &out), -EBADMSG);
		wr_release(&z);
		wr_release(&empty);
	}
	assert_int_equal(out.len, 0);
	wr_release(&set);
	wr_release(&out);
}

/* Batch of codec holding "k0".."k2" at offsets 10..12 -> message set of magic from offset 11. */
static void test_from_batch(void **state)
{
	(void)state;
	for (int magic = 0; magic <= 1; magic++)
		for (int codec = CODEC_NONE; codec <= CODEC_LZ4; codec++) {
			struct wr set, b;
			struct batch_hdr h;
			struct got g;
			struct rec_kv kv[3] = { { "k0", 2, "v0", 2 }, { "k1", 2, "v1", 2 }, { "k2", 2, "v2", 2 } };
			int64_t ts[3] = { 100, 101, 102 };

			wr_init(&b);
			wr_init(&set);
			assert_int_equal(records_build_ts(&b, kv, ts, 3, codec), 0);
			records_set_base_offset(b.buf, 10);
			assert_int_equal(records_batch_parse(b.buf, b.len, &h), 0);
			assert_int_equal(msgset_from_batch(b.buf, &h, magic, 11, &set), 2);
			/* each outer message: offset, then magic at byte 16 */
			assert_int_equal(set.buf[16], magic);
			if (codec) /* one wrapper at the last offset */
				assert_int_equal(set.buf[7], 12);
			/* and back: what a legacy client would produce from it */
			assert_int_equal(to_records(&set, &g), codec);
			assert_int_equal(g.n, 2);
			assert_string_equal(g.key[0], "k1");
			assert_string_equal(g.value[1], "v2");
			assert_int_equal(g.ts[0], magic ? 101 : -1);
			wr_release(&b);
			wr_release(&set);
		}
}

static void test_lz4_magic0_header(void **state)
{
	struct wr set, b, plain;
	struct batch_hdr h;
	struct rec_kv kv[1] = { { "k", 1, "value", 5 } };
	int64_t ts[1] = { 1 };
	const uint8_t *frame;
	size_t frame_len;

	(void)state;
	wr_init(&b);
	wr_init(&set);
	wr_init(&plain);
	assert_int_equal(records_build_ts(&b, kv, ts, 1, CODEC_LZ4), 0);
	assert_int_equal(records_batch_parse(b.buf, b.len, &h), 0);
	assert_int_equal(msgset_from_batch(b.buf, &h, 0, 0, &set), 1);
	/* wrapper magic 0: 12 + crc 4 + magic 1 + attr 1 + key len 4 (null) + value len 4 = 26 */
	frame = set.buf + 26;
	frame_len = set.len - 26;
	assert_int_equal(codec_decompress(CODEC_LZ4, frame, frame_len, &plain, 1 << 20), -EBADMSG);
	wr_release(&set);
	assert_int_equal(msgset_from_batch(b.buf, &h, 1, 0, &set), 1);
	frame = set.buf + 34; /* magic 1: the standard checksum */
	assert_int_equal(codec_decompress(CODEC_LZ4, frame, set.len - 34, &plain, 1 << 20), 0);
	wr_release(&b);
	wr_release(&set);
	wr_release(&plain);
}

static void test_from_control_and_zstd(void **state)
{
	struct wr b, set;
	struct batch_hdr h;
	struct rec_kv kv[1] = { { "k", 1, "v", 1 } };
	int64_t ts[1] = { 1 };

	(void)state;
	wr_init(&b);
	wr_init(&set);
	assert_int_equal(records_build_control(&b, 7, 0, true, 0, 1), 0);
	assert_int_equal(records_batch_parse(b.buf, b.len, &h), 0);
	assert_int_equal(msgset_from_batch(b.buf, &h, 1, 0, &set), 0);
	assert_int_equal(set.len, 0);
	b.len = 0;
	assert_int_equal(records_build_ts(&b, kv, ts, 1, CODEC_ZSTD), 0);
	assert_int_equal(records_batch_parse(b.buf, b.len, &h), 0);
	assert_int_equal(msgset_from_batch(b.buf, &h, 1, 0, &set), -ENOTSUP);
	wr_release(&b);
	wr_release(&set);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plain),
		cmocka_unit_test(test_wrappers),
		cmocka_unit_test(test_log_append_time_wrapper),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_from_batch),
		cmocka_unit_test(test_lz4_magic0_header),
		cmocka_unit_test(test_from_control_and_zstd),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
