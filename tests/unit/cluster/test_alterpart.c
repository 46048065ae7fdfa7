/* test_alterpart.c - a leader's AlterPartition to the controller (cluster/alterpart.c), against a fake
 * controller on a loopback socket (a thread with blocking sockets): no controller known at first, then
 * an answer NOT_CONTROLLER, then a dropped connection, each retried; the fourth attempt is answered with
 * the partition epoch and ISR the controller wrote, and done sees them.  A partition error ends the change
 * at once; a cancelled change gets REQUEST_TIMED_OUT. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <netinet/in.h>
#include <pthread.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cluster/alterpart.h"
#include "net/loop.h"
#include "proto/header.h"
#include "proto/kerr.h"
#include "proto_msgs.h"
#include "util/arena.h"
#include "util/buf.h"
#include "util/clock.h"

struct fake {
	int lfd;
	int port;
	int16_t final_err;  /* the partition error of the last answer */
	int requests;       /* requests read */
	int32_t seen_isr_n; /* of the last request */
	int32_t seen_leader_epoch, seen_partition_epoch, seen_broker_id;
	int64_t seen_broker_epoch;
};

static int read_full(int fd, void *p, size_t n)
{
	for (size_t got = 0; got < n;) {
		ssize_t r = read(fd, (char *)p + got, n - got);

		if (r <= 0)
			return -1;
		got += (size_t)r;
	}
	return 0;
}

/* Reads one request on fd and answers it with top-level err top, partition error perr. */
static void fake_answer(struct fake *f, int fd, int16_t top, int16_t perr, bool answer)
{
	struct AlterPartitionRequest req;
	struct AlterPartitionResponse resp;
	struct AlterPartitionResponseTopic t;
	struct AlterPartitionResponsePartition p;
	struct req_header h;
	uint8_t len4[4], *frame;
	struct arena a;
	struct rd r;
	struct wr w;
	uint32_t len;
	size_t at;

	assert_int_equal(read_full(fd, len4, 4), 0);
	len = ntohl(*(uint32_t *)len4);
	frame = malloc(len);
	assert_int_equal(read_full(fd, frame, len), 0);
	rd_init(&r, frame, len);
	arena_init(&a, 0);
	assert_true(header_decode(&r, &h) >= 0);
	assert_int_equal(h.api_key, API_AlterPartition);
	assert_int_equal(AlterPartitionRequest_decode(&r, &a, h.api_version, &req), 0);
	f->requests++;
	f->seen_broker_id = req.BrokerId;
	f->seen_broker_epoch = req.BrokerEpoch;
	f->seen_leader_epoch = req.Topics.v[0].Partitions.v[0].LeaderEpoch;
	f->seen_partition_epoch = req.Topics.v[0].Partitions.v[0].PartitionEpoch;
	f->seen_isr_n = req.Topics.v[0].Partitions.v[0].NewIsr.n;
	if (answer) {
		AlterPartitionResponse_init(&resp);
		AlterPartitionResponseTopic_init(&t);
		AlterPartitionResponsePartition_init(&p);
		resp.ErrorCode = top;
		t.TopicName = req.Topics.v[0].TopicName;
		p.PartitionIndex = req.Topics.v[0].Partitions.v[0].PartitionIndex;
		p.ErrorCode = perr;
		p.LeaderId = req.BrokerId;
		p.LeaderEpoch = f->seen_leader_epoch;
		p.Isr = req.Topics.v[0].Partitions.v[0].NewIsr;
		p.PartitionEpoch = f->seen_partition_epoch + 1;
		t.Partitions = (struct AlterPartitionResponsePartition_array){ &p, 1 };
		resp.Topics = (struct AlterPartitionResponseTopic_array){ &t, 1 };
		wr_init(&w);
		at = header_write_response(&w, API_AlterPartition, h.api_version, h.correlation_id);
		AlterPartitionResponse_encode(&w, h.api_version, &resp);
		wr_patch_i32(&w, at, (int32_t)(wr_total(&w) - (int64_t)at - 4));
		assert_int_equal(write(fd, w.buf, w.len), (ssize_t)w.len);
		wr_release(&w);
	}
	arena_release(&a);
	free(frame);
}

/* Attempt 1: NOT_CONTROLLER; attempt 2: the connection closed unanswered; attempt 3: final_err. */
static void *fake_run(void *arg)
{
	struct fake *f = arg;

	for (int i = 0; i < 3; i++) {
		int fd = accept(f->lfd, NULL, NULL);

		assert_true(fd >= 0);
		fake_answer(f, fd, i == 0 ? KERR_NOT_CONTROLLER : 0, f->final_err, i != 1);
		if (i == 2) {
			char c;

			(void)!read(fd, &c, 1); /* until the client closes */
		}
		close(fd);
	}
	return NULL;
}

static void fake_listen(struct fake *f)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t sl = sizeof(sa);

	f->lfd = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(f->lfd >= 0);
	assert_int_equal(bind(f->lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(f->lfd, 4), 0);
	assert_int_equal(getsockname(f->lfd, (struct sockaddr *)&sa, &sl), 0);
	f->port = ntohs(sa.sin_port);
}

