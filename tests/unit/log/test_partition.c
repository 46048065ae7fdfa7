/*
 * test_partition.c - the partition log: append/read across rolls, fetch
 * limits, reopen, crash recovery, index rebuild, time lookups, retention,
 * DeleteRecords, sync from another thread, write fault injection, a
 * follower's byte-for-byte append.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "../tmpdir.h"

#include "log/partition.h"
#include "log/segment.h"
#include "proto/records.h"

struct fx {
	char root[64];
	char dir[128];
	struct part_cfg cfg;
};

static int fx_setup(void **state)
{
	struct fx *fx = calloc(1, sizeof(*fx));

	tmpdir_make(fx->root, sizeof(fx->root), "log");
	snprintf(fx->dir, sizeof(fx->dir), "%s/topic-0", fx->root);
	part_cfg_default(&fx->cfg);
	fx->cfg.retention_ms = -1;
	*state = fx;
	return 0;
}

static int fx_teardown(void **state)
{
	struct fx *fx = *state;

	tmpdir_remove(fx->root);
	free(fx);
	return 0;
}

/* Builds one batch of n records of vlen-byte values with timestamp ts. */
static void mk_batch(struct wr *w, int n, int vlen, int64_t ts)
{
	struct rec_kv kv[64];
	static char val[4096];

	assert_true(n <= 64 && vlen <= (int)sizeof(val));
	memset(val, 'x', sizeof(val));
	for (int i = 0; i < n; i++)
		kv[i] = (struct rec_kv){ "key", 3, val, vlen };
	wr_init(w);
	assert_int_equal(records_build(w, 0, ts, kv, n), 0);
}

static int64_t append1(struct part *part, int n, int vlen, int64_t ts)
{
	struct part_append_info info;
	struct wr w;

	mk_batch(&w, n, vlen, ts);
	assert_int_equal(part_append(part, w.buf, w.len, ts, &info), 0);
	assert_int_equal(info.last_offset - info.base_offset + 1, n);
	wr_release(&w);
	return info.base_offset;
}

/* Reads the batch header at the start of a slice. */
static void slice_hdr(const struct fslice *s, struct batch_hdr *h)
{
	uint8_t buf[RECORDS_HDR_SIZE];

	assert_true(s->len >= RECORDS_HDR_SIZE);
	assert_int_equal(pread(s->ref->fd, buf, sizeof(buf), s->pos), (ssize_t)sizeof(buf));
	assert_int_equal(records_hdr_parse(buf, sizeof(buf), h), 0);
}

/*
 * Walks every whole batch of a slice, checking CRCs; returns their number.
 * A slice may end inside a batch (part_read cuts by bytes, as Kafka does).
 */
static int slice_check(const struct fslice *s, int64_t *first, int64_t *last)
{
	uint8_t *buf = malloc((size_t)s->len);
	int64_t off = 0;
	int n = 0;

	assert_int_equal(pread(s->ref->fd, buf, (size_t)s->len, s->pos), (ssize_t)s->len);
	while (off < s->len) {
		struct batch_hdr h;
		int rc = records_batch_parse(buf + off, (size_t)(s->len - off), &h);

		if (rc == -EAGAIN && n > 0)
			break; /* a partial trailing batch */
		assert_int_equal(rc, 0);
		assert_true(records_batch_crc_ok(buf + off, &h));
		if (n == 0)
			*first = h.base_offset;
		*last = records_last_offset(&h);
		off += h.size;
		n++;
	}
	free(buf);
	return n;
}

static int64_t file_size(const char *dir, int64_t base, const char *ext)
{
	char path[256];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%020lld%s", dir, (long long)base, ext);
	return stat(path, &st) < 0 ? -1 : st.st_size;
}

/* Runs part_open with stderr captured; true if the log output contains needle. */
static bool open_logged(struct fx *fx, int64_t rp, struct part **part, const char *needle)
{
	char path[256], out[8192];
	int saved = dup(2), fd, n;
	bool found;

	snprintf(path, sizeof(path), "%s/stderr.txt", fx->root);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	fflush(stderr);
	dup2(fd, 2);
	assert_int_equal(part_open(fx->dir, &fx->cfg, rp, 0, part), 0);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	n = (int)pread(fd, out, sizeof(out) - 1, 0);
	close(fd);
	out[n > 0 ? n : 0] = '\0';
	fputs(out, stderr);
	found = strstr(out, needle) != NULL;
	return found;
}

