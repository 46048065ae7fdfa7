/*
 * test_segcache.c - the descriptor cache of sealed segments: LRU order,
 * capacity changes, an evicted descriptor kept open by a reader's fdref,
 * sealed segments that open nothing until read, and a partition whose
 * open descriptors stay within the cache across roll, reopen and recovery.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "../fds.h"
#include "../tmpdir.h"

#include "log/partition.h"
#include "log/segcache.h"
#include "log/segment.h"
#include "proto/records.h"
#include "util/buf.h"

/* ---- the LRU list alone ---- */

struct item {
	struct segcache_node node;
	int id;
};

static int evicted[16], nevicted;

static void record_evict(struct segcache_node *node)
{
	evicted[nevicted++] = ((struct item *)node)->id;
}

static void test_lru_order(void **state)
{
	struct item it[5] = { { .id = 0 }, { .id = 1 }, { .id = 2 }, { .id = 3 }, { .id = 4 } };
	struct segcache c;

	(void)state;
	nevicted = 0;
	segcache_init(&c, 3, record_evict);
	for (int i = 0; i < 3; i++)
		segcache_touch(&c, &it[i].node);
	assert_int_equal(c.n, 3);
	assert_int_equal(nevicted, 0);
	segcache_touch(&c, &it[0].node); /* 0 is now the most recent: 1 is the least */
	segcache_touch(&c, &it[3].node);
	assert_int_equal(nevicted, 1);
	assert_int_equal(evicted[0], 1);
	assert_false(segcache_has(&it[1].node));
	assert_true(segcache_has(&it[0].node));
	segcache_touch(&c, &it[4].node); /* order now 4 3 0 2: 2 goes */
	assert_int_equal(nevicted, 2);
	assert_int_equal(evicted[1], 2);
	assert_int_equal(c.n, 3);
	assert_int_equal(c.opens, 5);
	assert_int_equal(c.evictions, 2);
}

static void test_resize_and_remove(void **state)
{
	struct item it[4] = { { .id = 0 }, { .id = 1 }, { .id = 2 }, { .id = 3 } };
	struct segcache c;

	(void)state;
	nevicted = 0;
	segcache_init(&c, 4, record_evict);
	for (int i = 0; i < 4; i++)
		segcache_touch(&c, &it[i].node);
	segcache_remove(&c, &it[2].node); /* closed by its owner: no eviction callback */
	assert_int_equal(nevicted, 0);
	assert_int_equal(c.n, 3);
	segcache_remove(&c, &it[2].node); /* not cached: no-op */
	assert_int_equal(c.n, 3);
	segcache_resize(&c, 1); /* keeps the most recent (3), evicts 0 then 1 */
	assert_int_equal(nevicted, 2);
	assert_int_equal(evicted[0], 0);
	assert_int_equal(evicted[1], 1);
	assert_int_equal(c.n, 1);
	assert_true(segcache_has(&it[3].node));
	segcache_resize(&c, 0); /* below 1 counts as 1 */
	assert_int_equal(c.cap, 1);
	segcache_touch(&c, &it[0].node);
	assert_int_equal(evicted[2], 3);
	assert_int_equal(c.n, 1);
}

/* ---- segments on disk ---- */

/* One batch of one record at offset, timestamp ts, appended to seg. */
static void append_at(struct seg *seg, int64_t offset, int64_t ts)
{
	struct rec_kv kv = { "key", 3, "value", 5 };
	struct wr w;

	wr_init(&w);
	assert_int_equal(records_build(&w, offset, ts, &kv, 1), 0);
	assert_int_equal(seg_append(seg, w.buf, w.len, 0, ts), 0);
	wr_release(&w);
}

#define NSEGS 4
#define PER_SEG 5

/* NSEGS sealed segments of PER_SEG one-record batches (offset i has timestamp 1000 + i). */
static void make_sealed(const char *dir, struct seg **segs)
{
	for (int s = 0; s < NSEGS; s++) {
		assert_int_equal(seg_open(dir, s * PER_SEG, true, 1 << 16, &segs[s]), 0);
		for (int i = 0; i < PER_SEG; i++)
			append_at(segs[s], s * PER_SEG + i, 1000 + s * PER_SEG + i);
		seg_seal(segs[s]);
		seg_retire(segs[s]);
		assert_null(segs[s]->log);
	}
}

static void test_evicted_fd_kept_by_reader(void **state)
{
	char root[64], prefix[128], buf[RECORDS_HDR_SIZE];
	struct seg *segs[NSEGS];
	struct fdref *ref;
	struct seg_iter it;
	struct batch_hdr h;
	uint8_t scratch[4096];

	(void)state;
	tmpdir_make(root, sizeof(root), "segcache");
	snprintf(prefix, sizeof(prefix), "%s/", root);
	make_sealed(root, segs);
	assert_int_equal(fds_under(prefix), 0); /* sealed: nothing open */
	seg_cache_resize(2);
	assert_int_equal(seg_ref(segs[0], &ref), 0); /* a reader's reference, as a sendfile slice takes */
	assert_true(segs[0]->oi.f.n > 0);            /* index mapped */
	assert_true(segs[0]->oi.f.map_len > 0);
	assert_int_equal(seg_use(segs[1]), 0);
	assert_int_equal(seg_use(segs[2]), 0); /* evicts segs[0] */
	assert_null(segs[0]->log);
	assert_int_equal(segs[0]->oi.f.n, 0);
	assert_int_equal(seg_cache()->n, 2);
	/* the reader's descriptor is still open and reads the evicted segment's data */
	assert_true(fcntl(ref->fd, F_GETFD) >= 0);
	assert_int_equal(pread(ref->fd, buf, sizeof(buf), 0), sizeof(buf));
	assert_int_equal(records_hdr_parse((const uint8_t *)buf, sizeof(buf), &h), 0);
	assert_int_equal(h.base_offset, 0);
	assert_int_equal(fds_under(prefix), 3); /* the reader's + two cached */
	fdref_put(ref);
	assert_int_equal(fds_under(prefix), 2);
	/* a read of the evicted segment reopens it through the cache */
	assert_int_equal(seg_find(segs[0], 3, &it, &h, scratch, sizeof(scratch)), 1);
	assert_int_equal(h.base_offset, 3);
	assert_non_null(segs[0]->log);
	assert_null(segs[1]->log); /* least recently used went */
	assert_int_equal(fds_under(prefix), 2);
	for (int s = 0; s < NSEGS; s++)
		seg_close(segs[s]);
	assert_int_equal(seg_cache()->n, 0);
	assert_int_equal(fds_under(prefix), 0);
	seg_cache_resize(SEG_CACHE_DEFAULT);
	tmpdir_remove(root);
}

