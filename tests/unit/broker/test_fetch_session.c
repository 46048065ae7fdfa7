/* test_fetch_session.c - the fetch session cache: ids, epochs, partitions, the respond rule, eviction. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "broker/fetch_session.h"

#define EVICT_MS 120000

static const struct fetch_session_req REQ0 = { 0, -1, 1 << 20, -1 };

static struct fetch_session *new_session(struct fetch_session_cache *cache, int64_t now, bool priv, int32_t nparts)
{
	struct fetch_session *sess;
	char topic[16];

	assert_int_equal(fetch_session_create(cache, now, priv, nparts, &sess), 0);
	for (int32_t i = 0; i < nparts; i++) {
		snprintf(topic, sizeof(topic), "t%d", i % 3);
		assert_true(fetch_session_upsert(cache, sess, topic, (int32_t)strlen(topic), i, &REQ0, NULL) >= 0);
	}
	fetch_session_touch(cache, sess, now);
	return sess;
}

/* The session's partitions in its order, as "topic-partition" joined by spaces. */
static const char *order(const struct fetch_session *sess)
{
	static char buf[512];
	size_t n = 0;

	buf[0] = '\0';
	for (int32_t i = sess->head; i >= 0; i = sess->parts[i].next)
		n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s%s-%d", n ? " " : "", sess->parts[i].topic,
				      sess->parts[i].partition);
	return buf;
}

static void test_epochs(void **state)
{
	(void)state;
	assert_int_equal(fetch_session_next_epoch(0), 1);
	assert_int_equal(fetch_session_next_epoch(1), 2);
	assert_int_equal(fetch_session_next_epoch(INT32_MAX), 1);
	assert_int_equal(fetch_session_next_epoch(-1), -1);
	assert_int_equal(fetch_session_next_epoch(-7), -1);
}

static void test_create_find_remove(void **state)
{
	struct fetch_session_cache cache;
	struct fetch_session *s[200];

	(void)state;
	assert_int_equal(fetch_session_cache_init(&cache, 1000, EVICT_MS, 42), 0);
	for (int i = 0; i < 200; i++) { /* past the first id table size: it grows */
		s[i] = new_session(&cache, 1000, false, 2);
		assert_true(s[i]->id > 0);
		assert_int_equal(s[i]->epoch, 1);
		for (int j = 0; j < i; j++)
			assert_int_not_equal(s[i]->id, s[j]->id);
	}
	assert_int_equal(cache.count, 200);
	assert_int_equal(cache.partitions, 400);
	for (int i = 0; i < 200; i++)
		assert_ptr_equal(fetch_session_find(&cache, s[i]->id), s[i]);
	assert_null(fetch_session_find(&cache, 0));
	for (int i = 0; i < 200; i += 2) {
		int32_t id = s[i]->id;

		fetch_session_remove(&cache, s[i]);
		assert_null(fetch_session_find(&cache, id));
	}
	for (int i = 1; i < 200; i += 2)
		assert_ptr_equal(fetch_session_find(&cache, s[i]->id), s[i]);
	assert_int_equal(cache.count, 100);
	assert_int_equal(cache.partitions, 200);
	fetch_session_cache_release(&cache);
}

static void test_no_slots(void **state)
{
	struct fetch_session_cache cache;
	struct fetch_session *sess = (void *)1;

	(void)state;
	assert_int_equal(fetch_session_cache_init(&cache, 0, EVICT_MS, 1), 0);
	assert_int_equal(fetch_session_create(&cache, 0, false, 10, &sess), -ENOSPC);
	assert_null(sess);
	assert_int_equal(fetch_session_create(&cache, 0, true, 10, &sess), -ENOSPC);
	fetch_session_cache_release(&cache);
}

