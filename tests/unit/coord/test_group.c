/*
 * test_group.c - the group coordinator state machine: join phases and
 * generations, leader election, SyncGroup, Heartbeat answers per state,
 * LeaveGroup, static member replacement, MEMBER_ID_REQUIRED, commit
 * checks, DeleteGroups rules, static members kept through a join timeout,
 * and reloading groups and offsets from the
 * __consumer_offsets partition they were written to (also from another
 * partition, where an older partition function put them).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "../tmpdir.h"

#include "coord/group.h"
#include "log/partition.h"
#include "proto/kerr.h"
#include "util/clock.h"

/* What the last callback for each waiter said. */
struct answer {
	bool done;
	int16_t error;
	int32_t generation, nmembers;
	char member_id[256], leader[256], assignment[64];
};

static void on_join(void *waiter, const struct group_join_result *res)
{
	struct answer *a = waiter;

	a->done = true;
	a->error = res->error;
	a->generation = res->generation;
	a->nmembers = res->nmembers;
	snprintf(a->member_id, sizeof(a->member_id), "%.*s", res->member_id.len, res->member_id.p);
	snprintf(a->leader, sizeof(a->leader), "%.*s", res->leader.len, res->leader.p);
}

static void on_sync(void *waiter, const struct group_sync_result *res)
{
	struct answer *a = waiter;

	a->done = true;
	a->error = res->error;
	snprintf(a->assignment, sizeof(a->assignment), "%.*s", res->assignment.len, (const char *)res->assignment.p);
}

struct fx {
	char root[64];
	struct loop *loop;
	struct part *part;
	struct group_coord *gc;
};

static const struct group_coord_ops ops = { on_join, on_sync };
static const struct group_coord_cfg cfg = {
	.initial_rebalance_delay_ms = 0,
	.min_session_timeout_ms = 10,
	.max_session_timeout_ms = 600000,
	.max_size = 100,
	.offsets_retention_ms = 86400000,
	.retention_check_interval_ms = 600000,
};

static struct part *fx_part(void *arg, int32_t partition)
{
	struct fx *fx = arg;

	return partition == 0 ? fx->part : NULL;
}

static void fx_open(struct fx *fx)
{
	char dir[128];
	struct part_cfg pc;

	part_cfg_default(&pc);
	snprintf(dir, sizeof(dir), "%s/__consumer_offsets-0", fx->root);
	assert_int_equal(part_open(dir, &pc, -1, 0, &fx->part), 0);
	assert_int_equal(group_coord_new(fx->loop, &cfg, &ops, &fx->gc), 0);
	assert_int_equal(group_coord_attach(fx->gc, &(struct coord_topic){ fx_part, fx, 1 }), 0);
}

static void fx_close(struct fx *fx)
{
	group_coord_free(fx->gc);
	part_close(fx->part);
}

static int fx_setup(void **state)
{
	struct fx *fx = calloc(1, sizeof(*fx));

	tmpdir_make(fx->root, sizeof(fx->root), "group");
	assert_int_equal(loop_new(&fx->loop), 0);
	fx_open(fx);
	*state = fx;
	return 0;
}

static int fx_teardown(void **state)
{
	struct fx *fx = *state;

	fx_close(fx);
	loop_free(fx->loop);
	tmpdir_remove(fx->root);
	free(fx);
	return 0;
}

static int32_t rebalance_ms = 10000; /* rebalance timeout of the next joins */

static void join(struct fx *fx, const char *group, const char *member, const char *instance, struct answer *a, bool v4)
{
	struct group_protocol_arg proto = { KSTR("range"), { (const uint8_t *)"sub", 3 } };
	struct group_join_args args = {
		.group_id = kstr_c(group),
		.member_id = kstr_c(member),
		.group_instance_id = kstr_c(instance),
		.protocol_type = KSTR("consumer"),
		.client_id = KSTR("cid"),
		.client_host = KSTR("/127.0.0.1"),
		.session_timeout_ms = 10000,
		.rebalance_timeout_ms = rebalance_ms,
		.protocols = &proto,
		.nprotocols = 1,
		.require_known_member_id = v4,
	};

	memset(a, 0, sizeof(*a));
	group_join(fx->gc, &args, a);
}