static void test_append_read_roll(void **state)
{
	struct fx *fx = *state;
	struct part *part;
	struct fslice s;
	struct batch_hdr h;

	fx->cfg.segment_bytes = 2048;
	fx->cfg.index_interval_bytes = 300;
	assert_int_equal(part_open(fx->dir, &fx->cfg, -1, 0, &part), 0);
	for (int i = 0; i < 100; i++)
		assert_int_equal(append1(part, 2, 100, 1000 + i), 2 * i);
	assert_int_equal(part_log_end_offset(part), 200);
	assert_int_equal(part_high_watermark(part), 0); /* hw_on_sync: nothing synced yet */
	assert_int_equal(part_synced_bytes(part), 0);
	assert_int_equal(part_sync(part), 0);
	assert_int_equal(part_high_watermark(part), 200);
	assert_int_equal(part_recovery_point(part), 200);
	assert_int_equal(part_synced_bytes(part), part_size_bytes(part)); /* every byte appended, once */
	assert_true(part_segment_count(part) > 5);
	for (int64_t o = 0; o < 200; o++) {
		assert_int_equal(part_read(part, o, 200, 1, true, &s), 0);
		slice_hdr(&s, &h);
		assert_int_equal(h.base_offset, o & ~1LL);
		assert_int_equal(h.record_count, 2);
		assert_int_equal(h.leader_epoch, 0);
		fdref_put(s.ref);
	}
	/* a large read stays within one segment and returns whole batches */
	assert_int_equal(part_read(part, 0, 200, 1 << 20, false, &s), 0);
	{
		int64_t first, last;
		int n = slice_check(&s, &first, &last);

		assert_int_equal(first, 0);
		assert_true(n > 1 && last + 1 == 2 * n);
		assert_true(s.len <= 2048);
	}
	fdref_put(s.ref);
	assert_int_equal(part_read(part, 200, 200, 100, true, &s), 0);
	assert_int_equal(s.len, 0);
	assert_null(s.ref);
	assert_int_equal(part_read(part, 201, 201, 100, true, &s), -ERANGE);
	assert_true(file_size(fx->dir, 0, ".log") > 0);
	assert_true(file_size(fx->dir, 0, ".index") > 0);
	assert_true(file_size(fx->dir, 0, ".timeindex") > 0);
	part_close(part);
}

/* segment.ms counts the broker's clock from the first append, not batch timestamps. */
static void test_roll_clock(void **state)
{
	struct fx *fx = *state;
	struct part_append_info info;
	struct part *part;
	int64_t now = 1800000000000LL;
	struct wr w;

	fx->cfg.segment_ms = 1000;
	assert_int_equal(part_open(fx->dir, &fx->cfg, -1, 0, &part), 0);
	for (int i = 0; i < 10; i++) {
		mk_batch(&w, 1, 10, now - 100LL * 86400000 + i * 8LL * 86400000); /* 8 days apart */
		assert_int_equal(part_append(part, w.buf, w.len, now + i, &info), 0);
		wr_release(&w);
	}
	assert_int_equal(part_segment_count(part), 1);
	mk_batch(&w, 1, 10, now);
	assert_int_equal(part_append(part, w.buf, w.len, now + 1000, &info), 0); /* 1000 ms: not past */
	assert_int_equal(part_segment_count(part), 1);
	assert_int_equal(part_append(part, w.buf, w.len, now + 1001, &info), 0);
	assert_int_equal(part_segment_count(part), 2);
	assert_int_equal(info.base_offset, 11);
	wr_release(&w);
	part_close(part);
}