static void test_upsert_forget_order(void **state)
{
	struct fetch_session_cache cache;
	struct fetch_session *sess;
	struct fetch_session_req req = { 42, 3, 100, 7 };
	bool added;
	int32_t idx;

	(void)state;
	assert_int_equal(fetch_session_cache_init(&cache, 10, EVICT_MS, 7), 0);
	sess = new_session(&cache, 0, false, 5); /* t0-0 t1-1 t2-2 t0-3 t1-4 */
	assert_string_equal(order(sess), "t0-0 t1-1 t2-2 t0-3 t1-4");
	/* update in place: no new entry, order kept, told state kept */
	idx = fetch_session_lookup(sess, "t2", 2, 2);
	sess->parts[idx].told.high_watermark = 9;
	assert_int_equal(fetch_session_upsert(&cache, sess, "t2", 2, 2, &req, &added), idx);
	assert_false(added);
	assert_int_equal(sess->parts[idx].fetch_offset, 42);
	assert_int_equal(sess->parts[idx].fetcher_log_start_offset, 3);
	assert_int_equal(sess->parts[idx].max_bytes, 100);
	assert_int_equal(sess->parts[idx].leader_epoch, 7);
	assert_int_equal(sess->parts[idx].told.high_watermark, 9);
	assert_string_equal(order(sess), "t0-0 t1-1 t2-2 t0-3 t1-4");
	/* same partition number, other topic; same topic prefix */
	assert_int_equal(fetch_session_lookup(sess, "t0", 2, 2), -1);
	assert_int_equal(fetch_session_lookup(sess, "t", 1, 2), -1);
	assert_int_equal(fetch_session_lookup(sess, "t22", 3, 2), -1);
	/* forget, re-add: the freed entry is reused, the partition goes last with nothing told */
	assert_true(fetch_session_forget(&cache, sess, "t1", 2, 1));
	assert_false(fetch_session_forget(&cache, sess, "t1", 2, 1));
	assert_false(fetch_session_forget(&cache, sess, "nosuch", 6, 0));
	assert_string_equal(order(sess), "t0-0 t2-2 t0-3 t1-4");
	assert_int_equal(sess->n, 4);
	assert_int_equal(cache.partitions, 4);
	idx = fetch_session_upsert(&cache, sess, "new", 3, 0, &REQ0, &added);
	assert_true(added);
	assert_int_equal(idx, 1); /* the freed entry */
	assert_int_equal(sess->parts[idx].told.high_watermark, -1);
	assert_string_equal(order(sess), "t0-0 t2-2 t0-3 t1-4 new-0");
	/* move to the end: head, middle, tail */
	fetch_session_move_last(sess, fetch_session_lookup(sess, "t0", 2, 0));
	fetch_session_move_last(sess, fetch_session_lookup(sess, "t0", 2, 3));
	fetch_session_move_last(sess, fetch_session_lookup(sess, "t0", 2, 3));
	assert_string_equal(order(sess), "t2-2 t1-4 new-0 t0-0 t0-3");
	/* forget head and tail */
	assert_true(fetch_session_forget(&cache, sess, "t2", 2, 2));
	assert_true(fetch_session_forget(&cache, sess, "t0", 2, 3));
	assert_string_equal(order(sess), "t1-4 new-0 t0-0");
	fetch_session_cache_release(&cache);
}

static void test_many_partitions(void **state)
{
	struct fetch_session_cache cache;
	struct fetch_session *sess;

	(void)state;
	assert_int_equal(fetch_session_cache_init(&cache, 10, EVICT_MS, 9), 0);
	sess = new_session(&cache, 0, false, 3000); /* the table grows several times */
	for (int32_t i = 0; i < 3000; i++) {
		char topic[16];
		int32_t idx;

		snprintf(topic, sizeof(topic), "t%d", i % 3);
		idx = fetch_session_lookup(sess, topic, 2, i);
		assert_true(idx >= 0);
		assert_int_equal(sess->parts[idx].partition, i);
	}
	for (int32_t i = 0; i < 3000; i += 2) {
		char topic[16];

		snprintf(topic, sizeof(topic), "t%d", i % 3);
		assert_true(fetch_session_forget(&cache, sess, topic, 2, i));
	}
	assert_int_equal(sess->n, 1500);
	for (int32_t i = 0; i < 1500; i++) /* refills the freed entries: no growth */
		assert_true(fetch_session_upsert(&cache, sess, "x", 1, i, &REQ0, NULL) < 3000);
	assert_int_equal(sess->used, 3000);
	assert_int_equal(cache.partitions, 3000);
	fetch_session_remove(&cache, sess);
	assert_int_equal(cache.partitions, 0);
	fetch_session_cache_release(&cache);
}

static void test_must_respond(void **state)
{
	struct fetch_session_told told = { -1, -1, -1 };
	struct fetch_session_state st = { .high_watermark = 10, .last_stable_offset = 10, .log_start_offset = 0 };

	(void)state;
	assert_true(fetch_session_must_respond(&told, &st, false)); /* never told */
	assert_int_equal(told.high_watermark, -1);                  /* not updated */
	assert_true(fetch_session_must_respond(&told, &st, true));
	assert_int_equal(told.high_watermark, 10);
	assert_false(fetch_session_must_respond(&told, &st, true)); /* nothing new */
	st.records_bytes = 100;
	assert_true(fetch_session_must_respond(&told, &st, true)); /* records */
	st.records_bytes = 0;
	st.high_watermark = 11;
	assert_true(fetch_session_must_respond(&told, &st, true)); /* high watermark */
	assert_false(fetch_session_must_respond(&told, &st, true));
	st.last_stable_offset = 11;
	assert_true(fetch_session_must_respond(&told, &st, true)); /* last stable offset */
	st.log_start_offset = 5;
	assert_true(fetch_session_must_respond(&told, &st, true)); /* log start offset */
	assert_false(fetch_session_must_respond(&told, &st, true));
	st.error_code = 6;
	assert_true(fetch_session_must_respond(&told, &st, true)); /* an error, every time */
	assert_true(fetch_session_must_respond(&told, &st, true));
	assert_int_equal(told.high_watermark, -1);
	st.error_code = 0;
	assert_true(fetch_session_must_respond(&told, &st, true)); /* error cleared: sent again */
	assert_false(fetch_session_must_respond(&told, &st, true));
}