static void test_open_sealed_learns_stats(void **state)
{
	char root[64], prefix[128];
	struct seg *segs[NSEGS], *seg;

	(void)state;
	tmpdir_make(root, sizeof(root), "segcache");
	snprintf(prefix, sizeof(prefix), "%s/", root);
	make_sealed(root, segs);
	for (int s = 0; s < NSEGS; s++)
		seg_close(segs[s]);
	assert_int_equal(seg_open_sealed(root, PER_SEG, 2 * PER_SEG, 1 << 30, &seg), 0);
	assert_int_equal(fds_under(prefix), 0);
	assert_false(seg->stats_known);
	assert_true(seg->size > 0);
	assert_int_equal(seg->next_offset, 2 * PER_SEG);
	assert_int_equal(seg_load_stats(seg), 0);
	assert_true(seg->stats_known);
	assert_int_equal(seg->max_ts, 1000 + 2 * PER_SEG - 1);
	assert_int_equal(seg->max_ts_offset, 2 * PER_SEG - 1);
	assert_false(seg->ts_unknown);
	seg_close(seg);
	assert_int_equal(fds_under(prefix), 0);
	/* a segment whose .log is gone cannot be listed */
	assert_int_equal(seg_open_sealed(root, 999, 1000, 0, &seg), -ENOENT);
	tmpdir_remove(root);
}

/* A partition of many segments holds the active segment's files, its directory and at most the cache. */
static void test_partition_fds_bounded(void **state)
{
	char root[64], dir[128], prefix[160];
	struct part_cfg cfg;
	struct part *part;
	struct fslice s;
	int64_t off, ts;
	const int n = 40, cache = 5;

	(void)state;
	tmpdir_make(root, sizeof(root), "segcache");
	snprintf(dir, sizeof(dir), "%s/t-0", root);
	snprintf(prefix, sizeof(prefix), "%s/", dir);
	part_cfg_default(&cfg);
	cfg.retention_ms = -1;
	cfg.segment_bytes = 100; /* one batch per segment */
	seg_cache_resize(cache);
	assert_int_equal(part_open(dir, &cfg, 0, 0, &part), 0);
	for (int i = 0; i < n; i++) {
		struct part_append_info info;
		struct rec_kv kv = { "key", 3, "value", 5 };
		struct wr w;

		wr_init(&w);
		assert_int_equal(records_build(&w, 0, 5000 + i, &kv, 1), 0);
		assert_int_equal(part_append(part, w.buf, w.len, 5000 + i, &info), 0);
		wr_release(&w);
	}
	assert_int_equal(part_segment_count(part), n);
	assert_true(fds_under(prefix) <= 3 + 1);
	for (int i = 0; i < n; i++) { /* every segment read: the cache keeps at most `cache` open */
		assert_int_equal(part_read(part, i, n, 1 << 20, true, &s), 0);
		assert_non_null(s.ref);
		fdref_put(s.ref);
		assert_true(fds_under(prefix) <= 3 + 1 + cache);
	}
	assert_int_equal(part_offset_for_time(part, 5000 + 7, &off, &ts), 0);
	assert_int_equal(off, 7);
	assert_int_equal(part_sync(part), 0);
	assert_int_equal(part_close(part), 0);
	assert_int_equal(fds_under(prefix), 0);
	/* clean reopen: nothing below the recovery point is opened */
	assert_int_equal(part_open(dir, &cfg, n, 0, &part), 0);
	assert_int_equal(seg_cache()->n, 0);
	assert_true(fds_under(prefix) <= 3 + 1);
	assert_int_equal(part_offset_for_time(part, 5000 + 3, &off, &ts), 0);
	assert_int_equal(off, 3);
	assert_int_equal(part_close(part), 0);
	/* recovery of every segment (recovery point 0): one at a time, each sealed again; the
	   rebuild of the transaction index then reads them all through the cache */
	assert_int_equal(part_open(dir, &cfg, 0, 0, &part), 0);
	assert_int_equal(part_log_end_offset(part), n);
	assert_true(fds_under(prefix) <= 3 + 1 + cache);
	assert_int_equal(part_read(part, 0, n, 1 << 20, true, &s), 0);
	assert_int_equal(s.pos, 0);
	fdref_put(s.ref);
	assert_int_equal(part_close(part), 0);
	seg_cache_resize(SEG_CACHE_DEFAULT);
	tmpdir_remove(root);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lru_order),
		cmocka_unit_test(test_resize_and_remove),
		cmocka_unit_test(test_evicted_fd_kept_by_reader),
		cmocka_unit_test(test_open_sealed_learns_stats),
		cmocka_unit_test(test_partition_fds_bounded),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
