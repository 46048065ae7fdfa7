/*
 * test_marker.c - transaction markers on a partition: the coordinator
 * epoch is stored in the control record and kept in the producer state
 * (also across a reopen and a rebuild from the log), and a marker from an
 * older coordinator epoch or producer epoch is refused without appending.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "../tmpdir.h"

#include "log/marker.h"
#include "log/partition.h"
#include "log/pstate.h"
#include "proto/records.h"
#include "util/clock.h"
#include "util/crc32c.h"

#define PID 42

struct fx {
	char root[64];
	char dir[128];
	struct part_cfg cfg;
	struct part *part;
};

static int fx_setup(void **state)
{
	struct fx *fx = calloc(1, sizeof(*fx));

	tmpdir_make(fx->root, sizeof(fx->root), "marker");
	snprintf(fx->dir, sizeof(fx->dir), "%s/topic-0", fx->root);
	part_cfg_default(&fx->cfg);
	fx->cfg.retention_ms = -1;
	assert_int_equal(part_open(fx->dir, &fx->cfg, -1, 0, &fx->part), 0);
	*state = fx;
	return 0;
}

static int fx_teardown(void **state)
{
	struct fx *fx = *state;

	part_close(fx->part);
	tmpdir_remove(fx->root);
	free(fx);
	return 0;
}

#define SEQ_OFF 53 /* baseSequence in a batch v2 */

/* A one-record transactional batch of PID at epoch, with a sequence as a producer sends it. */
static void append_txn(struct part *part, int16_t epoch)
{
	static int32_t seq;
	struct rec_kv kv = { "k", 1, "v", 1 };
	struct part_append_info info;
	struct wr w;

	wr_init(&w);
	assert_int_equal(records_build_txn(&w, clock_wall_ms(), PID, epoch, &kv, 1), 0);
	wr_patch_i32(&w, SEQ_OFF, seq++);
	wr_patch_u32(&w, RECORDS_CRC_OFF, crc32c(w.buf + RECORDS_ATTR_OFF, w.len - RECORDS_ATTR_OFF));
	assert_int_equal(part_append(part, w.buf, w.len, clock_wall_ms(), &info), 0);
	wr_release(&w);
}

static int marker(struct part *part, int16_t epoch, int32_t coordinator_epoch, bool commit)
{
	struct marker m = { PID, epoch, coordinator_epoch, commit };
	struct part_append_info info;

	return marker_append(part, &m, clock_wall_ms(), &info);
}

static int32_t stored_epoch(struct part *part)
{
	const struct pstate_entry *e = pstate_find(part_pstate(part), PID);

	assert_non_null(e);
	return e->coordinator_epoch;
}

/* The coordinator epoch of the control batch at offset in part, read once synced (below the high watermark). */
static int32_t control_epoch(struct part *part, int64_t offset)
{
	struct fslice s;
	struct batch_hdr h;
	uint8_t buf[512];
	bool commit;
	int32_t coordinator_epoch = -1;

	assert_int_equal(part_sync(part), 0);
	assert_true(part_high_watermark(part) > offset);
	assert_int_equal(part_read(part, offset, part_high_watermark(part), sizeof(buf), true, &s), 0);
	assert_true(s.len > 0 && s.len <= (int64_t)sizeof(buf));
	assert_int_equal(pread(s.ref->fd, buf, (size_t)s.len, s.pos), s.len);
	fdref_put(s.ref);
	assert_int_equal(records_batch_parse(buf, (size_t)s.len, &h), 0);
	assert_int_equal(h.base_offset, offset);
	assert_int_equal(records_control_parse(buf, &h, &commit, &coordinator_epoch), 0);
	return coordinator_epoch;
}

static void test_epoch_stored(void **state)
{
	struct fx *fx = *state;

	append_txn(fx->part, 0);
	assert_int_equal(marker(fx->part, 0, 5, true), 0);
	assert_int_equal(control_epoch(fx->part, 1), 5);
	assert_int_equal(stored_epoch(fx->part), 5);
}

static void test_stale_refused(void **state)
{
	struct fx *fx = *state;
	int64_t leo;

	append_txn(fx->part, 0);
	assert_int_equal(marker(fx->part, 0, 5, false), 0);
	append_txn(fx->part, 0);
	leo = part_log_end_offset(fx->part);
	assert_int_equal(marker(fx->part, 0, 4, true), -ESTALE); /* an older coordinator */
	assert_int_equal(part_log_end_offset(fx->part), leo);
	assert_int_equal(pstate_find(part_pstate(fx->part), PID)->txn_first_offset, 2); /* still open */
	append_txn(fx->part, 1);
	leo = part_log_end_offset(fx->part);
	assert_int_equal(marker(fx->part, 0, 6, true), -EPERM); /* an older producer epoch */
	assert_int_equal(part_log_end_offset(fx->part), leo);
	assert_int_equal(marker(fx->part, 1, 5, true), 0); /* the same coordinator epoch is fine */
	assert_int_equal(stored_epoch(fx->part), 5);
	assert_int_equal(marker(fx->part, 1, 7, true), 0);
	assert_int_equal(stored_epoch(fx->part), 7);
}

static void test_epoch_survives_reopen(void **state)
{
	struct fx *fx = *state;

	append_txn(fx->part, 0);
	assert_int_equal(marker(fx->part, 0, 9, true), 0);
	part_close(fx->part); /* clean: from the snapshot */
	assert_int_equal(part_open(fx->dir, &fx->cfg, INT64_MAX, 0, &fx->part), 0);
	assert_int_equal(stored_epoch(fx->part), 9);
	append_txn(fx->part, 0);
	assert_int_equal(marker(fx->part, 0, 8, true), -ESTALE);
	part_close(fx->part); /* crash: no snapshot, rebuilt from the log */
	assert_int_equal(system("rm -f /tmp/gregor-marker-*/topic-0/*.snapshot"), 0);
	assert_int_equal(part_open(fx->dir, &fx->cfg, -1, 0, &fx->part), 0);
	assert_int_equal(stored_epoch(fx->part), 9);
	assert_int_equal(marker(fx->part, 0, 8, true), -ESTALE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_epoch_stored, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_stale_refused, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_epoch_survives_reopen, fx_setup, fx_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
