/*
 * test_clean.c - log compaction (log/clean.h): the offset map (put, get,
 * full, clear), building it from segment files, and the rewrite of
 * segments: latest value per key at its offset, tombstones against the
 * delete horizon, every codec, aborted and committed transactions, the
 * last batch of a producer kept empty, a map that fills up, and corrupt
 * input.  Every output batch is re-parsed and its CRC checked.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../tmpdir.h"

#include "log/clean.h"
#include "log/segment.h"
#include "proto/codec.h"
#include "proto/records.h"

#define MAX_RECORDS_BYTES (1 << 20)
#define MAX_GOT 2048

/* One record of the output, as read back. */
struct got {
	int64_t offset;
	int64_t timestamp;
	char key[32];
	char value[32];
	bool tombstone;
};

struct got_list {
	struct got v[MAX_GOT];
	int n;
	struct batch_hdr batches[MAX_GOT];
	int nbatches;
};

static struct rec_kv kv(const char *key, const char *value)
{
	struct rec_kv r = { key, key ? (int32_t)strlen(key) : -1, value, value ? (int32_t)strlen(value) : -1 };

	return r;
}

static int got_record(void *arg, const struct record *rec)
{
	struct got_list *gl = arg;
	struct got *g;

	assert_true(gl->n < MAX_GOT);
	g = &gl->v[gl->n++];
	g->offset = rec->offset;
	g->timestamp = rec->timestamp;
	assert_true(rec->key.len >= 0 && rec->key.len < 32);
	memcpy(g->key, rec->key.p, (size_t)rec->key.len);
	g->key[rec->key.len] = 0;
	g->tombstone = rec->value.len < 0;
	if (!g->tombstone) {
		assert_true(rec->value.len < 32);
		memcpy(g->value, rec->value.p, (size_t)rec->value.len);
		g->value[rec->value.len] = 0;
	}
	return 0;
}

/* Reads back every batch of p[0..len): each must parse, carry a good CRC and decode. */
static void collect(const uint8_t *p, size_t len, struct got_list *gl)
{
	struct batch_hdr h;

	memset(gl, 0, sizeof(*gl));
	for (size_t off = 0; off < len; off += (size_t)h.size) {
		int codec;
		struct wr plain;

		assert_int_equal(records_batch_parse(p + off, len - off, &h), 0);
		assert_true(records_batch_crc_ok(p + off, &h));
		gl->batches[gl->nbatches++] = h;
		if (records_is_control(&h))
			continue;
		codec = h.attributes & RECORDS_ATTR_CODEC_MASK;
		wr_init(&plain);
		if (codec) {
			assert_int_equal(codec_decompress(codec, p + off + RECORDS_HDR_SIZE,
							  (size_t)h.size - RECORDS_HDR_SIZE, &plain, MAX_RECORDS_BYTES),
					 0);
			assert_int_equal(records_foreach_body(plain.buf, plain.len, &h, got_record, gl), 0);
		} else {
			assert_int_equal(records_foreach(p + off, &h, got_record, gl), 0);
		}
		wr_release(&plain);
	}
}

/* A batch at base of n records with timestamps ts[i], in codec. */
static void add_batch(struct wr *w, int64_t base, const struct rec_kv *recs, const int64_t *ts, int n, int codec)
{
	size_t start = w->len;

	assert_int_equal(records_build_ts(w, recs, ts, n, codec), 0);
	records_set_base_offset(w->buf + start, base);
}

/* An uncompressed batch at base, every record at ts. */
static void add_plain(struct wr *w, int64_t base, int64_t ts, const struct rec_kv *recs, int n)
{
	assert_int_equal(records_build(w, base, ts, recs, n), 0);
}

static void add_txn(struct wr *w, int64_t base, int64_t pid, const struct rec_kv *recs, int n)
{
	size_t start = w->len;

	assert_int_equal(records_build_txn(w, 1000, pid, 0, recs, n), 0);
	records_set_base_offset(w->buf + start, base);
}

static void add_marker(struct wr *w, int64_t base, int64_t pid, bool commit)
{
	size_t start = w->len;

	assert_int_equal(records_build_control(w, pid, 0, commit, 0, 1000), 0);
	records_set_base_offset(w->buf + start, base);
}

