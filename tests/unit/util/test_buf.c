/*
 * test_buf.c - the bounds-checked reader and growable writer (util/buf.h).
 *
 * Varint and zigzag encodings are checked against hand-written bytes at
 * their edges (0, -1, INT32_MIN/MAX, INT64_MIN/MAX), then the reader's
 * sticky error, rd_count's rejections, writer growth and patching, and the
 * file-slice bookkeeping that sendfile relies on.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "util/buf.h"

struct vec {
	int64_t v;
	uint8_t b[10];
	size_t n;
};

static void test_varint(void **state)
{
	static const struct vec vecs[] = {
		{ 0, { 0x00 }, 1 },
		{ -1, { 0x01 }, 1 },
		{ 1, { 0x02 }, 1 },
		{ -64, { 0x7f }, 1 },
		{ 64, { 0x80, 0x01 }, 2 },
		{ INT32_MAX, { 0xfe, 0xff, 0xff, 0xff, 0x0f }, 5 },
		{ INT32_MIN, { 0xff, 0xff, 0xff, 0xff, 0x0f }, 5 },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(vecs) / sizeof(vecs[0]); i++) {
		struct wr w;
		struct rd r;

		wr_init(&w);
		wr_varint(&w, (int32_t)vecs[i].v);
		assert_int_equal(w.len, vecs[i].n);
		assert_memory_equal(w.buf, vecs[i].b, vecs[i].n);
		assert_int_equal(varint_size((int32_t)vecs[i].v), vecs[i].n);
		rd_init(&r, w.buf, w.len);
		assert_int_equal(rd_varint(&r), vecs[i].v);
		assert_int_equal(r.err, RD_OK);
		assert_int_equal(rd_left(&r), 0);
		wr_release(&w);
	}
}

static void test_varlong(void **state)
{
	static const struct vec vecs[] = {
		{ 0, { 0x00 }, 1 },
		{ -1, { 0x01 }, 1 },
		{ INT32_MIN, { 0xff, 0xff, 0xff, 0xff, 0x0f }, 5 },
		{ INT64_MAX, { 0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01 }, 10 },
		{ INT64_MIN, { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01 }, 10 },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(vecs) / sizeof(vecs[0]); i++) {
		struct wr w;
		struct rd r;

		wr_init(&w);
		wr_varlong(&w, vecs[i].v);
		assert_int_equal(w.len, vecs[i].n);
		assert_memory_equal(w.buf, vecs[i].b, vecs[i].n);
		assert_int_equal(varlong_size(vecs[i].v), vecs[i].n);
		rd_init(&r, w.buf, w.len);
		assert_true(rd_varlong(&r) == vecs[i].v);
		assert_int_equal(r.err, RD_OK);
		assert_int_equal(rd_left(&r), 0);
		wr_release(&w);
	}
}

static void test_uvarint(void **state)
{
	static const struct vec vecs[] = {
		{ 0, { 0x00 }, 1 },
		{ 127, { 0x7f }, 1 },
		{ 128, { 0x80, 0x01 }, 2 },
		{ 300, { 0xac, 0x02 }, 2 },
		{ UINT32_MAX, { 0xff, 0xff, 0xff, 0xff, 0x0f }, 5 },
	};
	static const uint8_t too_long[] = { 0x80, 0x80, 0x80, 0x80, 0x80, 0x00 };
	static const uint8_t cut[] = { 0x80, 0x80 };
	struct rd r;

	(void)state;
	for (size_t i = 0; i < sizeof(vecs) / sizeof(vecs[0]); i++) {
		struct wr w;

		wr_init(&w);
		wr_uvarint(&w, (uint32_t)vecs[i].v);
		assert_int_equal(w.len, vecs[i].n);
		assert_memory_equal(w.buf, vecs[i].b, vecs[i].n);
		assert_int_equal(uvarint_size((uint32_t)vecs[i].v), vecs[i].n);
		rd_init(&r, w.buf, w.len);
		assert_int_equal(rd_uvarint(&r), (uint32_t)vecs[i].v);
		assert_int_equal(r.err, RD_OK);
		wr_release(&w);
	}
	rd_init(&r, too_long, sizeof(too_long));
	assert_int_equal(rd_uvarint(&r), 0);
	assert_int_equal(r.err, RD_INVALID);
	rd_init(&r, cut, sizeof(cut));
	assert_int_equal(rd_uvarint(&r), 0);
	assert_int_equal(r.err, RD_UNDERFLOW);
}

static void test_fixed_be(void **state)
{
	static const uint8_t in[] = { 0x81, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x01 };
	struct rd r;

	(void)state;
	rd_init(&r, in, sizeof(in));
	assert_int_equal(rd_i16(&r), (int16_t)0x8102);
	assert_int_equal(rd_u16(&r), 0x0304);
	assert_int_equal(rd_i32(&r), 0x05060708);
	assert_true(rd_bool(&r));
	assert_int_equal(r.err, RD_OK);
	rd_init(&r, in, sizeof(in));
	assert_true(rd_i64(&r) == (int64_t)0x8102030405060708ull);
	assert_int_equal(rd_i8(&r), 1);
}

static void test_rd_sticky(void **state)
{
	static const uint8_t in[] = { 0x00, 0x01, 0x02, 0x03, 0x04, 0x05 };
	struct bytes b;
	struct rd r;

	(void)state;
	rd_init(&r, in, 2);
	assert_int_equal(rd_i32(&r), 0); /* underflow: 0, err set */
	assert_int_equal(r.err, RD_UNDERFLOW);
	assert_int_equal(rd_left(&r), 0);
	/* later reads keep failing, even when bytes would exist */
	r.end = in + sizeof(in);
	assert_int_equal(rd_i8(&r), 0);
	assert_false(rd_view(&r, 1, &b));
	assert_null(b.p);
	assert_int_equal(b.len, 0);
	rd_fail(&r, RD_INVALID); /* first failure wins */
	assert_int_equal(r.err, RD_UNDERFLOW);

	rd_init(&r, in, sizeof(in));
	assert_true(rd_view(&r, 6, &b));
	assert_ptr_equal(b.p, in);
	assert_int_equal(b.len, 6);
	assert_false(rd_skip(&r, 1));
	assert_int_equal(r.err, RD_UNDERFLOW);
}