static void test_expire(void **state)
{
	struct fetch_session_cache cache;
	struct fetch_session *a, *b, *c;
	int32_t ida, idb;

	(void)state;
	assert_int_equal(fetch_session_cache_init(&cache, 10, 1000, 3), 0);
	a = new_session(&cache, 0, false, 1);
	b = new_session(&cache, 100, false, 1);
	c = new_session(&cache, 200, false, 1);
	ida = a->id, idb = b->id;
	fetch_session_touch(&cache, a, 900); /* a now the most recently used */
	assert_int_equal(fetch_session_expire(&cache, 1000), 0);
	assert_int_equal(fetch_session_expire(&cache, 1101), 1); /* b: idle 1001 ms */
	assert_null(fetch_session_find(&cache, idb));
	assert_int_equal(fetch_session_expire(&cache, 1200), 0); /* c: idle exactly 1000 ms */
	assert_int_equal(fetch_session_expire(&cache, 1201), 1);
	assert_ptr_equal(fetch_session_find(&cache, ida), a);
	assert_int_equal(fetch_session_expire(&cache, 5000), 1);
	assert_int_equal(cache.count, 0);
	assert_int_equal(cache.evictions, 3);
	(void)c;
	fetch_session_cache_release(&cache);
}

static void test_evict_stale_first(void **state)
{
	struct fetch_session_cache cache;
	struct fetch_session *a, *b, *c;
	int32_t ida;

	(void)state;
	assert_int_equal(fetch_session_cache_init(&cache, 2, 1000, 5), 0);
	a = new_session(&cache, 0, false, 50);
	b = new_session(&cache, 500, false, 1);
	ida = a->id;
	/* full, nobody stale or old enough: a new session gets no slot, whatever its size */
	assert_int_equal(fetch_session_create(&cache, 900, false, 1000, &c), -ENOSPC);
	/* a is stale (unused > 1000 ms): it goes first, though it is the biggest */
	fetch_session_touch(&cache, b, 1400);
	assert_int_equal(fetch_session_create(&cache, 1500, false, 1, &c), 0);
	assert_null(fetch_session_find(&cache, ida));
	assert_ptr_equal(fetch_session_find(&cache, b->id), b);
	assert_int_equal(cache.count, 2);
	fetch_session_cache_release(&cache);
}

static void test_evict_smaller_old(void **state)
{
	struct fetch_session_cache cache;
	struct fetch_session *small, *big, *young, *c;
	int32_t id_small;

	(void)state;
	assert_int_equal(fetch_session_cache_init(&cache, 3, 1000, 11), 0);
	small = new_session(&cache, 0, false, 5);
	big = new_session(&cache, 0, false, 50);
	young = new_session(&cache, 1500, false, 1); /* too young to be evicted by a consumer */
	id_small = small->id;
	fetch_session_touch(&cache, small, 1900); /* nobody stale */
	fetch_session_touch(&cache, big, 1900);
	/* not bigger than every evictable one (equal does not do): no slot */
	assert_int_equal(fetch_session_create(&cache, 2000, false, 4, &c), -ENOSPC);
	assert_int_equal(fetch_session_create(&cache, 2000, false, 5, &c), -ENOSPC);
	/* bigger than the smallest old session: it takes that slot (not the young, smaller one's) */
	assert_int_equal(fetch_session_create(&cache, 2000, false, 6, &c), 0);
	assert_null(fetch_session_find(&cache, id_small));
	assert_ptr_equal(fetch_session_find(&cache, young->id), young);
	assert_ptr_equal(fetch_session_find(&cache, big->id), big);
	assert_int_equal(cache.evictions, 1);
	fetch_session_cache_release(&cache);
}

