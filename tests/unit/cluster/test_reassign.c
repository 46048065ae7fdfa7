/* test_reassign.c - partition reassignment's pure parts: reassign_apply() (RS = TRS + ORS, adding,
 * removing, a new target replacing one under way, cancel, Kafka's errors), the end (leaders_next() moves a
 * leader that is no longer a replica and shrinks the ISR to the replicas) and the topic znode with
 * adding_replicas / removing_replicas and /admin/reassign_partitions read back. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/leaders.h"
#include "cluster/reassign.h"
#include "cluster/znode.h"
#include "proto/kerr.h"

static const int32_t brokers[] = { 1, 2, 3, 4 };

static struct znode_replicas ids(int32_t n, const int32_t *v)
{
	struct znode_replicas r = { .n = n };

	memcpy(r.ids, v, sizeof(*v) * (size_t)n);
	return r;
}

static void assert_ids(const struct znode_replicas *r, int32_t n, const int32_t *v)
{
	assert_int_equal(r->n, n);
	for (int32_t i = 0; i < n; i++)
		assert_int_equal(r->ids[i], v[i]);
}

static void test_start_and_cancel(void **state)
{
	struct znode_replicas rs = ids(2, (int32_t[]){ 1, 2 }), add = { 0 }, rem = { 0 }, dropped;
	struct znode_replicas target = ids(2, (int32_t[]){ 3, 2 });

	(void)state;
	assert_int_equal(reassign_apply(&rs, &add, &rem, &target, brokers, 4, &dropped), KERR_NONE);
	assert_ids(&rs, 3, (int32_t[]){ 3, 2, 1 }); /* targets first, then the ones leaving */
	assert_ids(&add, 1, (int32_t[]){ 3 });
	assert_ids(&rem, 1, (int32_t[]){ 1 });
	assert_int_equal(dropped.n, 0);
	/* a new target while one is under way: the original replicas stay [1, 2] */
	target = ids(2, (int32_t[]){ 4, 1 });
	assert_int_equal(reassign_apply(&rs, &add, &rem, &target, brokers, 4, &dropped), KERR_NONE);
	assert_ids(&rs, 3, (int32_t[]){ 4, 1, 2 });
	assert_ids(&add, 1, (int32_t[]){ 4 });
	assert_ids(&rem, 1, (int32_t[]){ 2 });
	assert_ids(&dropped, 1, (int32_t[]){ 3 }); /* added before, no longer wanted */
	assert_int_equal(reassign_apply(&rs, &add, &rem, NULL, brokers, 4, &dropped), KERR_NONE);
	assert_ids(&rs, 2, (int32_t[]){ 1, 2 });
	assert_int_equal(add.n + rem.n, 0);
	assert_ids(&dropped, 1, (int32_t[]){ 4 });
	assert_int_equal(reassign_apply(&rs, &add, &rem, NULL, brokers, 4, &dropped), KERR_NO_REASSIGNMENT_IN_PROGRESS);
}

static void test_invalid(void **state)
{
	struct znode_replicas rs = ids(1, (int32_t[]){ 1 }), add = { 0 }, rem = { 0 }, dropped;
	const struct znode_replicas bad[] = {
		{ 0 }, ids(2, (int32_t[]){ 2, 2 }), ids(1, (int32_t[]){ 9 }), ids(1, (int32_t[]){ -1 })
	};

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(reassign_apply(&rs, &add, &rem, &bad[i], brokers, 4, &dropped),
				 KERR_INVALID_REPLICA_ASSIGNMENT);
		assert_ids(&rs, 1, (int32_t[]){ 1 });
	}
}

static void test_end_moves_leader(void **state)
{
	static const int32_t live[] = { 1, 2, 3 };
	struct znode_replicas trs = ids(1, (int32_t[]){ 2 });
	struct znode_state st = { .leader = 1, .leader_epoch = 4, .isr = ids(2, (int32_t[]){ 1, 2 }) };

	(void)state;
	assert_true(leaders_next(live, 3, &trs, true, false, &st));
	assert_int_equal(st.leader, 2);
	assert_int_equal(st.leader_epoch, 5);
	assert_ids(&st.isr, 1, (int32_t[]){ 2 });
	assert_false(leaders_next(live, 3, &trs, true, false, &st));
}

static void test_znode(void **state)
{
	const char *doc =
		"{\"version\":3,\"partitions\":{\"0\":[3,1],\"1\":[2]},\"topic_id\":\"AAAAAAAAAAAAAAAAAAAAAA\","
		"\"adding_replicas\":{\"0\":[3]},\"removing_replicas\":{\"0\":[1]}}";
	const char *legacy = "{\"version\":1,\"partitions\":[{\"topic\":\"t\",\"partition\":2,\"replicas\":[1,3]}]}";
	struct znode_topic zt, back;
	struct znode_reassign *v;
	char *out;
	int n;

	(void)state;
	assert_int_equal(znode_topic_decode(doc, strlen(doc), &zt), 0);
	assert_ids(&zt.adding[0], 1, (int32_t[]){ 3 });
	assert_ids(&zt.removing[0], 1, (int32_t[]){ 1 });
	assert_int_equal(zt.adding[1].n, 0);
	out = znode_topic_doc_encode(&zt);
	assert_non_null(strstr(out, "\"adding_replicas\": {\"0\": [3]}")
				?: strstr(out, "\"adding_replicas\":{\"0\":[3]}"));
	assert_int_equal(znode_topic_decode(out, strlen(out), &back), 0);
	assert_ids(&back.parts[0], 2, (int32_t[]){ 3, 1 });
	assert_ids(&back.removing[0], 1, (int32_t[]){ 1 });
	free(out);
	znode_topic_free(&zt);
	znode_topic_free(&back);
	assert_int_equal(znode_reassign_decode(legacy, strlen(legacy), &v, &n), 0);
	assert_int_equal(n, 1);
	assert_string_equal(v[0].topic, "t");
	assert_int_equal(v[0].partition, 2);
	assert_ids(&v[0].replicas, 2, (int32_t[]){ 1, 3 });
	free(v);
	assert_int_equal(znode_reassign_decode("{\"partitions\":[{\"topic\":\"t\"}]}", 31, &v, &n), -EBADMSG);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_start_and_cancel),
		cmocka_unit_test(test_invalid),
		cmocka_unit_test(test_end_moves_leader),
		cmocka_unit_test(test_znode),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