/* The caller's view of producers: the last offset of each one's last batch. */
struct producers {
	int64_t pid[4];
	int64_t last[4];
	int n;
	bool markers_discardable;
};

static bool is_producer_last(void *arg, const struct batch_hdr *h)
{
	struct producers *ps = arg;

	for (int i = 0; i < ps->n; i++)
		if (ps->pid[i] == h->producer_id)
			return ps->last[i] == records_last_offset(h);
	return false;
}

static bool is_marker_discardable(void *arg, const struct batch_hdr *h)
{
	struct producers *ps = arg;

	(void)h;
	return ps->markers_discardable;
}

static struct clean_opts opts_for(const struct clean_map *map, struct producers *ps)
{
	struct clean_opts o = { .map = map,
				.delete_horizon_ms = INT64_MIN,
				.producer_last = is_producer_last,
				.marker_discardable = is_marker_discardable,
				.arg = ps,
				.max_records_bytes = MAX_RECORDS_BYTES };

	return o;
}

static struct clean_map *map_new(size_t slots)
{
	struct clean_map *map;

	assert_int_equal(clean_map_new(slots * CLEAN_SLOT_BYTES, CLEAN_LOAD_FACTOR_DEFAULT, &map), 0);
	return map;
}

static const struct clean_aborted no_aborted = { NULL, 0 };

static void test_map(void **state)
{
	struct clean_map *map;
	char key[16];

	(void)state;
	assert_int_equal(clean_map_new(CLEAN_SLOT_BYTES, 0.9, &map), -EINVAL);
	assert_int_equal(clean_map_new(100 * CLEAN_SLOT_BYTES, 1.0, &map), -EINVAL);
	map = map_new(100);
	assert_int_equal(clean_map_max_keys(map), 90);
	assert_int_equal(clean_map_latest_offset(map), -1);
	assert_int_equal(clean_map_get(map, (const uint8_t *)"a", 1), -1);
	for (int i = 0; i < 90; i++) {
		snprintf(key, sizeof(key), "key-%d", i);
		assert_int_equal(clean_map_put(map, (const uint8_t *)key, strlen(key), i), 0);
	}
	assert_int_equal(clean_map_put(map, (const uint8_t *)"new", 3, 90), -ENOSPC);
	assert_int_equal(clean_map_latest_offset(map), 89);
	/* a key already held still takes a newer offset */
	assert_int_equal(clean_map_put(map, (const uint8_t *)"key-7", 5, 91), 0);
	assert_int_equal(clean_map_get(map, (const uint8_t *)"key-7", 5), 91);
	assert_int_equal(clean_map_get(map, (const uint8_t *)"key-70", 6), 70);
	assert_int_equal(clean_map_get(map, (const uint8_t *)"new", 3), -1);
	assert_int_equal(clean_map_get(map, (const uint8_t *)"", 0), -1);
	assert_int_equal(clean_map_size(map), 90);
	clean_map_clear(map);
	assert_int_equal(clean_map_size(map), 0);
	assert_int_equal(clean_map_get(map, (const uint8_t *)"key-7", 5), -1);
	assert_int_equal(clean_map_put(map, (const uint8_t *)"", 0, 3), 0);
	assert_int_equal(clean_map_get(map, (const uint8_t *)"", 0), 3);
	clean_map_free(map);
}

#define KEYS 100
#define UPDATES 10
#define PER_BATCH 25
#define BATCHES_PER_SEG 10
#define NSEGS ((KEYS * UPDATES) / (PER_BATCH * BATCHES_PER_SEG))

/*
 * 100 keys updated 10 times each, in a shuffled order (each key's own
 * updates in sequence), batches of 25 records over 4 segment files.
 */
static void fill_updates(char keys[][16], char values[][16], int64_t *latest)
{
	int next[KEYS] = { 0 }, order[KEYS * UPDATES];
	uint32_t rnd = 12345;

	for (int i = 0; i < KEYS * UPDATES; i++)
		order[i] = i % KEYS;
	for (int i = KEYS * UPDATES - 1; i > 0; i--) {
		int j, t;

		rnd = rnd * 1103515245u + 12345u;
		j = (int)((rnd >> 8) % (uint32_t)(i + 1));
		t = order[i];
		order[i] = order[j];
		order[j] = t;
	}
	for (int i = 0; i < KEYS * UPDATES; i++) {
		int k = order[i];

		snprintf(keys[i], 16, "k%d", k);
		snprintf(values[i], 16, "%d-%d", k, next[k]++);
		latest[k] = i;
	}
}