static void test_read_limits(void **state)
{
	struct fx *fx = *state;
	struct part *part;
	struct fslice s;
	int64_t first, last;
	struct batch_hdr h;

	assert_int_equal(part_open(fx->dir, &fx->cfg, -1, 0, &part), 0);
	for (int i = 0; i < 5; i++)
		append1(part, 3, 50, 1000);
	/* max_offset 6: batches 0-2 and 3-5 only */
	assert_int_equal(part_read(part, 0, 6, 1 << 20, true, &s), 0);
	assert_int_equal(slice_check(&s, &first, &last), 2);
	assert_int_equal(last, 5);
	fdref_put(s.ref);
	/* max_offset 5 cuts the second batch (whole batches below it only) */
	assert_int_equal(part_read(part, 0, 5, 1 << 20, true, &s), 0);
	assert_int_equal(slice_check(&s, &first, &last), 1);
	fdref_put(s.ref);
	/* an offset in the middle of a batch starts at the batch */
	assert_int_equal(part_read(part, 4, 15, 1 << 20, true, &s), 0);
	assert_int_equal(slice_check(&s, &first, &last), 4);
	assert_int_equal(first, 3);
	assert_int_equal(last, 14);
	fdref_put(s.ref);
	/* max_bytes below one batch: min_one gives it, otherwise nothing */
	assert_int_equal(part_read(part, 0, 15, 10, true, &s), 0);
	assert_int_equal(slice_check(&s, &first, &last), 1);
	slice_hdr(&s, &h);
	assert_int_equal(s.len, h.size);
	fdref_put(s.ref);
	assert_int_equal(part_read(part, 0, 15, 10, false, &s), 0);
	assert_int_equal(s.len, 0);
	/* max_bytes of exactly two batches */
	assert_int_equal(part_read(part, 0, 15, (int32_t)(2 * h.size + 5), false, &s), 0);
	assert_int_equal(slice_check(&s, &first, &last), 2);
	fdref_put(s.ref);
	/* below max_offset: offset == max_offset gives nothing */
	assert_int_equal(part_read(part, 9, 9, 1 << 20, true, &s), 0);
	assert_int_equal(s.len, 0);
	assert_int_equal(part_read(part, -1, 15, 100, true, &s), -ERANGE);
	part_close(part);
}

static void test_reopen(void **state)
{
	struct fx *fx = *state;
	struct part *part;
	struct fslice s;
	struct batch_hdr h;
	char path[256], buf[64];
	FILE *f;

	fx->cfg.segment_bytes = 4096;
	fx->cfg.index_interval_bytes = 200;
	assert_int_equal(part_open(fx->dir, &fx->cfg, -1, 3, &part), 0);
	for (int i = 0; i < 60; i++)
		append1(part, 1, 200, 5000 + i);
	int nsegs = part_segment_count(part);
	part_close(part);
	for (int pass = 0; pass < 2; pass++) {
		assert_int_equal(part_open(fx->dir, &fx->cfg, pass ? -1 : INT64_MAX, 3, &part), 0);
		assert_int_equal(part_log_end_offset(part), 60 + pass * 1);
		assert_int_equal(part_segment_count(part), nsegs + pass);
		assert_int_equal(part_log_start_offset(part), 0);
		for (int64_t o = 0; o < part_log_end_offset(part); o++) {
			assert_int_equal(part_read(part, o, INT64_MAX, 1, true, &s), 0);
			slice_hdr(&s, &h);
			assert_int_equal(h.base_offset, o);
			assert_int_equal(h.leader_epoch, 3);
			fdref_put(s.ref);
		}
		if (!pass)
			assert_int_equal(append1(part, 1, 10, 9000), 60);
		part_close(part);
	}
	snprintf(path, sizeof(path), "%s/leader-epoch-checkpoint", fx->dir);
	f = fopen(path, "r");
	assert_non_null(f);
	buf[fread(buf, 1, sizeof(buf) - 1, f)] = '\0';
	fclose(f);
	assert_string_equal(buf, "0\n1\n3 0\n");
	/* a new epoch starts at the LEO */
	assert_int_equal(part_open(fx->dir, &fx->cfg, INT64_MAX, 5, &part), 0);
	{
		int32_t e;
		int64_t end;

		assert_true(part_epoch_end_offset(part, 4, &e, &end));
		assert_int_equal(e, 3);
		assert_int_equal(end, 61);
	}
	part_close(part);
	f = fopen(path, "r");
	buf[fread(buf, 1, sizeof(buf) - 1, f)] = '\0';
	fclose(f);
	assert_string_equal(buf, "0\n2\n3 0\n5 61\n");
}