static void do_sync(struct fx *fx, const char *member, int32_t gen, const char *assign_to, struct answer *a)
{
	struct group_sync_assignment as = { kstr_c(assign_to), { (const uint8_t *)"A1", 2 } };
	struct group_sync_args args = {
		.group_id = KSTR("g"),
		.member_id = kstr_c(member),
		.group_instance_id = KSTR_NULL,
		.protocol_type = KSTR_NULL,
		.protocol_name = KSTR_NULL,
		.generation = gen,
		.assignments = assign_to ? &as : NULL,
		.nassignments = assign_to ? 1 : 0,
	};

	memset(a, 0, sizeof(*a));
	group_sync(fx->gc, &args, a);
}

static enum group_state state_of(struct fx *fx, const char *group)
{
	return group_state(group_find(fx->gc, kstr_c(group)));
}

static void test_join_sync_rebalance(void **state)
{
	struct fx *fx = *state;
	struct answer a, b, sa, sb;
	char ida[256], idb[256];

	join(fx, "g", "", NULL, &a, false);
	assert_true(a.done);
	assert_int_equal(a.error, KERR_NONE);
	assert_int_equal(a.generation, 1);
	assert_string_equal(a.leader, a.member_id);
	assert_int_equal(a.nmembers, 1);
	assert_int_equal(state_of(fx, "g"), GROUP_COMPLETING_REBALANCE);
	strcpy(ida, a.member_id);
	do_sync(fx, ida, 1, ida, &sa);
	assert_true(sa.done);
	assert_string_equal(sa.assignment, "A1");
	assert_int_equal(state_of(fx, "g"), GROUP_STABLE);
	assert_int_equal(group_heartbeat(fx->gc, KSTR("g"), kstr_c(ida), KSTR_NULL, 1), KERR_NONE);

	join(fx, "g", "", NULL, &b, false); /* a second member: the first must rejoin */
	assert_false(b.done);
	assert_int_equal(state_of(fx, "g"), GROUP_PREPARING_REBALANCE);
	assert_int_equal(group_heartbeat(fx->gc, KSTR("g"), kstr_c(ida), KSTR_NULL, 1), KERR_REBALANCE_IN_PROGRESS);
	assert_int_equal(group_heartbeat(fx->gc, KSTR("g"), kstr_c(ida), KSTR_NULL, 0), KERR_ILLEGAL_GENERATION);
	join(fx, "g", ida, NULL, &a, false);
	assert_true(a.done && b.done);
	assert_int_equal(a.generation, 2);
	assert_int_equal(b.generation, 2);
	assert_int_equal(a.nmembers, 2); /* the leader gets the members */
	assert_int_equal(b.nmembers, 0);
	strcpy(idb, b.member_id);
	do_sync(fx, idb, 2, NULL, &sb);
	assert_false(sb.done); /* waits for the leader */
	assert_int_equal(group_heartbeat(fx->gc, KSTR("g"), kstr_c(idb), KSTR_NULL, 2), KERR_NONE);
	do_sync(fx, ida, 2, idb, &sa);
	assert_true(sa.done && sb.done);
	assert_string_equal(sb.assignment, "A1");
	assert_string_equal(sa.assignment, "");
	assert_int_equal(state_of(fx, "g"), GROUP_STABLE);

	assert_int_equal(group_leave(fx->gc, KSTR("g"), KSTR("nobody"), KSTR_NULL), KERR_UNKNOWN_MEMBER_ID);
	assert_int_equal(group_leave(fx->gc, KSTR("g"), kstr_c(idb), KSTR_NULL), KERR_NONE);
	assert_int_equal(state_of(fx, "g"), GROUP_PREPARING_REBALANCE);
	join(fx, "g", ida, NULL, &a, false);
	assert_int_equal(a.generation, 3);
	assert_int_equal(group_leave(fx->gc, KSTR("g"), kstr_c(ida), KSTR_NULL), KERR_NONE);
	assert_int_equal(state_of(fx, "g"), GROUP_EMPTY);
	assert_int_equal(group_generation(group_find(fx->gc, KSTR("g"))), 4);
}