static void test_latest_value_per_key(void **state)
{
	static char keys[KEYS * UPDATES][16], values[KEYS * UPDATES][16];
	static struct got_list gl;
	int64_t latest[KEYS];
	struct seg *segs[NSEGS];
	struct clean_map *map = map_new(1024);
	struct producers ps = { 0 };
	struct clean_opts o = opts_for(map, &ps);
	struct wr out, in;
	char dir[64];

	(void)state;
	tmpdir_make(dir, sizeof(dir), "clean");
	fill_updates(keys, values, latest);
	for (int s = 0; s < NSEGS; s++) {
		struct wr w;

		wr_init(&w);
		for (int b = 0; b < BATCHES_PER_SEG; b++) {
			int64_t base = (int64_t)(s * BATCHES_PER_SEG + b) * PER_BATCH;
			struct rec_kv recs[PER_BATCH];

			for (int i = 0; i < PER_BATCH; i++)
				recs[i] = kv(keys[base + i], values[base + i]);
			add_plain(&w, base, 1000 + base, recs, PER_BATCH);
		}
		assert_int_equal(seg_open(dir, (int64_t)s * BATCHES_PER_SEG * PER_BATCH, true, 1 << 16, &segs[s]), 0);
		assert_int_equal(seg_append(segs[s], w.buf, w.len, 4096, 0), 0);
		wr_release(&w);
	}
	assert_int_equal(clean_map_build_segs(map, segs, NSEGS, 0, &no_aborted, MAX_RECORDS_BYTES), 0);
	assert_int_equal(clean_map_size(map), KEYS);
	assert_int_equal(clean_map_latest_offset(map), KEYS * UPDATES - 1);
	wr_init(&out);
	wr_init(&in);
	for (int s = 0; s < NSEGS; s++) {
		in.len = 0;
		assert_int_equal(clean_seg_read(segs[s], &in), 0);
		o.covered_end = clean_map_latest_offset(map) + 1;
		assert_int_equal(clean_segment(&o, in.buf, in.len, &out), 0);
	}
	collect(out.buf, out.len, &gl);
	assert_int_equal(gl.n, KEYS);
	for (int i = 0; i < gl.n; i++) {
		int k = atoi(gl.v[i].key + 1);
		char want[16];

		assert_int_equal(gl.v[i].offset, latest[k]);
		snprintf(want, sizeof(want), "%d-%d", k, UPDATES - 1);
		assert_string_equal(gl.v[i].value, want);
		assert_int_equal(gl.v[i].timestamp, 1000 + (gl.v[i].offset / PER_BATCH) * PER_BATCH);
	}
	/* every kept batch keeps its place and its original offset span */
	for (int i = 0; i < gl.nbatches; i++) {
		assert_int_equal(gl.batches[i].base_offset % PER_BATCH, 0);
		assert_int_equal(gl.batches[i].last_offset_delta, PER_BATCH - 1);
		assert_true(gl.batches[i].record_count >= 1);
		assert_true(i == 0 || gl.batches[i].base_offset > gl.batches[i - 1].base_offset);
	}
	/* cleaning the output again changes nothing */
	in.len = 0;
	o.covered_end = clean_map_latest_offset(map) + 1;
	assert_int_equal(clean_segment(&o, out.buf, out.len, &in), 0);
	assert_int_equal(in.len, out.len);
	assert_memory_equal(in.buf, out.buf, out.len);
	wr_release(&in);
	wr_release(&out);
	for (int s = 0; s < NSEGS; s++)
		seg_close(segs[s]);
	clean_map_free(map);
	tmpdir_remove(dir);
}

/*
 * A pass over an already clean range only (empty map, covered_end at its
 * end): values stay, tombstones past the horizon go, a younger tombstone
 * stays and its batch time is reported; past covered_end nothing goes.
 */