static void test_recover_garbage_tail(void **state)
{
	struct fx *fx = *state;
	struct part *part;
	char path[256];
	int64_t size;
	int fd;

	assert_int_equal(part_open(fx->dir, &fx->cfg, -1, 0, &part), 0);
	for (int i = 0; i < 10; i++)
		append1(part, 2, 100, 1000);
	part_close(part);
	size = file_size(fx->dir, 0, ".log");
	snprintf(path, sizeof(path), "%s/%020d.log", fx->dir, 0);
	fd = open(path, O_WRONLY | O_APPEND);
	assert_int_equal(write(fd, "garbage garbage garbage garbage garbage garbage garbage garbage!", 64), 64);
	close(fd);
	assert_true(open_logged(fx, 10, &part, "truncating 64 bytes"));
	assert_int_equal(part_log_end_offset(part), 20);
	assert_int_equal(file_size(fx->dir, 0, ".log"), size);
	assert_int_equal(append1(part, 1, 10, 1000), 20);
	part_close(part);
	/* even a caller claiming a clean shutdown gets the tail checked */
	fd = open(path, O_WRONLY | O_APPEND);
	assert_int_equal(write(fd, "\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0", 30), 30);
	close(fd);
	assert_true(open_logged(fx, INT64_MAX, &part, "truncating 30 bytes"));
	assert_int_equal(part_log_end_offset(part), 21);
	part_close(part);
}

static void test_recover_torn_batch(void **state)
{
	struct fx *fx = *state;
	struct part *part;
	char path[256];
	int64_t size;

	fx->cfg.segment_bytes = 1500;
	assert_int_equal(part_open(fx->dir, &fx->cfg, -1, 0, &part), 0);
	for (int i = 0; i < 30; i++)
		append1(part, 1, 100, 1000);
	int64_t active = 0;
	for (int64_t o = 0; o < 30; o++)
		if (file_size(fx->dir, o, ".log") >= 0)
			active = o;
	part_close(part);
	size = file_size(fx->dir, active, ".log");
	snprintf(path, sizeof(path), "%s/%020lld.log", fx->dir, (long long)active);
	assert_int_equal(truncate(path, size - 10), 0);
	assert_true(open_logged(fx, -1, &part, "torn batch"));
	assert_int_equal(part_log_end_offset(part), 29);
	assert_true(file_size(fx->dir, active, ".log") < size - 10);
	part_close(part);
	/* a flipped bit in the payload of the last batch: CRC catches it past the recovery point */
	size = file_size(fx->dir, active, ".log");
	{
		int fd = open(path, O_RDWR);
		uint8_t b;

		assert_int_equal(pread(fd, &b, 1, size - 5), 1);
		b ^= 1;
		assert_int_equal(pwrite(fd, &b, 1, size - 5), 1);
		close(fd);
	}
	assert_true(open_logged(fx, 20, &part, "crc mismatch"));
	assert_int_equal(part_log_end_offset(part), 28);
	part_close(part);
}

static void test_index_rebuild(void **state)
{
	struct fx *fx = *state;
	struct part *part;
	char path[256];
	int64_t isize, tsize;
	struct fslice s;
	struct batch_hdr h;

	fx->cfg.index_interval_bytes = 100;
	assert_int_equal(part_open(fx->dir, &fx->cfg, -1, 0, &part), 0);
	for (int i = 0; i < 50; i++)
		append1(part, 1, 100, 1000 + i);
	part_close(part);
	isize = file_size(fx->dir, 0, ".index");
	tsize = file_size(fx->dir, 0, ".timeindex");
	assert_true(isize >= 8 * 40);
	assert_true(tsize >= 12 * 40);
	snprintf(path, sizeof(path), "%s/%020d.index", fx->dir, 0);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(part_open(fx->dir, &fx->cfg, INT64_MAX, 0, &part), 0);
	assert_int_equal(part_log_end_offset(part), 50);
	for (int64_t o = 0; o < 50; o++) {
		assert_int_equal(part_read(part, o, 50, 1, true, &s), 0);
		slice_hdr(&s, &h);
		assert_int_equal(h.base_offset, o);
		fdref_put(s.ref);
	}
	part_close(part);
	assert_int_equal(file_size(fx->dir, 0, ".index"), isize);
	/* garbage in the index: detected and rebuilt */
	{
		int fd = open(path, O_WRONLY);

		assert_int_equal(pwrite(fd, "\x7f\x7f\x7f\x7f\x7f\x7f\x7f\x7f", 8, 8), 8);
		close(fd);
	}
	assert_true(open_logged(fx, INT64_MAX, &part, "index or tail inconsistent"));
	assert_int_equal(part_log_end_offset(part), 50);
	part_close(part);
	assert_int_equal(file_size(fx->dir, 0, ".index"), isize);
	assert_int_equal(file_size(fx->dir, 0, ".timeindex"), tsize);
}