static void test_join_errors(void **state)
{
	struct fx *fx = *state;
	struct answer a, b;

	join(fx, "", "", NULL, &a, false);
	assert_int_equal(a.error, KERR_INVALID_GROUP_ID);
	join(fx, "g", "ghost", NULL, &a, false);
	assert_int_equal(a.error, KERR_UNKNOWN_MEMBER_ID);
	join(fx, "g", "", NULL, &a, true);
	assert_int_equal(a.error, KERR_MEMBER_ID_REQUIRED);
	assert_true(a.member_id[0] != '\0');
	join(fx, "g", a.member_id, NULL, &b, true);
	assert_int_equal(b.error, KERR_NONE);
	assert_string_equal(b.member_id, a.member_id);
	assert_int_equal(b.generation, 1);
}

static void test_static_member(void **state)
{
	struct fx *fx = *state;
	struct answer a, b, s, old_hb;
	char ida[256], idb[256];

	join(fx, "g", "", "inst-a", &a, true); /* static members need no MEMBER_ID_REQUIRED */
	assert_int_equal(a.error, KERR_NONE);
	strcpy(ida, a.member_id);
	do_sync(fx, ida, 1, ida, &s);
	assert_int_equal(state_of(fx, "g"), GROUP_STABLE);
	join(fx, "g", "", "inst-a", &b, true); /* the same instance restarts */
	assert_true(b.done);
	assert_int_equal(b.error, KERR_NONE);
	assert_int_equal(b.generation, 1);  /* no rebalance */
	assert_string_equal(b.leader, ida); /* the old leader id: b must not reassign */
	strcpy(idb, b.member_id);
	assert_string_not_equal(ida, idb);
	assert_int_equal(state_of(fx, "g"), GROUP_STABLE);
	assert_int_equal(group_heartbeat(fx->gc, KSTR("g"), kstr_c(ida), KSTR("inst-a"), 1), KERR_FENCED_INSTANCE_ID);
	assert_int_equal(group_heartbeat(fx->gc, KSTR("g"), kstr_c(idb), KSTR("inst-a"), 1), KERR_NONE);
	do_sync(fx, idb, 1, NULL, &s);
	assert_true(s.done);
	assert_string_equal(s.assignment, "A1"); /* its old assignment */
	(void)old_hb;
}

static struct loop *stop_loop;

static void on_stop_timer(struct loop_timer *t)
{
	(void)t;
	loop_stop(stop_loop);
}

/* Runs fx's loop (its timers) for ms. */
static void run_loop(struct fx *fx, int64_t ms)
{
	struct loop_timer stop;

	stop_loop = fx->loop;
	loop_timer_init(&stop, on_stop_timer);
	loop_timer_set(fx->loop, &stop, clock_mono_ms() + ms);
	assert_int_equal(loop_run(fx->loop), 0);
}

/*
 * Kafka's onCompleteJoin: a static member that has not rejoined when the
 * join phase times out stays in the new generation (the leadership moves
 * to a member that rejoined) and, coming back with an empty member id to
 * the Stable group, gets its assignment without another rebalance.
 */