static void test_tombstones_clean_part(void **state)
{
	struct rec_kv recs[] = { kv("a", "1"), kv("b", NULL) }, young[] = { kv("c", NULL) }, late[] = { kv("d", NULL) };
	struct clean_map *map = map_new(64);
	struct producers ps = { 0 };
	struct clean_opts o = opts_for(map, &ps);
	static struct got_list gl;
	int64_t ts_min = INT64_MAX;
	struct wr in, out;

	(void)state;
	wr_init(&in);
	wr_init(&out);
	add_plain(&in, 0, 1000, recs, 2);
	add_plain(&in, 2, 3000, young, 1);
	add_plain(&in, 3, 1000, late, 1);
	o.covered_end = 3;
	o.delete_horizon_ms = 2000;
	o.tombstone_ts_min = &ts_min;
	assert_int_equal(clean_segment(&o, in.buf, in.len, &out), 0);
	collect(out.buf, out.len, &gl);
	assert_int_equal(gl.n, 3);
	assert_string_equal(gl.v[0].key, "a");
	assert_string_equal(gl.v[1].key, "c");
	assert_true(gl.v[1].tombstone);
	assert_string_equal(gl.v[2].key, "d");
	assert_int_equal(ts_min, 3000);
	wr_release(&in);
	wr_release(&out);
	clean_map_free(map);
}

/* Tombstones: kept while their batch is at or past the delete horizon, then dropped; of unknown age, kept. */
static void test_tombstones(void **state)
{
	struct rec_kv first[] = { kv("a", "1"), kv("b", "1") }, del[] = { kv("a", NULL) }, upd[] = { kv("b", "2") };
	struct rec_kv del2[] = { kv("c", NULL) };
	struct clean_map *map = map_new(64);
	struct producers ps = { 0 };
	struct clean_opts o = opts_for(map, &ps);
	static struct got_list gl;
	struct wr in, out;

	(void)state;
	wr_init(&in);
	wr_init(&out);
	add_plain(&in, 0, 1000, first, 2);
	add_plain(&in, 2, 2000, del, 1);
	add_plain(&in, 3, 3000, upd, 1);
	add_plain(&in, 4, -1, del2, 1); /* maxTimestamp -1: age unknown */
	assert_int_equal(clean_map_build(map, in.buf, in.len, 0, &no_aborted, MAX_RECORDS_BYTES), 0);
	o.delete_horizon_ms = 1500;
	o.covered_end = clean_map_latest_offset(map) + 1;
	assert_int_equal(clean_segment(&o, in.buf, in.len, &out), 0);
	collect(out.buf, out.len, &gl);
	assert_int_equal(gl.n, 3);
	assert_int_equal(gl.v[0].offset, 2);
	assert_true(gl.v[0].tombstone);
	assert_int_equal(gl.v[1].offset, 3);
	assert_string_equal(gl.v[1].value, "2");
	assert_int_equal(gl.v[2].offset, 4);
	out.len = 0;
	o.delete_horizon_ms = 2001;
	o.covered_end = clean_map_latest_offset(map) + 1;
	assert_int_equal(clean_segment(&o, in.buf, in.len, &out), 0);
	collect(out.buf, out.len, &gl);
	assert_int_equal(gl.n, 2);
	assert_int_equal(gl.v[0].offset, 3);
	assert_int_equal(gl.v[1].offset, 4);
	assert_true(gl.v[1].tombstone);
	assert_int_equal(gl.nbatches, 2);
	wr_release(&in);
	wr_release(&out);
	clean_map_free(map);
}