static void test_rd_count(void **state)
{
	static const uint8_t in[16];
	struct rd r;

	(void)state;
	rd_init(&r, in, sizeof(in));
	assert_int_equal(rd_count(&r, -1, 4, true), -1);
	assert_int_equal(r.err, RD_OK);
	assert_int_equal(rd_count(&r, 4, 4, false), 4); /* exactly fits */
	assert_int_equal(rd_count(&r, 0, 4, false), 0);
	assert_int_equal(rd_count(&r, 1000, 0, false), 1000); /* no size check */
	assert_int_equal(r.err, RD_OK);

	assert_int_equal(rd_count(&r, 5, 4, false), 0); /* too many for 16 bytes */
	assert_int_equal(r.err, RD_INVALID);

	rd_init(&r, in, sizeof(in));
	assert_int_equal(rd_count(&r, -1, 4, false), 0); /* null, not nullable */
	assert_int_equal(r.err, RD_INVALID);
	rd_init(&r, in, sizeof(in));
	assert_int_equal(rd_count(&r, -2, 4, true), 0);
	assert_int_equal(r.err, RD_INVALID);
	rd_init(&r, in, sizeof(in));
	assert_int_equal(rd_count(&r, INT32_MAX, 1, false), 0);
	assert_int_equal(r.err, RD_INVALID);
	rd_init(&r, in, sizeof(in));
	assert_int_equal(rd_count(&r, INT32_MIN, 1, true), 0);
	assert_int_equal(r.err, RD_INVALID);
	/* after an error every count is 0 */
	assert_int_equal(rd_count(&r, 1, 1, false), 0);
	assert_int_equal(rd_count(&r, -1, 1, true), 0);
}

static void test_wr_growth(void **state)
{
	struct wr w;
	struct rd r;
	size_t at;

	(void)state;
	wr_init(&w);
	at = wr_i32(&w, 0);
	assert_int_equal(at, 0);
	for (int32_t i = 0; i < 10000; i++)
		assert_int_equal(wr_i32(&w, i), 4 + 4 * (size_t)i);
	assert_int_equal(w.err, 0);
	assert_int_equal(w.len, 40004);
	assert_true(w.cap >= w.len);
	wr_patch_i32(&w, at, -2);
	wr_patch_i32(&w, w.len - 2, 7); /* out of range: ignored */
	rd_init(&r, w.buf, w.len);
	assert_int_equal(rd_i32(&r), -2);
	for (int32_t i = 0; i < 10000; i++)
		assert_int_equal(rd_i32(&r), i);
	assert_int_equal(r.err, RD_OK);
	assert_int_equal(wr_total(&w), 40004);
	wr_raw(&w, NULL, 0);
	assert_int_equal(w.len, 40004);
	wr_release(&w);
	assert_null(w.buf);
	assert_int_equal(w.len, 0);
}

static void test_wr_file(void **state)
{
	struct fdref *ref = fdref_new(open("/dev/null", O_RDONLY));
	struct fslice s = { ref, 100, 4096 };
	struct fslice empty = { ref, 0, 0 };
	struct wr w;

	(void)state;
	assert_non_null(ref);
	wr_init(&w);
	wr_raw(&w, "abc", 3);
	wr_file(&w, &s);
	wr_file(&w, &empty); /* zero-length slices are dropped */
	wr_i8(&w, 1);
	s.pos = 5000;
	s.len = 10;
	wr_file(&w, &s);
	assert_int_equal(w.err, 0);
	assert_int_equal(w.len, 4);
	assert_int_equal(w.nfiles, 2);
	assert_int_equal(w.files[0].at, 3);
	assert_int_equal(w.files[0].s.pos, 100);
	assert_int_equal(w.files[0].s.len, 4096);
	assert_int_equal(w.files[1].at, 4);
	assert_int_equal(w.files[1].s.pos, 5000);
	assert_int_equal(w.file_bytes, 4106);
	assert_int_equal(wr_total(&w), 4110);
	assert_int_equal(ref->refs, 3);
	for (int i = 0; i < 20; i++) /* growth of the slice array */
		wr_file(&w, &s);
	assert_int_equal(w.nfiles, 22);
	assert_int_equal(ref->refs, 23);
	wr_release(&w);
	assert_int_equal(ref->refs, 1);
	fdref_put(ref);
}

static void test_kstr(void **state)
{
	(void)state;
	assert_true(kstr_eq(KSTR_NULL, kstr_c(NULL)));
	assert_false(kstr_eq(KSTR_NULL, KSTR("")));
	assert_true(kstr_eq_c(KSTR("abc"), "abc"));
	assert_false(kstr_eq_c(KSTR("abc"), "abd"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_varint),    cmocka_unit_test(test_varlong),   cmocka_unit_test(test_uvarint),
		cmocka_unit_test(test_fixed_be),  cmocka_unit_test(test_rd_sticky), cmocka_unit_test(test_rd_count),
		cmocka_unit_test(test_wr_growth), cmocka_unit_test(test_wr_file),   cmocka_unit_test(test_kstr),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
