/* test_fetch_park.c - per-partition waiter chains of parked fetches. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "broker/fetch_park.h"
#include "net/conn.h"
#include "net/loop.h"

#define NPARKED 64

struct fx {
	struct loop *loop;
	struct conn *c[2];
	int peer[2];
	/* distinct addresses standing for partitions (compared, never dereferenced) */
	char parts[NPARKED + 1];
	struct fetch_park fp[NPARKED];
	struct fetch_watch w[NPARKED][2];
};

static void on_request(struct conn *c, struct conn_slot *slot, uint8_t *frame, int32_t len)
{
	(void)c, (void)slot, (void)frame, (void)len;
}

static int fx_setup(void **state)
{
	struct fx *fx = calloc(1, sizeof(*fx));
	struct conn_cfg cc = { .frame_bytes_max = 1 << 20, .out_bytes_max = 1 << 20, .on_request = on_request };

	assert_int_equal(loop_new(&fx->loop), 0);
	for (int i = 0; i < 2; i++) {
		int sv[2];

		assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
		assert_int_equal(conn_new(fx->loop, sv[0], &cc, &fx->c[i]), 0);
		fx->peer[i] = sv[1];
	}
	*state = fx;
	return 0;
}

static int fx_teardown(void **state)
{
	struct fx *fx = *state;

	for (int i = 0; i < 2; i++) {
		conn_close(fx->c[i], NULL);
		close(fx->peer[i]);
	}
	conn_reap();
	loop_free(fx->loop);
	free(fx);
	return 0;
}

static struct part *part_at(struct fx *fx, int i)
{
	return (struct part *)&fx->parts[i];
}

/* Fetch i waits on partition i and on partition NPARKED (shared); fetches alternate connections. */
static void park_all(struct fx *fx)
{
	for (int i = 0; i < NPARKED; i++) {
		struct part *parts[2] = { part_at(fx, i), i % 4 == 0 ? part_at(fx, NPARKED) : NULL };

		fetch_park_add(&fx->fp[i], (struct req *)&fx->fp[i], fx->c[i % 2], fx->w[i], parts, 2);
	}
}

static int drain_ready(struct fx *fx, bool *seen)
{
	struct fetch_park *fp;
	int n = 0;

	while ((fp = fetch_park_next_ready())) {
		int i = (int)(fp - fx->fp);

		assert_true(i >= 0 && i < NPARKED);
		assert_false(seen[i]);
		seen[i] = true;
		n++;
	}
	return n;
}

static void test_notify_wakes_only_that_partition(void **state)
{
	struct fx *fx = *state;
	bool seen[NPARKED] = { false };

	park_all(fx);
	fetch_park_notify(part_at(fx, 5));
	fetch_park_notify(part_at(fx, 5)); /* twice: still ready once */
	assert_int_equal(drain_ready(fx, seen), 1);
	assert_true(seen[5]);
	memset(seen, 0, sizeof(seen));
	fetch_park_notify(part_at(fx, NPARKED)); /* the shared partition: every fourth fetch */
	assert_int_equal(drain_ready(fx, seen), NPARKED / 4);
	for (int i = 0; i < NPARKED; i++)
		assert_int_equal(seen[i], i % 4 == 0);
	for (int i = 0; i < NPARKED; i++)
		fetch_park_remove(&fx->fp[i]);
}

static void test_remove_unlinks(void **state)
{
	struct fx *fx = *state;
	bool seen[NPARKED] = { false };

	park_all(fx);
	fetch_park_notify(part_at(fx, 8)); /* ready, then removed: off the ready list too */
	for (int i = 0; i < NPARKED; i += 2)
		fetch_park_remove(&fx->fp[i]);
	fetch_park_remove(&fx->fp[0]); /* twice: no-op */
	for (int i = 0; i <= NPARKED; i++)
		fetch_park_notify(part_at(fx, i));
	assert_int_equal(drain_ready(fx, seen), NPARKED / 2);
	for (int i = 0; i < NPARKED; i++)
		assert_int_equal(seen[i], i % 2 == 1);
	assert_null(conn_user(fx->c[0])); /* every fetch of connection 0 was even */
	for (int i = 1; i < NPARKED; i += 2)
		fetch_park_remove(&fx->fp[i]);
	assert_null(conn_user(fx->c[1]));
	fetch_park_notify(part_at(fx, 3));
	assert_null(fetch_park_next_ready());
}

static void test_conn_closed(void **state)
{
	struct fx *fx = *state;
	bool seen[NPARKED] = { false };

	park_all(fx);
	fetch_park_remove(&fx->fp[3]); /* from the middle of connection 1's list */
	fetch_park_conn_closed(fx->c[1]);
	assert_int_equal(drain_ready(fx, seen), NPARKED / 2 - 1);
	for (int i = 0; i < NPARKED; i++)
		assert_int_equal(seen[i], i % 2 == 1 && i != 3);
	for (int i = 0; i < NPARKED; i++)
		fetch_park_remove(&fx->fp[i]);
	assert_null(conn_user(fx->c[0]));
	assert_null(conn_user(fx->c[1]));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_notify_wakes_only_that_partition, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_remove_unlinks, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_conn_closed, fx_setup, fx_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