/* One batch of 10 records over 5 keys in each codec: the 5 latest remain, recompressed. */
static void test_codecs(void **state)
{
	static const char *const k[] = { "k0", "k1", "k2", "k3", "k4" };
	static const char *const v[] = { "v0", "v1", "v2", "v3", "v4", "v5", "v6", "v7", "v8", "v9" };
	static struct got_list gl;

	(void)state;
	for (int codec = CODEC_NONE; codec <= CODEC_MAX; codec++) {
		struct rec_kv recs[10];
		int64_t ts[10];
		struct clean_map *map = map_new(64);
		struct producers ps = { 0 };
		struct clean_opts o = opts_for(map, &ps);
		struct wr in, out;

		for (int i = 0; i < 10; i++) {
			recs[i] = kv(k[i % 5], v[i]);
			ts[i] = i < 5 ? 1100 : 1000 + i; /* the largest timestamp goes with the first half */
		}
		wr_init(&in);
		wr_init(&out);
		add_batch(&in, 100, recs, ts, 10, codec);
		assert_int_equal(clean_map_build(map, in.buf, in.len, 0, &no_aborted, MAX_RECORDS_BYTES), 0);
		assert_int_equal(clean_map_get(map, (const uint8_t *)"k3", 2), 108);
		o.covered_end = clean_map_latest_offset(map) + 1;
		assert_int_equal(clean_segment(&o, in.buf, in.len, &out), 0);
		collect(out.buf, out.len, &gl);
		assert_int_equal(gl.nbatches, 1);
		assert_int_equal(gl.batches[0].attributes & RECORDS_ATTR_CODEC_MASK, codec);
		assert_int_equal(gl.batches[0].base_offset, 100);
		assert_int_equal(gl.batches[0].last_offset_delta, 9);
		assert_int_equal(gl.batches[0].record_count, 5);
		assert_int_equal(gl.batches[0].max_timestamp, 1009);
		assert_int_equal(gl.n, 5);
		for (int i = 0; i < 5; i++) {
			assert_int_equal(gl.v[i].offset, 105 + i);
			assert_int_equal(gl.v[i].timestamp, 1005 + i);
			assert_string_equal(gl.v[i].key, k[i]);
			assert_string_equal(gl.v[i].value, v[5 + i]);
		}
		wr_release(&in);
		wr_release(&out);
		clean_map_free(map);
	}
}

/*
 * Producer 7 aborts (a, b at 0-1, ABORT at 2); producer 8 commits (a, c at
 * 3-4, COMMIT at 5) and opens another transaction (d at 6).
 */
static void build_txns(struct wr *in)
{
	struct rec_kv ab[] = { kv("a", "aborted"), kv("b", "aborted") }, ac[] = { kv("a", "ok"), kv("c", "ok") };
	struct rec_kv d[] = { kv("d", "open") };

	add_txn(in, 0, 7, ab, 2);
	add_marker(in, 2, 7, false);
	add_txn(in, 3, 8, ac, 2);
	add_marker(in, 5, 8, true);
	add_txn(in, 6, 8, d, 1);
}

static void test_aborted_transactions(void **state)
{
	struct txnidx_entry aborted[] = { { .producer_id = 7, .first_offset = 0, .last_offset = 2 } };
	struct clean_aborted ab = { aborted, 1 };
	struct clean_map *map = map_new(64);
	struct producers ps = { .pid = { 7, 8 }, .last = { 2, 6 }, .n = 2 };
	struct clean_opts o = opts_for(map, &ps);
	static struct got_list gl;
	struct wr in, out;

	(void)state;
	wr_init(&in);
	wr_init(&out);
	build_txns(&in);
	assert_int_equal(clean_map_build(map, in.buf, in.len, 0, &ab, MAX_RECORDS_BYTES), 0);
	assert_int_equal(clean_map_get(map, (const uint8_t *)"a", 1), 3);
	assert_int_equal(clean_map_get(map, (const uint8_t *)"b", 1), -1);
	assert_int_equal(clean_map_size(map), 3); /* a, c, d: no marker keys */
	o.aborted = ab;
	/* markers kept: the aborted batch goes, the ABORT marker stays (producer 7's last batch) */
	o.covered_end = clean_map_latest_offset(map) + 1;
	assert_int_equal(clean_segment(&o, in.buf, in.len, &out), 0);
	collect(out.buf, out.len, &gl);
	assert_int_equal(gl.nbatches, 4);
	assert_int_equal(gl.batches[0].base_offset, 2);
	assert_true(records_is_control(&gl.batches[0]));
	assert_int_equal(gl.batches[2].base_offset, 5);
	assert_true(records_is_control(&gl.batches[2]));
	assert_int_equal(gl.n, 3);
	assert_int_equal(gl.v[0].offset, 3);
	assert_string_equal(gl.v[0].value, "ok");
	assert_int_equal(gl.v[1].offset, 4);
	assert_int_equal(gl.v[2].offset, 6);
	/* markers discardable: the COMMIT goes, the ABORT still stays as producer 7's last batch */
	out.len = 0;
	ps.markers_discardable = true;
	o.covered_end = clean_map_latest_offset(map) + 1;
	assert_int_equal(clean_segment(&o, in.buf, in.len, &out), 0);
	collect(out.buf, out.len, &gl);
	assert_int_equal(gl.nbatches, 3);
	assert_int_equal(gl.batches[0].base_offset, 2);
	assert_int_equal(gl.batches[1].base_offset, 3);
	assert_int_equal(gl.batches[2].base_offset, 6);
	/* without the abort in the index, producer 7's records count as committed */
	out.len = 0;
	o.aborted = no_aborted;
	clean_map_clear(map);
	assert_int_equal(clean_map_build(map, in.buf, in.len, 0, &no_aborted, MAX_RECORDS_BYTES), 0);
	o.covered_end = clean_map_latest_offset(map) + 1;
	assert_int_equal(clean_segment(&o, in.buf, in.len, &out), 0);
	collect(out.buf, out.len, &gl);
	assert_int_equal(gl.n, 4);
	assert_string_equal(gl.v[0].key, "b");
	assert_int_equal(gl.v[0].offset, 1);
	wr_release(&in);
	wr_release(&out);
	clean_map_free(map);
}