static void test_offset_for_time(void **state)
{
	struct fx *fx = *state;
	struct part *part;
	int64_t off, ts;

	fx->cfg.segment_bytes = 1000;
	fx->cfg.index_interval_bytes = 100;
	assert_int_equal(part_open(fx->dir, &fx->cfg, -1, 0, &part), 0);
	assert_int_equal(part_max_timestamp(part, &off, &ts), 0);
	assert_int_equal(off, -1);
	for (int i = 1; i <= 40; i++)
		append1(part, 2, 80, 1000 * i);
	assert_true(part_segment_count(part) > 3);
	for (int reopen = 0; reopen < 2; reopen++) {
		assert_int_equal(part_offset_for_time(part, 0, &off, &ts), 0);
		assert_int_equal(off, 0);
		assert_int_equal(ts, 1000);
		assert_int_equal(part_offset_for_time(part, 2500, &off, &ts), 0);
		assert_int_equal(off, 4);
		assert_int_equal(ts, 3000);
		for (int i = 1; i <= 40; i++) {
			assert_int_equal(part_offset_for_time(part, 1000 * i, &off, &ts), 0);
			assert_int_equal(off, 2 * (i - 1));
			assert_int_equal(part_offset_for_time(part, 1000 * i - 1, &off, &ts), 0);
			assert_int_equal(off, 2 * (i - 1));
		}
		assert_int_equal(part_offset_for_time(part, 40001, &off, &ts), 0);
		assert_int_equal(off, -1);
		assert_int_equal(part_max_timestamp(part, &off, &ts), 0);
		assert_int_equal(ts, 40000);
		assert_int_equal(off, 79);
		part_close(part);
		assert_int_equal(part_open(fx->dir, &fx->cfg, INT64_MAX, 0, &part), 0);
	}
	part_close(part);
}

/*
 * Batches stored with maxTimestamp -1 (Produce corrects it now; older data
 * on disk may have it): time lookups read their records, live, after a
 * clean reopen (offset index without time entries) and after a rebuild.
 */
static void test_offset_for_time_unknown_max(void **state)
{
	struct fx *fx = *state;
	struct part_append_info info;
	struct part *part;
	int64_t off, ts;

	fx->cfg.segment_bytes = 1000;
	fx->cfg.index_interval_bytes = 100;
	assert_int_equal(part_open(fx->dir, &fx->cfg, -1, 0, &part), 0);
	for (int i = 1; i <= 40; i++) {
		struct wr w;

		mk_batch(&w, 2, 80, 1000 * i);
		records_set_max_timestamp(w.buf, w.len, -1);
		assert_int_equal(part_append(part, w.buf, w.len, 1000 * i, &info), 0);
		wr_release(&w);
	}
	assert_true(part_segment_count(part) > 3);
	for (int round = 0; round < 3; round++) {
		for (int i = 1; i <= 40; i++) {
			assert_int_equal(part_offset_for_time(part, 1000 * i - 500, &off, &ts), 0);
			assert_int_equal(off, 2 * (i - 1));
			assert_int_equal(ts, 1000 * i);
		}
		assert_int_equal(part_offset_for_time(part, 40001, &off, &ts), 0);
		assert_int_equal(off, -1);
		assert_int_equal(ts, -1);
		part_close(part);
		/* round 0: a clean reopen; round 1: everything rescanned as after a crash */
		assert_int_equal(part_open(fx->dir, &fx->cfg, round == 0 ? INT64_MAX : -1, 0, &part), 0);
	}
	part_close(part);
}