static void test_evict_privileged(void **state)
{
	struct fetch_session_cache cache;
	struct fetch_session *consumer, *follower, *c;
	int32_t id_consumer;

	(void)state;
	assert_int_equal(fetch_session_cache_init(&cache, 2, 1000, 13), 0);
	consumer = new_session(&cache, 0, false, 100);
	follower = new_session(&cache, 0, true, 1);
	id_consumer = consumer->id;
	/* young sessions: a follower may still evict a consumer's, even a bigger one */
	assert_int_equal(fetch_session_create(&cache, 10, false, 1000, &c), -ENOSPC);
	assert_int_equal(fetch_session_create(&cache, 10, true, 1, &c), 0);
	assert_null(fetch_session_find(&cache, id_consumer));
	assert_true(c->privileged);
	/* a consumer never evicts a follower's session, old or not, unless stale */
	fetch_session_touch(&cache, follower, 1500);
	fetch_session_touch(&cache, c, 1500);
	assert_int_equal(fetch_session_create(&cache, 1600, false, 1000, &c), -ENOSPC);
	fetch_session_cache_release(&cache);
}

static void test_partitions_max(void **state)
{
	struct fetch_session_cache cache;
	struct fetch_session *a, *b;

	(void)state;
	assert_int_equal(fetch_session_cache_init(&cache, 10, EVICT_MS, 17), 0);
	assert_int_equal(cache.partitions_max, FETCH_SESSION_PARTITIONS_MAX);
	cache.partitions_max = 10;
	a = new_session(&cache, 0, false, 6);
	assert_int_equal(fetch_session_create(&cache, 0, false, 5, &b), -ENOSPC); /* 6 + 5 > 10 */
	b = new_session(&cache, 0, false, 4);
	assert_int_equal(cache.partitions, 10);
	/* full: updating a partition still works, adding one does not */
	assert_true(fetch_session_upsert(&cache, a, "t0", 2, 0, &REQ0, NULL) >= 0);
	assert_int_equal(fetch_session_upsert(&cache, a, "t0", 2, 99, &REQ0, NULL), -ENOSPC);
	assert_int_equal(a->n, 6);
	assert_true(fetch_session_forget(&cache, b, "t0", 2, 0));
	assert_true(fetch_session_upsert(&cache, a, "t0", 2, 99, &REQ0, NULL) >= 0);
	assert_int_equal(cache.partitions, 10);
	fetch_session_cache_release(&cache);
}

/* Random upserts, forgets and moves against a plain array of the expected order. */
static void test_random_against_model(void **state)
{
	struct fetch_session_cache cache;
	struct fetch_session *sess;
	int32_t model[256], n = 0; /* partition numbers in order; topic = "t<p % 7>" */
	uint32_t rng = 12345;

	(void)state;
	assert_int_equal(fetch_session_cache_init(&cache, 1, EVICT_MS, 19), 0);
	assert_int_equal(fetch_session_create(&cache, 0, false, 0, &sess), 0);
	for (int step = 0; step < 20000; step++) {
		int32_t p, pos = -1, i = 0;
		char topic[8];
		int op;

		rng = rng * 1103515245u + 12345u;
		p = (int32_t)((rng >> 16) % 200);
		op = (int)((rng >> 8) % 3);
		snprintf(topic, sizeof(topic), "t%d", p % 7);
		for (int32_t k = 0; k < n; k++)
			if (model[k] == p)
				pos = k;
		if (op == 0) { /* upsert: appended if new */
			assert_true(fetch_session_upsert(&cache, sess, topic, 2, p, &REQ0, NULL) >= 0);
			if (pos < 0)
				model[n++] = p;
		} else if (op == 1) { /* forget */
			assert_int_equal(fetch_session_forget(&cache, sess, topic, 2, p), pos >= 0);
			if (pos >= 0)
				memmove(&model[pos], &model[pos + 1], (size_t)(--n - pos) * sizeof(*model));
		} else if (pos >= 0) { /* move last */
			fetch_session_move_last(sess, fetch_session_lookup(sess, topic, 2, p));
			memmove(&model[pos], &model[pos + 1], (size_t)(n - 1 - pos) * sizeof(*model));
			model[n - 1] = p;
		}
		assert_int_equal(sess->n, n);
		assert_int_equal(cache.partitions, n);
		for (int32_t k = sess->head; k >= 0; k = sess->parts[k].next, i++)
			assert_int_equal(sess->parts[k].partition, model[i]);
		assert_int_equal(i, n);
		assert_true(sess->used <= 256);
	}
	fetch_session_cache_release(&cache);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_epochs),
		cmocka_unit_test(test_create_find_remove),
		cmocka_unit_test(test_no_slots),
		cmocka_unit_test(test_upsert_forget_order),
		cmocka_unit_test(test_many_partitions),
		cmocka_unit_test(test_must_respond),
		cmocka_unit_test(test_expire),
		cmocka_unit_test(test_evict_stale_first),
		cmocka_unit_test(test_evict_smaller_old),
		cmocka_unit_test(test_evict_privileged),
		cmocka_unit_test(test_partitions_max),
		cmocka_unit_test(test_random_against_model),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