/* Producer 9's three batches are all superseded: the first two go, its last stays empty. */
static void test_producer_last_batch_kept(void **state)
{
	struct rec_kv xy[] = { kv("x", "9"), kv("y", "9") }, newer[] = { kv("x", "new"), kv("y", "new") };
	struct clean_map *map = map_new(64);
	struct producers ps = { .pid = { 9 }, .last = { 5 }, .n = 1 };
	struct clean_opts o = opts_for(map, &ps);
	static struct got_list gl;
	struct batch_hdr orig;
	struct wr in, out;

	(void)state;
	wr_init(&in);
	wr_init(&out);
	add_txn(&in, 0, 9, xy, 2);
	add_txn(&in, 2, 9, xy, 2);
	add_txn(&in, 4, 9, xy, 2);
	assert_int_equal(records_batch_parse(in.buf + in.len - (in.len / 3), in.len / 3, &orig), 0);
	add_plain(&in, 6, 2000, newer, 2);
	assert_int_equal(clean_map_build(map, in.buf, in.len, 0, &no_aborted, MAX_RECORDS_BYTES), 0);
	o.covered_end = clean_map_latest_offset(map) + 1;
	assert_int_equal(clean_segment(&o, in.buf, in.len, &out), 0);
	collect(out.buf, out.len, &gl);
	assert_int_equal(gl.nbatches, 2);
	assert_int_equal(gl.batches[0].base_offset, 4);
	assert_int_equal(gl.batches[0].last_offset_delta, 1);
	assert_int_equal(gl.batches[0].record_count, 0);
	assert_int_equal(gl.batches[0].producer_id, 9);
	assert_int_equal(gl.batches[0].producer_epoch, orig.producer_epoch);
	assert_int_equal(gl.batches[0].base_sequence, orig.base_sequence);
	assert_int_equal(gl.batches[0].attributes, orig.attributes);
	assert_int_equal(gl.batches[0].max_timestamp, orig.max_timestamp);
	assert_int_equal(gl.batches[0].size, RECORDS_HDR_SIZE);
	assert_int_equal(gl.n, 2);
	assert_int_equal(gl.v[0].offset, 6);
	/* cleaned again: the empty batch stays while it is the producer's last, byte for byte */
	in.len = 0;
	o.covered_end = clean_map_latest_offset(map) + 1;
	assert_int_equal(clean_segment(&o, out.buf, out.len, &in), 0);
	assert_int_equal(in.len, out.len);
	assert_memory_equal(in.buf, out.buf, out.len);
	/* then goes once the producer is no longer in the state */
	in.len = 0;
	ps.n = 0;
	o.covered_end = clean_map_latest_offset(map) + 1;
	assert_int_equal(clean_segment(&o, out.buf, out.len, &in), 0);
	collect(in.buf, in.len, &gl);
	assert_int_equal(gl.nbatches, 1);
	assert_int_equal(gl.batches[0].base_offset, 6);
	wr_release(&in);
	wr_release(&out);
	clean_map_free(map);
}

/*
 * A map of 9 keys over k0-k4 twice (0-9), n0-n19 (10-29) and k0-k4 again
 * (30-34): it fills at n4 (offset 14), so only 0-13 are cleaned.
 */