static void test_retention_bytes(void **state)
{
	struct fx *fx = *state;
	struct part *part;
	struct fslice s;
	struct batch_hdr h;
	int64_t seg_size;
	int n;

	fx->cfg.segment_bytes = 1000;
	assert_int_equal(part_open(fx->dir, &fx->cfg, -1, 0, &part), 0);
	for (int i = 0; i < 40; i++)
		append1(part, 1, 100, 1000);
	n = part_segment_count(part);
	seg_size = file_size(fx->dir, 0, ".log");
	assert_true(n > 4);
	assert_int_equal(part_read(part, 0, 40, 1 << 20, true, &s), 0);
	fx->cfg.retention_bytes = 2 * seg_size + 1;
	part_set_cfg(part, &fx->cfg);
	assert_int_equal(part_retain(part, 2000), n - 3);
	assert_int_equal(part_segment_count(part), 3);
	assert_true(part_size_bytes(part) <= fx->cfg.retention_bytes + seg_size);
	assert_true(part_log_start_offset(part) > 0);
	assert_int_equal(file_size(fx->dir, 0, ".log"), -1);
	assert_int_equal(file_size(fx->dir, 0, ".index"), -1);
	/* the slice of the deleted segment is still readable through its fdref */
	slice_hdr(&s, &h);
	assert_int_equal(h.base_offset, 0);
	{
		int64_t first, last;

		assert_true(slice_check(&s, &first, &last) > 1);
	}
	fdref_put(s.ref);
	assert_int_equal(part_read(part, 0, 40, 100, true, &s), -ERANGE);
	assert_int_equal(part_read(part, part_log_start_offset(part), 40, 100, true, &s), 0);
	slice_hdr(&s, &h);
	assert_int_equal(h.base_offset, part_log_start_offset(part));
	fdref_put(s.ref);
	/* retention never deletes the active segment */
	fx->cfg.retention_bytes = 0;
	part_set_cfg(part, &fx->cfg);
	part_retain(part, 2000);
	assert_int_equal(part_segment_count(part), 1);
	assert_int_equal(part_log_end_offset(part), 40);
	int64_t ls = part_log_start_offset(part);
	part_close(part);
	assert_int_equal(part_open(fx->dir, &fx->cfg, INT64_MAX, 0, &part), 0);
	assert_int_equal(part_log_start_offset(part), ls);
	assert_int_equal(part_log_end_offset(part), 40);
	part_close(part);
}

static void test_retention_time(void **state)
{
	struct fx *fx = *state;
	struct part *part;

	fx->cfg.segment_bytes = 1000;
	assert_int_equal(part_open(fx->dir, &fx->cfg, -1, 0, &part), 0);
	for (int i = 0; i < 20; i++)
		append1(part, 1, 100, 1000);
	int64_t old_leo = part_log_end_offset(part);
	for (int i = 0; i < 20; i++)
		append1(part, 1, 100, 100000);
	int n = part_segment_count(part);
	fx->cfg.retention_ms = 10000;
	part_set_cfg(part, &fx->cfg);
	int deleted = part_retain(part, 100500);
	assert_true(deleted > 0 && deleted < n);
	assert_true(part_log_start_offset(part) <= old_leo);
	assert_true(part_log_start_offset(part) > old_leo - 10);
	/* later, everything but the active segment */
	assert_int_equal(part_retain(part, 200000), n - deleted - 1);
	assert_int_equal(part_segment_count(part), 1);
	part_close(part);
}

static void test_delete_records(void **state)
{
	struct fx *fx = *state;
	struct part *part;
	struct fslice s;
	struct batch_hdr h;

	fx->cfg.segment_bytes = 1000;
	assert_int_equal(part_open(fx->dir, &fx->cfg, -1, 0, &part), 0);
	for (int i = 0; i < 30; i++)
		append1(part, 1, 100, 1000);
	assert_int_equal(part_delete_records(part, 17), -ERANGE); /* above the HW: nothing synced */
	assert_int_equal(part_sync(part), 0);
	int n = part_segment_count(part);
	assert_int_equal(part_delete_records(part, 31), -ERANGE);
	assert_int_equal(part_delete_records(part, 17), 0);
	assert_int_equal(part_log_start_offset(part), 17);
	assert_true(part_segment_count(part) < n);
	assert_int_equal(part_read(part, 16, 30, 100, true, &s), -ERANGE);
	assert_int_equal(part_read(part, 17, 30, 100, true, &s), 0);
	slice_hdr(&s, &h);
	assert_int_equal(h.base_offset, 17);
	fdref_put(s.ref);
	part_close(part);
	assert_int_equal(part_open(fx->dir, &fx->cfg, INT64_MAX, 0, &part), 0);
	assert_int_equal(part_log_start_offset(part), 17);
	assert_int_equal(part_delete_records(part, 30), 0);
	assert_int_equal(part_segment_count(part), 1);
	assert_int_equal(part_read(part, 30, 30, 100, true, &s), 0);
	assert_int_equal(s.len, 0);
	part_close(part);
}

struct sync_arg {
	struct part *part;
	volatile int stop;
	int syncs;
};

static void *sync_thread(void *p)
{
	struct sync_arg *a = p;

	while (!a->stop) {
		assert_int_equal(part_sync(a->part), 0);
		a->syncs++;
	}
	return NULL;
}