static void test_static_kept_after_join_timeout(void **state)
{
	struct fx *fx = *state;
	struct answer a, b, s, sb;
	char ida[256], idb[256];

	rebalance_ms = 50;
	join(fx, "g", "", "inst-a", &a, true);
	strcpy(ida, a.member_id);
	do_sync(fx, ida, 1, ida, &s);
	join(fx, "g", "", "inst-b", &b, true); /* a stalls: it does not rejoin */
	assert_false(b.done);
	run_loop(fx, 200);
	assert_true(b.done);
	assert_int_equal(b.error, KERR_NONE);
	assert_int_equal(b.generation, 2);
	strcpy(idb, b.member_id);
	assert_string_equal(b.leader, idb); /* the leader rejoined */
	assert_int_equal(b.nmembers, 2);    /* a is still a member */
	assert_int_equal(group_member_count(group_find(fx->gc, KSTR("g"))), 2);
	do_sync(fx, idb, 2, ida, &sb);
	assert_true(sb.done);
	assert_int_equal(state_of(fx, "g"), GROUP_STABLE);
	join(fx, "g", "", "inst-a", &a, true); /* a is back, its member id reset */
	assert_true(a.done);
	assert_int_equal(a.error, KERR_NONE);
	assert_int_equal(a.generation, 2); /* no rebalance */
	assert_int_equal(state_of(fx, "g"), GROUP_STABLE);
	do_sync(fx, a.member_id, 2, NULL, &s);
	assert_string_equal(s.assignment, "A1"); /* what the leader gave a's old member id */
	rebalance_ms = 10000;
}

static void test_offsets_and_reload(void **state)
{
	struct fx *fx = *state;
	struct group *grp = NULL;
	struct group_offset o[2] = {
		{ .topic = "t", .partition = 0, .offset = 42, .leader_epoch = -1, .metadata = "m", .commit_ts_ms = 1 },
		{ .topic = "t", .partition = 1, .offset = 7, .leader_epoch = 3, .metadata = NULL, .commit_ts_ms = 1 },
	};
	struct part *part;
	struct answer a, s;
	const struct group_offset *got;

	assert_int_equal(group_commit_check(fx->gc, KSTR("simple"), KSTR(""), KSTR_NULL, 5, &grp),
			 KERR_ILLEGAL_GENERATION);
	assert_int_equal(group_commit_check(fx->gc, KSTR("simple"), KSTR(""), KSTR_NULL, -1, &grp), KERR_NONE);
	assert_int_equal(group_commit(fx->gc, grp, o, 2, &part), 0);
	join(fx, "g", "", NULL, &a, false);
	do_sync(fx, a.member_id, 1, a.member_id, &s);
	assert_int_equal(group_commit_check(fx->gc, KSTR("g"), KSTR("x"), KSTR_NULL, 1, &grp), KERR_UNKNOWN_MEMBER_ID);
	assert_int_equal(group_commit_check(fx->gc, KSTR("g"), kstr_c(a.member_id), KSTR_NULL, 1, &grp), KERR_NONE);
	assert_int_equal(group_commit(fx->gc, grp, o, 1, &part), 0);
	assert_int_equal(group_delete(fx->gc, KSTR("g"), &part), KERR_NON_EMPTY_GROUP);
	assert_int_equal(group_delete(fx->gc, KSTR("nope"), &part), KERR_GROUP_ID_NOT_FOUND);

	fx_close(fx); /* reload everything from the partition */
	fx_open(fx);
	grp = group_find(fx->gc, KSTR("simple"));
	assert_non_null(grp);
	got = group_store_offset_get(group_offsets(grp), KSTR("t"), 1);
	assert_non_null(got);
	assert_int_equal(got->offset, 7);
	assert_int_equal(got->leader_epoch, 3);
	assert_string_equal(got->metadata, "");
	grp = group_find(fx->gc, KSTR("g"));
	assert_int_equal(group_state(grp), GROUP_STABLE);
	assert_int_equal(group_generation(grp), 1);
	assert_int_equal(group_member_count(grp), 1);
	assert_int_equal(group_store_offset_get(group_offsets(grp), KSTR("t"), 0)->offset, 42);
	assert_int_equal(group_heartbeat(fx->gc, KSTR("g"), kstr_c(a.member_id), KSTR_NULL, 1), KERR_NONE);
	assert_int_equal(group_delete(fx->gc, KSTR("simple"), &part), KERR_NONE);
	fx_close(fx);
	fx_open(fx);
	assert_null(group_find(fx->gc, KSTR("simple")));
	assert_non_null(group_find(fx->gc, KSTR("g")));
}