static void test_map_full(void **state)
{
	char knames[5][16], nnames[20][16];
	struct rec_kv ks[5], ks2[5], ns[20];
	struct clean_map *map = map_new(10);
	struct producers ps = { 0 };
	struct clean_opts o = opts_for(map, &ps);
	static struct got_list gl;
	struct wr in, out;

	(void)state;
	for (int i = 0; i < 5; i++) {
		snprintf(knames[i], sizeof(knames[i]), "k%d", i);
		ks[i] = kv(knames[i], "old");
		ks2[i] = kv(knames[i], "new");
	}
	for (int i = 0; i < 20; i++) {
		snprintf(nnames[i], sizeof(nnames[i]), "n%d", i);
		ns[i] = kv(nnames[i], NULL); /* tombstones past the covered range must stay */
	}
	wr_init(&in);
	wr_init(&out);
	add_plain(&in, 0, 1000, ks, 5);
	add_plain(&in, 5, 1000, ks2, 5);
	add_plain(&in, 10, 1000, ns, 20);
	add_plain(&in, 30, 1000, ks2, 5);
	assert_int_equal(clean_map_max_keys(map), 9);
	assert_int_equal(clean_map_build(map, in.buf, in.len, 0, &no_aborted, MAX_RECORDS_BYTES), 1);
	assert_int_equal(clean_map_latest_offset(map), 13);
	o.delete_horizon_ms = 5000; /* every tombstone is past its horizon */
	o.covered_end = clean_map_latest_offset(map) + 1;
	assert_int_equal(clean_segment(&o, in.buf, in.len, &out), 0);
	collect(out.buf, out.len, &gl);
	/* 0-4 superseded, tombstones 10-13 covered and dropped, 14-34 untouched */
	assert_int_equal(gl.n, 5 + 16 + 5);
	for (int i = 0; i < 5; i++)
		assert_int_equal(gl.v[i].offset, 5 + i);
	for (int i = 5; i < gl.n; i++)
		assert_int_equal(gl.v[i].offset, 9 + i);
	assert_true(gl.v[5].tombstone);
	assert_int_equal(gl.nbatches, 3);
	assert_int_equal(gl.batches[1].base_offset, 10);
	assert_int_equal(gl.batches[1].last_offset_delta, 19);
	assert_int_equal(gl.batches[1].record_count, 16);
	/* the next pass starts past the covered offset */
	clean_map_clear(map);
	assert_int_equal(clean_map_build(map, in.buf, in.len, 14, &no_aborted, MAX_RECORDS_BYTES), 1);
	assert_int_equal(clean_map_latest_offset(map), 22);
	wr_release(&in);
	wr_release(&out);
	clean_map_free(map);
}

/* Runs both steps on p[0..len) and expects -EBADMSG from each, with nothing written. */
static void expect_bad(const uint8_t *p, size_t len)
{
	struct clean_map *map = map_new(64);
	struct producers ps = { 0 };
	struct clean_opts o = opts_for(map, &ps);
	struct wr out;

	wr_init(&out);
	assert_int_equal(clean_map_build(map, p, len, 0, &no_aborted, MAX_RECORDS_BYTES), -EBADMSG);
	o.covered_end = clean_map_latest_offset(map) + 1;
	assert_int_equal(clean_segment(&o, p, len, &out), -EBADMSG);
	assert_int_equal(out.len, 0);
	wr_release(&out);
	clean_map_free(map);
}

/* Re-signs a tampered batch at p (its CRC recomputed over the new bytes). */
static void resign(uint8_t *p, size_t len)
{
	struct batch_hdr h;

	assert_int_equal(records_hdr_parse(p, len, &h), 0);
	records_set_max_timestamp(p, len, h.max_timestamp);
}