static void test_sync_concurrent(void **state)
{
	struct fx *fx = *state;
	struct sync_arg a = { 0 };
	pthread_t th;

	fx->cfg.segment_bytes = 2000;
	fx->cfg.retention_bytes = 6000;
	assert_int_equal(part_open(fx->dir, &fx->cfg, -1, 0, &a.part), 0);
	assert_int_equal(part_sync(a.part), 0);
	assert_int_equal(part_recovery_point(a.part), 0);
	assert_int_equal(pthread_create(&th, NULL, sync_thread, &a), 0);
	for (int i = 0; i < 300; i++) {
		append1(a.part, 2, 100, 1000);
		if (i % 10 == 0)
			part_retain(a.part, 2000);
	}
	a.stop = 1;
	pthread_join(th, NULL);
	assert_true(a.syncs > 0);
	assert_int_equal(part_sync(a.part), 0);
	assert_int_equal(part_recovery_point(a.part), 600);
	assert_int_equal(part_unflushed_messages(a.part), 0);
	append1(a.part, 3, 10, 1000);
	assert_int_equal(part_unflushed_messages(a.part), 3);
	part_close(a.part);
}

static ssize_t short_pwrite(int fd, const void *buf, size_t n, off_t pos)
{
	return pwrite(fd, buf, n / 2, pos);
}

static ssize_t enospc_pwrite(int fd, const void *buf, size_t n, off_t pos)
{
	(void)fd;
	(void)buf;
	(void)n;
	(void)pos;
	errno = ENOSPC;
	return -1;
}

static void test_write_faults(void **state)
{
	struct fx *fx = *state;
	struct part_append_info info;
	struct part *part;
	struct wr w;
	int64_t size;

	assert_int_equal(part_open(fx->dir, &fx->cfg, -1, 0, &part), 0);
	append1(part, 2, 100, 1000);
	size = file_size(fx->dir, 0, ".log");
	mk_batch(&w, 3, 100, 1000);
	seg_pwrite_fn = short_pwrite;
	assert_int_equal(part_append(part, w.buf, w.len, 1000, &info), -ENOSPC);
	seg_pwrite_fn = enospc_pwrite;
	assert_int_equal(part_append(part, w.buf, w.len, 1000, &info), -ENOSPC);
	seg_pwrite_fn = pwrite;
	assert_int_equal(file_size(fx->dir, 0, ".log"), size);
	assert_int_equal(part_log_end_offset(part), 2);
	assert_int_equal(part_append(part, w.buf, w.len, 1000, &info), 0);
	assert_int_equal(info.base_offset, 2);
	assert_int_equal(info.last_offset, 4);
	wr_release(&w);
	part_close(part);
	assert_int_equal(part_open(fx->dir, &fx->cfg, -1, 0, &part), 0);
	assert_int_equal(part_log_end_offset(part), 5);
	part_close(part);
}

static void test_log_append_time(void **state)
{
	struct fx *fx = *state;
	struct part_append_info info;
	struct part *part;
	struct fslice s;
	struct batch_hdr h;
	struct wr w;
	int64_t first, last;

	fx->cfg.log_append_time = true;
	assert_int_equal(part_open(fx->dir, &fx->cfg, -1, 0, &part), 0);
	mk_batch(&w, 2, 10, 1000);
	assert_int_equal(part_append(part, w.buf, w.len, 555555, &info), 0);
	assert_int_equal(info.log_append_time, 555555);
	wr_release(&w);
	assert_int_equal(part_read(part, 0, 2, 1000, true, &s), 0);
	assert_int_equal(slice_check(&s, &first, &last), 1);
	slice_hdr(&s, &h);
	assert_true(h.attributes & RECORDS_ATTR_LOG_APPEND_TIME);
	assert_int_equal(h.max_timestamp, 555555);
	fdref_put(s.ref);
	part_close(part);
}

static void test_bad_blob_and_delete(void **state)
{
	struct fx *fx = *state;
	struct part_append_info info;
	struct part *part;
	struct stat st;
	uint8_t junk[100] = { 0 };

	assert_int_equal(part_open(fx->dir, &fx->cfg, -1, 0, &part), 0);
	assert_int_equal(part_append(part, junk, sizeof(junk), 1000, &info), -EBADMSG);
	assert_int_equal(part_append(part, junk, 0, 1000, &info), -EBADMSG);
	append1(part, 1, 10, 1000);
	assert_int_equal(part_delete(part), 0);
	assert_int_equal(stat(fx->dir, &st), -1);
}