static void test_txn_offsets(void **state)
{
	struct fx *fx = *state;
	struct group *grp = NULL;
	struct group_offset o = { .topic = "t", .partition = 0, .offset = 9, .leader_epoch = -1, .metadata = "" };

	assert_int_equal(group_commit_check(fx->gc, KSTR("tg"), KSTR(""), KSTR_NULL, -1, &grp), KERR_NONE);
	assert_int_equal(group_txn_stage(fx->gc, grp, 77, &o, 1), 0);
	assert_null(group_store_offset_get(group_offsets(grp), KSTR("t"), 0));
	assert_true(group_store_offset_pending(group_offsets(grp), KSTR("t"), 0));
	group_txn_complete(fx->gc, group_coord_partition(fx->gc, KSTR("tg")) + 1, 77, true);
	assert_true(group_store_offset_pending(group_offsets(grp), KSTR("t"), 0)); /* another partition's marker */
	group_txn_complete(fx->gc, group_coord_partition(fx->gc, KSTR("tg")), 77, true);
	assert_false(group_store_offset_pending(group_offsets(grp), KSTR("t"), 0));
	assert_int_equal(group_store_offset_get(group_offsets(grp), KSTR("t"), 0)->offset, 9);
}

/* Three partitions; with legacy set, partition 0 is reached as partition 2 (where masking the hash put "my-group"). */
struct fx3 {
	struct part *parts[3];
	bool legacy;
};

static struct part *fx3_part(void *arg, int32_t partition)
{
	struct fx3 *f = arg;

	if (partition < 0 || partition > 2)
		return NULL;
	return f->parts[f->legacy && partition == 0 ? 2 : partition];
}

/* Opens the three partitions (their high watermarks at their log ends), loads, commits offset (>= 0), closes. */
static int64_t fx3_commit_reload(struct fx *fx, struct fx3 *f, int64_t offset)
{
	struct group_offset o = { .topic = "t", .partition = 0, .offset = offset, .leader_epoch = -1, .metadata = "" };
	struct group_coord *gc;
	struct group *grp = NULL;
	struct part *part;
	const struct group_offset *got;
	struct part_cfg pc;
	char dir[128];
	int64_t loaded;

	part_cfg_default(&pc);
	for (int i = 0; i < 3; i++) {
		snprintf(dir, sizeof(dir), "%s/x-%d", fx->root, i);
		assert_int_equal(part_open(dir, &pc, -1, 0, &f->parts[i]), 0);
	}
	assert_int_equal(group_coord_new(fx->loop, &cfg, &ops, &gc), 0);
	assert_int_equal(group_coord_attach(gc, &(struct coord_topic){ fx3_part, f, 3 }), 0);
	grp = group_find(gc, KSTR("my-group"));
	got = grp ? group_store_offset_get(group_offsets(grp), KSTR("t"), 0) : NULL;
	loaded = got ? got->offset : -1;
	if (offset >= 0) {
		assert_int_equal(group_commit_check(gc, KSTR("my-group"), KSTR(""), KSTR_NULL, -1, &grp), KERR_NONE);
		assert_int_equal(group_commit(gc, grp, &o, 1, &part), 0);
	}
	group_coord_free(gc);
	for (int i = 0; i < 3; i++)
		part_close(f->parts[i]);
	return loaded;
}

/*
 * Offsets written where an older partition function put a group (another
 * partition than Kafka's) are replayed before the group's own partition,
 * so a newer commit there wins after a restart.
 */
static void test_legacy_placement(void **state)
{
	struct fx *fx = *state;
	struct fx3 f = { .legacy = true };

	assert_int_equal(fx3_commit_reload(fx, &f, 5), -1); /* written to partition 2 */
	f.legacy = false;
	assert_int_equal(fx3_commit_reload(fx, &f, 9), 5); /* read back from 2, written to 0 */
	assert_int_equal(fx3_commit_reload(fx, &f, -1), 9);
	assert_int_equal(fx3_commit_reload(fx, &f, -1), 9);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_join_sync_rebalance, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_join_errors, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_static_member, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_static_kept_after_join_timeout, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_offsets_and_reload, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_txn_offsets, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_legacy_placement, fx_setup, fx_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