static void test_corrupt_input(void **state)
{
	struct rec_kv recs[] = { kv("a", "1"), kv("b", "2"), kv("c", "3") };
	int64_t ts[] = { 1, 2, 3 };
	struct wr good, bad;

	(void)state;
	wr_init(&good);
	wr_init(&bad);
	add_plain(&good, 0, 1000, recs, 3);
	/* a flipped value byte (the batch still decodes): only the CRC tells */
	wr_raw(&bad, good.buf, good.len);
	bad.buf[bad.len - 2] ^= 0x40;
	expect_bad(bad.buf, bad.len);
	/* truncated */
	expect_bad(good.buf, good.len - 1);
	/* more records declared than present */
	bad.len = 0;
	wr_raw(&bad, good.buf, good.len);
	bad.buf[RECORDS_HDR_SIZE - 1] = 4;
	resign(bad.buf, bad.len);
	expect_bad(bad.buf, bad.len);
	/* records past lastOffsetDelta */
	bad.len = 0;
	wr_raw(&bad, good.buf, good.len);
	bad.buf[26] = 0;
	resign(bad.buf, bad.len);
	expect_bad(bad.buf, bad.len);
	/* a key longer than its record */
	bad.len = 0;
	wr_raw(&bad, good.buf, good.len);
	bad.buf[RECORDS_HDR_SIZE + 4] = 0x7e;
	resign(bad.buf, bad.len);
	expect_bad(bad.buf, bad.len);
	/* a gzip body cut in half, and an unknown codec */
	bad.len = 0;
	add_batch(&bad, 0, recs, ts, 3, CODEC_GZIP);
	bad.len = RECORDS_HDR_SIZE + (bad.len - RECORDS_HDR_SIZE) / 2;
	wr_patch_i32(&bad, 8, (int32_t)(bad.len - RECORDS_LOG_OVERHEAD));
	resign(bad.buf, bad.len);
	expect_bad(bad.buf, bad.len);
	bad.len = 0;
	wr_raw(&bad, good.buf, good.len);
	bad.buf[RECORDS_ATTR_OFF + 1] |= 7;
	resign(bad.buf, bad.len);
	expect_bad(bad.buf, bad.len);
	/* a good batch then garbage */
	bad.len = 0;
	wr_raw(&bad, good.buf, good.len);
	wr_raw(&bad, "garbage garbage garbage garbage garbage garbage garbage garbage!", 64);
	expect_bad(bad.buf, bad.len);
	wr_release(&good);
	wr_release(&bad);
}

/* Random byte changes, re-signed or not, never crash: each step answers 0 or -EBADMSG. */
static void test_mutations(void **state)
{
	struct rec_kv recs[] = { kv("a", "1"), kv("b", "2"), kv("a", NULL), kv("c", "3") };
	int64_t ts[] = { 1, 2, 3, 4 };
	struct clean_map *map = map_new(64);
	struct producers ps = { 0 };
	struct clean_opts o = opts_for(map, &ps);
	uint32_t rnd = 99;
	struct wr good, bad, out;

	(void)state;
	wr_init(&good);
	wr_init(&bad);
	wr_init(&out);
	for (int codec = CODEC_NONE; codec <= CODEC_MAX; codec++)
		add_batch(&good, codec * 4, recs, ts, 4, codec);
	for (int iter = 0; iter < 3000; iter++) {
		size_t first_len = (size_t)RECORDS_LOG_OVERHEAD + ((size_t)good.buf[10] << 8 | good.buf[11]);
		int rc;

		bad.len = out.len = 0;
		wr_raw(&bad, good.buf, good.len);
		for (int n = 0; n < 1 + iter % 4; n++) {
			rnd = rnd * 1103515245u + 12345u;
			bad.buf[(rnd >> 8) % bad.len] = (uint8_t)(rnd >> 24);
		}
		if (iter % 2 && records_batch_parse(bad.buf, bad.len, &(struct batch_hdr){ 0 }) == 0)
			resign(bad.buf, first_len < bad.len ? first_len : bad.len);
		clean_map_clear(map);
		rc = clean_map_build(map, bad.buf, bad.len, 0, &no_aborted, MAX_RECORDS_BYTES);
		assert_true(rc == 0 || rc == 1 || rc == -EBADMSG);
		o.covered_end = clean_map_latest_offset(map) + 1;
		rc = clean_segment(&o, bad.buf, bad.len, &out);
		assert_true(rc == 0 || rc == -EBADMSG);
	}
	wr_release(&good);
	wr_release(&bad);
	wr_release(&out);
	clean_map_free(map);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_map),
		cmocka_unit_test(test_latest_value_per_key),
		cmocka_unit_test(test_tombstones),
		cmocka_unit_test(test_tombstones_clean_part),
		cmocka_unit_test(test_codecs),
		cmocka_unit_test(test_aborted_transactions),
		cmocka_unit_test(test_producer_last_batch_kept),
		cmocka_unit_test(test_map_full),
		cmocka_unit_test(test_corrupt_input),
		cmocka_unit_test(test_mutations),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