/* Reads the whole log of part (offsets [0, LEO)) into a malloc'd buffer; *len its size. */
static uint8_t *read_all(struct part *part, size_t *len)
{
	struct fslice s;
	uint8_t *buf;

	assert_int_equal(part_read(part, 0, part_log_end_offset(part), 1 << 20, true, &s), 0);
	buf = malloc((size_t)s.len);
	assert_int_equal(pread(s.ref->fd, buf, (size_t)s.len, s.pos), (ssize_t)s.len);
	*len = (size_t)s.len;
	fdref_put(s.ref);
	return buf;
}

/*
 * A follower's append (replication): the leader's batches are stored byte for
 * byte (offsets, leader epoch), offsets must continue the log, CRCs are checked,
 * the epoch cache learns the batches' epochs, and the high watermark stays
 * within replication's bound.
 */
static void test_append_replica(void **state)
{
	struct fx *fx = *state;
	struct part_append_info info;
	struct part *leader, *follower;
	char fdir[160];
	uint8_t *bytes, *copy;
	size_t len, clen;
	int32_t epoch;
	int64_t end;

	snprintf(fdir, sizeof(fdir), "%s/topic-1", fx->root);
	fx->cfg.hw_on_sync = false;
	assert_int_equal(part_open(fx->dir, &fx->cfg, -1, 0, &leader), 0);
	assert_int_equal(part_set_leader_epoch(leader, 7), 0);
	append1(leader, 3, 10, 1000);
	append1(leader, 2, 10, 1001);
	bytes = read_all(leader, &len);

	assert_int_equal(part_open(fdir, &fx->cfg, -1, -1, &follower), 0);
	part_set_hw_limit(follower, 3); /* the leader's high watermark */
	bytes[len - 1] ^= 1;            /* a flipped bit in the last batch: nothing is appended */
	assert_int_equal(part_append_replica(follower, bytes, len, 2000, &info), -EBADMSG);
	bytes[len - 1] ^= 1;
	assert_int_equal(part_log_end_offset(follower), 0);
	assert_int_equal(part_append_replica(follower, bytes, len, 2000, &info), 0);
	assert_int_equal(info.base_offset, 0);
	assert_int_equal(info.last_offset, 4);
	assert_int_equal(part_log_end_offset(follower), 5);
	copy = read_all(follower, &clen);
	assert_int_equal(clen, len);
	assert_memory_equal(copy, bytes, len); /* offsets and leader epoch 7 kept, not re-stamped */
	free(copy);
	assert_true(part_epoch_end_offset(follower, 7, &epoch, &end));
	assert_int_equal(epoch, 7);
	assert_int_equal(end, 5);
	/* the same batches again do not continue the log */
	assert_int_equal(part_append_replica(follower, bytes, len, 2000, &info), -ERANGE);
	assert_int_equal(part_log_end_offset(follower), 5);

	assert_int_equal(part_high_watermark(follower), 3);
	part_set_hw_limit(follower, 1); /* never back */
	assert_int_equal(part_high_watermark(follower), 3);
	part_set_hw_limit(follower, INT64_MAX);
	assert_int_equal(part_high_watermark(follower), 5);
	free(bytes);
	part_close(leader);
	part_close(follower);

	/* reopened: the follower's epoch cache came from the batches and was written */
	assert_int_equal(part_open(fdir, &fx->cfg, -1, -1, &follower), 0);
	assert_true(part_epoch_end_offset(follower, 7, &epoch, &end));
	assert_int_equal(epoch, 7);
	/* its high watermark is the log end at open, taken back to a checkpointed one, never raised by it */
	assert_int_equal(part_high_watermark(follower), 5);
	part_restore_hw(follower, 2);
	part_restore_hw(follower, 4);
	part_restore_hw(follower, -1);
	assert_int_equal(part_high_watermark(follower), 2);
	part_close(follower);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_append_read_roll, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_roll_clock, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_offset_for_time_unknown_max, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_read_limits, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_reopen, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_recover_garbage_tail, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_recover_torn_batch, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_index_rebuild, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_offset_for_time, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_retention_bytes, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_retention_time, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_delete_records, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_sync_concurrent, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_write_faults, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_log_append_time, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_bad_blob_and_delete, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_append_replica, fx_setup, fx_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