struct run {
	struct loop *loop;
	struct cluster_broker ctl;
	int asked; /* controller lookups */
	int done;
	int16_t err;
	int32_t epoch;
	int32_t isr[ZNODE_REPLICAS_MAX];
	int n;
	struct loop_timer guard;
};

static struct run *the_run;

/* No controller known the first time it is asked, then the fake. */
static const struct cluster_broker *run_controller(void *arg)
{
	struct run *rn = arg;

	return rn->asked++ == 0 ? NULL : &rn->ctl;
}

static void run_done(void *arg, int16_t err, int32_t epoch, const int32_t *isr, int n)
{
	struct run *rn = arg;

	rn->done++;
	rn->err = err;
	rn->epoch = epoch;
	rn->n = n;
	if (n > 0)
		memcpy(rn->isr, isr, sizeof(*isr) * (size_t)n);
	loop_stop(rn->loop);
}

static void run_guard(struct loop_timer *t)
{
	(void)t;
	loop_stop(the_run->loop);
}

/* Runs one change against a fake controller whose last answer has partition error final_err. */
static void run_change(struct run *rn, struct fake *f, int16_t final_err)
{
	static const int32_t isr[] = { 2, 3 };
	struct alterpart_cfg cfg = { .broker_id = 2, .broker_epoch = 77, .controller = run_controller };
	struct alterpart *head = NULL;
	pthread_t th;

	memset(rn, 0, sizeof(*rn));
	memset(f, 0, sizeof(*f));
	the_run = rn;
	f->final_err = final_err;
	fake_listen(f);
	assert_int_equal(loop_new(&rn->loop), 0);
	rn->ctl.id = 1;
	strcpy(rn->ctl.inter_host, "127.0.0.1");
	rn->ctl.inter_port = f->port;
	cfg.loop = rn->loop;
	cfg.controller_arg = rn;
	assert_int_equal(pthread_create(&th, NULL, fake_run, f), 0);
	loop_timer_init(&rn->guard, run_guard);
	loop_timer_set(rn->loop, &rn->guard, clock_mono_ms() + 15000);
	assert_int_equal(alterpart_start(&cfg, "t", 4, 6, 9, isr, 2, run_done, rn, &head), 0);
	assert_non_null(head);
	loop_run(rn->loop);
	assert_null(head); /* it left the list when done ran */
	loop_timer_cancel(rn->loop, &rn->guard);
	loop_free(rn->loop);
	pthread_join(th, NULL);
	close(f->lfd);
}

static void test_retried_until_answered(void **state)
{
	struct run rn;
	struct fake f;

	(void)state;
	run_change(&rn, &f, KERR_NONE);
	assert_int_equal(rn.done, 1);
	assert_int_equal(rn.err, KERR_NONE);
	assert_int_equal(rn.epoch, 10);
	assert_int_equal(rn.n, 2);
	assert_int_equal(rn.isr[0], 2);
	assert_int_equal(rn.isr[1], 3);
	assert_int_equal(f.requests, 3);
	assert_true(rn.asked >= 4); /* looked up again before each attempt */
	assert_int_equal(f.seen_broker_id, 2);
	assert_int_equal(f.seen_broker_epoch, 77);
	assert_int_equal(f.seen_leader_epoch, 6);
	assert_int_equal(f.seen_partition_epoch, 9);
	assert_int_equal(f.seen_isr_n, 2);
}

static void test_partition_error_ends_it(void **state)
{
	struct run rn;
	struct fake f;

	(void)state;
	run_change(&rn, &f, KERR_INVALID_UPDATE_VERSION);
	assert_int_equal(rn.done, 1);
	assert_int_equal(rn.err, KERR_INVALID_UPDATE_VERSION);
	assert_int_equal(rn.n, 0);
}

static void test_cancel(void **state)
{
	static const int32_t isr[] = { 1 };
	struct run rn;
	struct alterpart_cfg cfg = { .broker_id = 1, .broker_epoch = 5, .controller = run_controller };
	struct alterpart *head = NULL;

	(void)state;
	memset(&rn, 0, sizeof(rn));
	assert_int_equal(loop_new(&rn.loop), 0);
	cfg.loop = rn.loop;
	cfg.controller_arg = &rn; /* never anything but "none" before the cancel */
	assert_int_equal(alterpart_start(&cfg, "t", 0, 0, 0, isr, 1, run_done, &rn, &head), 0);
	assert_int_equal(alterpart_start(&cfg, "t", 0, 0, 0, isr, 0, run_done, &rn, &head), -EINVAL);
	while (head)
		alterpart_cancel(head);
	assert_int_equal(rn.done, 1);
	assert_int_equal(rn.err, KERR_REQUEST_TIMED_OUT);
	loop_free(rn.loop);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_retried_until_answered),
		cmocka_unit_test(test_partition_error_ends_it),
		cmocka_unit_test(test_cancel),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
