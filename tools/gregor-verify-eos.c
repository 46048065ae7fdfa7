/* gregor-verify-eos - checks exactly-once delivery end to end on any Kafka-protocol cluster.
 *
 * An operator's question is "does a consume-transform-produce job on this
 * cluster really copy every message exactly once when things crash?".
 * This tool answers it with a copy it can check:
 *
 *   1. creates <prefix>-source and <prefix>-sink (--partitions each) and
 *      produces --messages numbered values "msg-0000000", "msg-0000001", ...
 *      to the source with an idempotent producer, value i to partition i % P;
 *   2. runs examples/eos-copier (found next to this program unless
 *      --copier says otherwise) from source to sink in group <prefix>-copier,
 *      transactional id <prefix>-copier;
 *   3. while it copies, in a random order and at random points of the copy
 *      (the group's committed offsets moving on by a randomly drawn count
 *      since the previous event), SIGKILLs and restarts the copier
 *      --copier-kills times and runs --faults operator commands (/bin/sh -c),
 *      each followed after a while (--restore-after-ms) by its restore
 *      command; before each it waits (up to 2 s) for a transaction to be open
 *      on the sink, so the crash lands mid-transaction.  The points take
 *      about half of the copy on average; if it still ends first, the
 *      events left are not run and the report says so;
 *   4. once the committed offsets are at the end of every source partition
 *      (and every fault is restored), stops the copier, reads the sink and
 *      prints expected / seen / duplicates / missing / out-of-order.
 *
 * Modes (--mode) show what each guarantee buys:
 *   eos               transactional copier, read_committed reader: must be exact
 *   read-uncommitted  transactional copier, read_uncommitted reader: also sees
 *                     the records of aborted transactions, as duplicates
 *   idempotent        copier without transactions (offsets committed after the
 *                     output is acknowledged): a kill copies some messages again
 * In the last two modes duplicates are the expected outcome and are reported
 * as such; missing or out-of-order messages are violations in every mode.
 * "Out of order" means the first copy of a message came after the first copy
 * of a later message of the same source partition (or in another partition).
 *
 * Fault commands. The i-th --restore-cmd undoes the i-th --fault-cmd (fewer
 * restore commands, or an empty one, leave a fault without restore). Each
 * fault picks a command at random, every command once before any repeats.
 * Only one fault is active at a time. Commands run with stdin from
 * /dev/null, their output echoed indented under the event's line, bounded by
 * --command-timeout-ms (then their process group is killed), with these
 * variables set so that a script can find what to break:
 *   VERIFY_EOS_BOOTSTRAP, VERIFY_EOS_SOURCE, VERIFY_EOS_SINK,
 *   VERIFY_EOS_GROUP, VERIFY_EOS_TRANSACTIONAL_ID, VERIFY_EOS_FAULT (1-based)
 *
 * Exit status: 0 the mode's guarantee held; 1 a violation (any duplicate in
 * eos mode, a missing, out-of-order or unexpected message in any mode, a
 * transaction still open on the sink a minute after the copy) or a
 * run that could not be done (the source not produced, a fault or restore
 * command failing, the copy stalled for --stall-timeout-ms); 2 a usage error.
 *
 * Every wait is bounded: the broker (default.api.timeout.ms), the source's
 * acknowledgements, each command, the copy (no progress for
 * --stall-timeout-ms), the copier's exit and the final read.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <librdkafka/rdkafka.h>

#include "lib/kafka.h"
#include "lib/opt.h"

#define PROG "gregor-verify-eos"
#define TICK_MS 50
#define OPEN_TXN_WAIT_MS 2000 /* longest wait for an open transaction before a kill or fault */
#define COPIER_STOP_MS 30000  /* SIGTERM to exit, then SIGKILL */
#define COPIER_RESTARTS_MAX 100
#define SETTLE_MS 60000    /* sink: last stable offset reaching the high watermark after the copy */
#define READ_IDLE_MS 30000 /* final read: longest time without a record */

enum verify_mode { MODE_EOS, MODE_IDEMPOTENT, MODE_READ_UNCOMMITTED };

static const char *const mode_names[] = { "eos", "idempotent", "read-uncommitted" };

static const struct opt_def verify_defs[] = {
	{ "bootstrap-server", true, false, "<host:port[,...]>", "REQUIRED: the cluster to check." },
	{ "messages", true, false, "<n>", "REQUIRED: how many numbered messages to copy." },
	{ "partitions", true, false, "<p>", "REQUIRED: partitions of the source and the sink topic." },
	{ "mode", true, false, "<eos|idempotent|read-uncommitted>",
	  "eos (default): transactional copier, read_committed reader, must be exact. read-uncommitted: the same "
	  "copier, a read_uncommitted reader (sees aborted transactions). idempotent: a copier without "
	  "transactions. Duplicates are expected in the last two." },
	{ "copier", true, false, "<path>", "The eos-copier program (default: eos-copier next to this program)." },
	{ "copier-kills", true, false, "<k>", "SIGKILL and restart the copier this many times (default 10)." },
	{ "fault-cmd", true, true, "<command>", "A fault to inject (/bin/sh -c), e.g. a broker kill (repeatable)." },
	{ "restore-cmd", true, true, "<command>",
	  "Undoes the fault command of the same position (repeatable; empty: none)." },
	{ "faults", true, false, "<f>", "How many faults to inject (default: one per --fault-cmd)." },
	{ "restore-after-ms", true, false, "<ms>",
	  "A fault's restore runs a random 50-100 % of this after it (default 5000)." },
	{ "command-timeout-ms", true, false, "<ms>", "Longest run of a fault or restore command (default 120000)." },
	{ "copier-throughput", true, false, "<n>",
	  "The copier copies at most n messages per second, so that the copy lasts long enough for the kills and "
	  "faults to land in it (default: the messages over 2 s per kill and fault, at least 10 s; 0: no limit)." },
	{ "stall-timeout-ms", true, false, "<ms>",
	  "Give up when the copy makes no progress for this long (default 120000)." },
	{ "seed", true, false, "<s>", "Random seed: the same seed draws the same kill and fault points." },
	{ "topic-prefix", true, false, "<x>",
	  "Names: <x>-source, <x>-sink, group and transactional id <x>-copier (default verify-eos-<seed>)." },
	{ "replication-factor", true, false, "<r>", "Of both topics (default: the broker's)." },
	{ "command-config", true, false, "<file>", "Client properties (Java properties file), also for the copier." },
	{ NULL },
};

static const struct opt_cmd verify_cmd = {
	PROG,
	"Copies numbered messages through eos-copier while killing it and running fault commands, then checks "
	"that the sink holds each message exactly once, in source-partition order.",
	verify_defs,
};

/*
 * One planned event of the copy: a copier kill or a fault, due share x
 * (what is left to copy) / (events left + 1) committed source messages
 * after the previous one fired.
 */
struct verify_event {
	bool fault;
	double share; /* 0.1 - 1.0 */
};

/* What the final read found. */
struct verify_tally {
	int64_t seen, dups, missing, out_of_order, unexpected;
};

struct verify {
	const struct opts *o;
	enum verify_mode mode;
	int64_t n;           /* --messages */
	int32_t parts;       /* --partitions */
	uint64_t seed, rng;  /* rng: xorshift64* state */
	char source[256];    /* <prefix>-source */
	char sink[256];      /* <prefix>-sink */
	char group[256];     /* <prefix>-copier: the group and the transactional id */
	char instance[260];  /* <prefix>-copier-1: the copier's group.instance.id */
	char throughput[24]; /* the copier's --throughput */
	char copier_path[PATH_MAX];
	int64_t t0_ms;        /* start, for the log's times */
	rd_kafka_t *watch;    /* read_uncommitted consumer in the copier's group: committed offsets, high watermarks */
	rd_kafka_t *watch_rc; /* read_committed consumer: last stable offsets */
	int64_t *src_end;     /* per source partition: its end offset after producing */
	pid_t copier;         /* running copier, 0 if none */
	int copier_restarts;  /* unplanned restarts (the copier exited by itself) */

	/* the chaos plan and what became of it */
	struct verify_event *evs;
	int nev, next;         /* next: first event not yet fired */
	int64_t fired_at;      /* committed messages when the last event fired: the next waits for more */
	int *deck, deck_left;  /* fault command indices still to draw before a reshuffle */
	int active;            /* fault command whose restore is pending, -1 if none */
	int64_t restore_at_ms; /* when that restore runs */
	int kills, faults, restores, open_txn_events, cmd_failures;
	int hanging; /* sink partitions with a transaction open long after the copy */
	bool stalled;
};

static volatile sig_atomic_t verify_interrupted;

static void on_signal(int sig)
{
	(void)sig;
	verify_interrupted = 1;
}

/* ---- small helpers ---------------------------------------------------- */

/* xorshift64* (Vigna): a fixed sequence per --seed, whatever the libc. */
static uint64_t rng_next(struct verify *v)
{
	v->rng ^= v->rng >> 12;
	v->rng ^= v->rng << 25;
	v->rng ^= v->rng >> 27;
	return v->rng * 0x2545F4914F6CDD1DULL;
}

/* Uniform in [lo, hi). */
static double rng_uniform(struct verify *v, double lo, double hi)
{
	return lo + (hi - lo) * (double)(rng_next(v) >> 11) / (double)(1ULL << 53);
}

/* A line of the run's log on stdout: "[  12.3s] text". */
static void __attribute__((format(printf, 2, 3))) verify_log(const struct verify *v, const char *fmt, ...)
{
	va_list ap;

	printf("[%7.1fs] ", (double)(kafka_now_ms() - v->t0_ms) / 1000.0);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

static void sleep_ms(int64_t ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };

	while (nanosleep(&ts, &ts) == -1 && errno == EINTR && !verify_interrupted)
		;
}

/* A configuration for one of the tool's own clients: bootstrap, --command-config, then kv pairs. */
static rd_kafka_t *verify_client(const struct verify *v, rd_kafka_type_t type, const char **kv)
{
	rd_kafka_conf_t *conf = kafka_conf_new(opt_str(v->o, "bootstrap-server", NULL));

	kafka_conf_apply(conf, v->o, "command-config", NULL);
	for (; kv && kv[0]; kv += 2)
		if (kafka_conf_set(conf, kv[0], kv[1]) != 0)
			exit(2);
	return kafka_new(type, conf);
}

/* A list of every partition of topic, offsets set to off. Caller destroys it. */
static rd_kafka_topic_partition_list_t *verify_parts(const struct verify *v, const char *topic, int64_t off)
{
	rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(v->parts);

	for (int32_t p = 0; p < v->parts; p++)
		rd_kafka_topic_partition_list_add(l, topic, p)->offset = off;
	return l;
}

/*
 * End offsets of every partition of topic as rk's isolation level sees
 * them (read_committed: the last stable offset), into out[]. Returns 0, or
 * -1 if some partition did not answer within timeout_ms.
 */
static int verify_ends(rd_kafka_t *rk, const struct verify *v, const char *topic, int64_t *out, int timeout_ms)
{
	rd_kafka_topic_partition_list_t *l = verify_parts(v, topic, RD_KAFKA_OFFSET_END);
	rd_kafka_resp_err_t err = rd_kafka_offsets_for_times(rk, l, timeout_ms);
	int ret = err ? -1 : 0;

	for (int i = 0; ret == 0 && i < l->cnt; i++) {
		if (l->elems[i].err || l->elems[i].offset < 0)
			ret = -1;
		else
			out[l->elems[i].partition] = l->elems[i].offset;
	}
	rd_kafka_topic_partition_list_destroy(l);
	return ret;
}

/* verify_ends() asked again (leaders move; metadata is refreshed every second) until it answers or
 * timeout_ms passes. Returns 0 or -1. */
static int verify_ends_retry(rd_kafka_t *rk, const struct verify *v, const char *topic, int64_t *out, int timeout_ms)
{
	int64_t deadline = kafka_now_ms() + timeout_ms;

	while (verify_ends(rk, v, topic, out, 2000) != 0) {
		if (kafka_now_ms() >= deadline || verify_interrupted)
			return -1;
		sleep_ms(250);
	}
	return 0;
}

/* ---- options ------------------------------------------------------------ */

/* The copier next to this program: <dir of /proc/self/exe>/eos-copier. */
static void verify_default_copier(struct verify *v)
{
	char self[PATH_MAX];
	ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);

	if (len <= 0)
		kafka_die("cannot find this program's directory (/proc/self/exe): %s; give --copier", strerror(errno));
	self[len] = '\0';
	snprintf(v->copier_path, sizeof(v->copier_path), "%s/eos-copier", dirname(self));
}

static void verify_parse_mode(struct verify *v)
{
	const char *m = opt_str(v->o, "mode", "eos");

	for (size_t i = 0; i < sizeof(mode_names) / sizeof(mode_names[0]); i++)
		if (!strcmp(m, mode_names[i])) {
			v->mode = (enum verify_mode)i;
			return;
		}
	opt_usage_error(v->o, "Option \"--mode\": \"%s\" is not one of eos, idempotent, read-uncommitted", m);
}

static void verify_parse(struct verify *v, const struct opts *o)
{
	const char *prefix;
	char dflt[64];
	int nfault = opt_count(o, "fault-cmd");

	v->o = o;
	opt_require(o, "bootstrap-server");
	opt_require(o, "messages");
	opt_require(o, "partitions");
	v->n = opt_int(o, "messages", 0, 1, 1000000000);
	v->parts = (int32_t)opt_int(o, "partitions", 0, 1, 100000);
	verify_parse_mode(v);
	if (opt_count(o, "restore-cmd") > nfault)
		opt_usage_error(o, "more --restore-cmd (%d) than --fault-cmd (%d)", opt_count(o, "restore-cmd"),
				nfault);
	if (opt_int(o, "faults", nfault, 0, 1000) > 0 && nfault == 0)
		opt_usage_error(o, "--faults needs at least one --fault-cmd");
	opt_int(o, "copier-kills", 10, 0, 1000);
	opt_int(o, "restore-after-ms", 5000, 0, 3600000);
	opt_int(o, "command-timeout-ms", 120000, 1, 3600000);
	opt_int(o, "stall-timeout-ms", 120000, 1000, 86400000);
	opt_int(o, "replication-factor", -1, 1, INT16_MAX);
	v->seed = (uint64_t)opt_int(
		o, "seed", (int64_t)(((uint64_t)time(NULL) ^ ((uint64_t)getpid() << 16)) % 1000000000), 0, INT64_MAX);
	v->rng = v->seed * 0x9E3779B97F4A7C15ULL + 0x632BE59BD9B4E019ULL; /* any nonzero start */
	snprintf(dflt, sizeof(dflt), "verify-eos-%" PRIu64, v->seed);
	prefix = opt_str(o, "topic-prefix", dflt);
	if (!*prefix || strlen(prefix) > 200)
		opt_usage_error(o, "Option \"--topic-prefix\": 1 to 200 characters");
	snprintf(v->source, sizeof(v->source), "%s-source", prefix);
	snprintf(v->sink, sizeof(v->sink), "%s-sink", prefix);
	snprintf(v->group, sizeof(v->group), "%s-copier", prefix);
	snprintf(v->instance, sizeof(v->instance), "%s-1", v->group);
	if (opt_has(o, "copier"))
		snprintf(v->copier_path, sizeof(v->copier_path), "%s", opt_str(o, "copier", NULL));
	else
		verify_default_copier(v);
	if (access(v->copier_path, X_OK) != 0)
		opt_usage_error(o, "no executable copier at %s (--copier): %s", v->copier_path, strerror(errno));
	v->active = -1;
}

/* ---- topics and the source ------------------------------------------- */

static void verify_create_topics(struct verify *v)
{
	rd_kafka_t *rk = kafka_admin_connect(v->o);
	rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
	rd_kafka_NewTopic_t *nt[2];
	const char *names[2] = { v->source, v->sink };
	int rf = (int)opt_int(v->o, "replication-factor", -1, 1, INT16_MAX);
	char errstr[512];
	rd_kafka_AdminOptions_t *ao = kafka_admin_options(rk, RD_KAFKA_ADMIN_OP_CREATETOPICS);
	rd_kafka_event_t *ev;
	const rd_kafka_topic_result_t **res;
	size_t nres;

	for (int i = 0; i < 2; i++) {
		nt[i] = rd_kafka_NewTopic_new(names[i], v->parts, rf, errstr, sizeof(errstr));
		if (!nt[i])
			kafka_die("topic %s: %s", names[i], errstr);
	}
	rd_kafka_CreateTopics(rk, nt, 2, ao, q);
	ev = kafka_admin_wait(q);
	res = rd_kafka_CreateTopics_result_topics(rd_kafka_event_CreateTopics_result(ev), &nres);
	for (size_t i = 0; i < nres; i++) {
		rd_kafka_resp_err_t err = rd_kafka_topic_result_error(res[i]);

		if (err == RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS)
			kafka_die("topic %s already exists: give another --topic-prefix",
				  rd_kafka_topic_result_name(res[i]));
		if (err)
			kafka_die("cannot create topic %s: %s (%s)", rd_kafka_topic_result_name(res[i]),
				  rd_kafka_topic_result_error_string(res[i]), kafka_err_name(err));
	}
	rd_kafka_event_destroy(ev);
	rd_kafka_AdminOptions_destroy(ao);
	rd_kafka_NewTopic_destroy_array(nt, 2);
	rd_kafka_queue_destroy(q);
	rd_kafka_destroy(rk);
}

static void source_on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
	rd_kafka_resp_err_t *first = opaque;

	(void)rk;
	if (m->err && !*first)
		*first = m->err;
}

/* Produces the n numbered messages (idempotent, acks=all); exits 1 unless every one is acknowledged. */
static void verify_produce_source(struct verify *v)
{
	static rd_kafka_resp_err_t failed;
	const char *kv[] = { "enable.idempotence", "true", "linger.ms", "20", "message.timeout.ms", "120000", NULL };
	rd_kafka_conf_t *conf = kafka_conf_new(opt_str(v->o, "bootstrap-server", NULL));
	rd_kafka_t *rk;
	int64_t t0 = kafka_now_ms(), deadline;
	char val[32];

	kafka_conf_apply(conf, v->o, "command-config", NULL);
	for (int i = 0; kv[i]; i += 2)
		if (kafka_conf_set(conf, kv[i], kv[i + 1]) != 0)
			exit(2);
	rd_kafka_conf_set_dr_msg_cb(conf, source_on_delivery);
	rd_kafka_conf_set_opaque(conf, &failed);
	rk = kafka_new(RD_KAFKA_PRODUCER, conf);
	for (int64_t i = 0; i < v->n && !failed && !verify_interrupted; i++) {
		int len = snprintf(val, sizeof(val), "msg-%07" PRId64, i);
		rd_kafka_resp_err_t err;

		while ((err = rd_kafka_producev(
				rk, RD_KAFKA_V_TOPIC(v->source), RD_KAFKA_V_PARTITION((int32_t)(i % v->parts)),
				RD_KAFKA_V_VALUE(val, (size_t)len), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
				RD_KAFKA_V_END)) == RD_KAFKA_RESP_ERR__QUEUE_FULL)
			rd_kafka_poll(rk, 100);
		if (err)
			kafka_die("producing the source: %s", rd_kafka_err2str(err));
		rd_kafka_poll(rk, 0);
	}
	deadline = kafka_now_ms() + 130000; /* message.timeout.ms and a margin */
	while (rd_kafka_outq_len(rk) > 0 && kafka_now_ms() < deadline && !verify_interrupted)
		rd_kafka_flush(rk, 1000);
	if (failed || rd_kafka_outq_len(rk) > 0 || verify_interrupted)
		kafka_die("the source messages were not all acknowledged: %s", failed ? rd_kafka_err2str(failed)
									       : verify_interrupted ? "interrupted"
												    : "timed out");
	rd_kafka_destroy(rk);
	verify_log(v, "produced %" PRId64 " messages to %s in %.1f s", v->n, v->source,
		   (double)(kafka_now_ms() - t0) / 1000.0);
}

/* The source's end offsets: what the copy must reach. Each partition must hold its share. */
static void verify_source_ends(struct verify *v)
{
	v->src_end = calloc((size_t)v->parts, sizeof(*v->src_end));
	if (!v->src_end)
		kafka_die("out of memory");
	if (verify_ends_retry(v->watch, v, v->source, v->src_end, kafka_timeout_ms()) != 0)
		kafka_die("cannot read the end offsets of %s within %d ms", v->source, kafka_timeout_ms());
	for (int32_t p = 0; p < v->parts; p++) {
		int64_t want = v->n / v->parts + (p < v->n % v->parts);

		if (v->src_end[p] != want)
			kafka_die("%s partition %d holds %" PRId64 " messages, expected %" PRId64, v->source, p,
				  v->src_end[p], want);
	}
}

/* ---- watching the copy -------------------------------------------------- */

/* Source messages the copier has committed (sum of its group's committed offsets), or -1 if unknown now. */
static int64_t verify_progress(struct verify *v)
{
	rd_kafka_topic_partition_list_t *l = verify_parts(v, v->source, RD_KAFKA_OFFSET_INVALID);
	int64_t sum = 0;

	if (rd_kafka_committed(v->watch, l, 2000))
		sum = -1;
	for (int i = 0; sum >= 0 && i < l->cnt; i++) {
		if (l->elems[i].err)
			sum = -1;
		else if (l->elems[i].offset > 0)
			sum += l->elems[i].offset;
	}
	rd_kafka_topic_partition_list_destroy(l);
	return sum;
}

/* True when some sink partition has an open transaction (last stable offset below the high watermark). */
static bool verify_open_txn(struct verify *v, int timeout_ms)
{
	int64_t *hw = calloc((size_t)v->parts, sizeof(*hw)), *lso = calloc((size_t)v->parts, sizeof(*lso));
	bool open = false;

	if (hw && lso && verify_ends(v->watch_rc, v, v->sink, lso, timeout_ms) == 0 &&
	    verify_ends(v->watch, v, v->sink, hw, timeout_ms) == 0)
		for (int32_t p = 0; p < v->parts && !open; p++)
			open = lso[p] < hw[p];
	free(hw);
	free(lso);
	return open;
}

/* Before a kill or fault: waits up to OPEN_TXN_WAIT_MS for an open transaction (not in idempotent mode). */
static const char *verify_await_txn(struct verify *v)
{
	int64_t deadline = kafka_now_ms() + OPEN_TXN_WAIT_MS;

	if (v->mode == MODE_IDEMPOTENT)
		return "no transactions";
	while (kafka_now_ms() < deadline && !verify_interrupted) {
		if (verify_open_txn(v, 1000)) {
			v->open_txn_events++;
			return "open transaction";
		}
		sleep_ms(20);
	}
	return "no open transaction seen";
}

/* ---- the copier process ------------------------------------------------- */

static void verify_copier_start(struct verify *v)
{
	const char *argv[24];
	int a = 0;
	pid_t pid;

	argv[a++] = v->copier_path;
	argv[a++] = "--bootstrap-server";
	argv[a++] = opt_str(v->o, "bootstrap-server", NULL);
	argv[a++] = "--from";
	argv[a++] = v->source;
	argv[a++] = "--to";
	argv[a++] = v->sink;
	argv[a++] = "--group";
	argv[a++] = v->group;
	argv[a++] = "--group-instance-id"; /* a restarted copier resumes at once, not after the session timeout */
	argv[a++] = v->instance;
	argv[a++] = "--txn-messages";
	argv[a++] = "200";
	argv[a++] = "--throughput";
	argv[a++] = v->throughput;
	if (v->mode == MODE_IDEMPOTENT) {
		argv[a++] = "--no-transactions";
	} else {
		argv[a++] = "--transactional-id";
		argv[a++] = v->group;
	}
	if (opt_has(v->o, "command-config")) {
		argv[a++] = "--command-config";
		argv[a++] = opt_str(v->o, "command-config", NULL);
	}
	argv[a] = NULL;
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		kafka_die("fork: %s", strerror(errno));
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlives the tool */
		dup2(STDERR_FILENO, STDOUT_FILENO);
		execv(v->copier_path, (char *const *)argv);
		fprintf(stderr, "%s: cannot run %s: %s\n", PROG, v->copier_path, strerror(errno));
		_exit(127);
	}
	v->copier = pid;
}

static void verify_copier_kill(struct verify *v)
{
	kill(v->copier, SIGKILL);
	waitpid(v->copier, NULL, 0);
	v->copier = 0;
}

/* SIGTERM (the copier ends its transaction and leaves the group), SIGKILL after COPIER_STOP_MS. */
static void verify_copier_stop(struct verify *v)
{
	int64_t deadline = kafka_now_ms() + COPIER_STOP_MS;
	int status;

	if (!v->copier)
		return;
	kill(v->copier, SIGTERM);
	while (kafka_now_ms() < deadline) {
		if (waitpid(v->copier, &status, WNOHANG) == v->copier) {
			v->copier = 0;
			return;
		}
		sleep_ms(50);
	}
	verify_log(v, "the copier did not stop within %d s of SIGTERM: killed", COPIER_STOP_MS / 1000);
	verify_copier_kill(v);
}

/* A copier that exited by itself (fatal error, crash) is started again, a bounded number of times. */
static void verify_copier_check(struct verify *v)
{
	int status;

	if (!v->copier || waitpid(v->copier, &status, WNOHANG) != v->copier)
		return;
	v->copier = 0;
	if (++v->copier_restarts > COPIER_RESTARTS_MAX)
		kafka_die("the copier exited %d times by itself; giving up", COPIER_RESTARTS_MAX);
	verify_log(v, "the copier exited by itself (%s %d): started again", WIFEXITED(status) ? "exit" : "signal",
		   WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
	verify_copier_start(v);
}

/* ---- fault and restore commands ----------------------------------------- */

static void verify_cmd_env(const struct verify *v, int index)
{
	char num[16];

	snprintf(num, sizeof(num), "%d", index + 1);
	setenv("VERIFY_EOS_BOOTSTRAP", opt_str(v->o, "bootstrap-server", NULL), 1);
	setenv("VERIFY_EOS_SOURCE", v->source, 1);
	setenv("VERIFY_EOS_SINK", v->sink, 1);
	setenv("VERIFY_EOS_GROUP", v->group, 1);
	setenv("VERIFY_EOS_TRANSACTIONAL_ID", v->group, 1);
	setenv("VERIFY_EOS_FAULT", num, 1);
}

/* Echoes the command's output, indented, until it closes it or deadline passes. Returns false on timeout. */
static bool verify_cmd_echo(int fd, int64_t deadline)
{
	char buf[4096];
	size_t len = 0;
	bool bol = true;

	for (;;) {
		struct pollfd pfd = { fd, POLLIN, 0 };
		int64_t left = deadline - kafka_now_ms();
		ssize_t r;

		if (left <= 0)
			return false;
		if (poll(&pfd, 1, (int)(left > 1000 ? 1000 : left)) <= 0)
			continue;
		r = read(fd, buf, sizeof(buf));
		if (r <= 0)
			break;
		for (ssize_t i = 0; i < r; i++) {
			if (bol)
				fputs("            | ", stdout);
			putchar(buf[i]);
			bol = buf[i] == '\n';
		}
		len += (size_t)r;
	}
	if (!bol)
		putchar('\n');
	fflush(stdout);
	return true;
}

/*
 * Runs cmd with /bin/sh -c in its own process group, output echoed,
 * bounded by --command-timeout-ms (then the group is killed). Returns
 * true if it exited 0; logs the outcome either way.
 */
static bool verify_cmd_run(struct verify *v, const char *cmd, int index)
{
	int64_t deadline = kafka_now_ms() + opt_int(v->o, "command-timeout-ms", 120000, 1, 3600000);
	int fds[2], status = 0;
	bool in_time;
	pid_t pid;

	if (pipe(fds) != 0)
		kafka_die("pipe: %s", strerror(errno));
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		kafka_die("fork: %s", strerror(errno));
	if (pid == 0) {
		int null = open("/dev/null", O_RDONLY);

		setpgid(0, 0);
		dup2(null, STDIN_FILENO);
		dup2(fds[1], STDOUT_FILENO);
		dup2(fds[1], STDERR_FILENO);
		close(fds[0]);
		verify_cmd_env(v, index);
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	setpgid(pid, pid);
	close(fds[1]);
	in_time = verify_cmd_echo(fds[0], deadline);
	close(fds[0]);
	if (!in_time)
		kill(-pid, SIGKILL);
	waitpid(pid, &status, 0);
	if (in_time && WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return true;
	v->cmd_failures++;
	if (!in_time)
		verify_log(v, "  the command did not finish within --command-timeout-ms: killed");
	else
		verify_log(v, "  the command failed (%s %d)", WIFEXITED(status) ? "exit" : "signal",
			   WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
	return false;
}

/* The next fault command: a shuffled deck, every command once before any repeats. */
static int verify_draw_fault(struct verify *v)
{
	int nf = opt_count(v->o, "fault-cmd");

	if (v->deck_left == 0) {
		for (int i = 0; i < nf; i++)
			v->deck[i] = i;
		v->deck_left = nf;
	}
	int k = (int)(rng_next(v) % (uint64_t)v->deck_left);
	int pick = v->deck[k];

	v->deck[k] = v->deck[--v->deck_left];
	return pick;
}

static const char *verify_restore_cmd(const struct verify *v, int fault)
{
	const char *cmd = fault < opt_count(v->o, "restore-cmd") ? opt_nth(v->o, "restore-cmd", fault) : "";

	return *cmd ? cmd : NULL;
}

static void verify_restore(struct verify *v)
{
	const char *cmd = verify_restore_cmd(v, v->active);
	int64_t now;

	verify_log(v, "restore of fault %d: %s", v->faults, cmd);
	verify_cmd_run(v, cmd, v->active);
	v->restores++;
	v->active = -1;
	now = verify_progress(v); /* the next event waits for the copy to move on after the restore */
	if (now > v->fired_at)
		v->fired_at = now;
}

/* ---- the chaos plan ----------------------------------------------------- */

/*
 * The events in a random order (kills and faults shuffled), each due a
 * random 10-100 % of (what is left to copy) / (events left + 1) messages
 * after the previous one fired (verify_due): measured from what is left,
 * not from n, the copy that runs on between a point being reached and
 * its event firing (the wait for an open transaction, a copier starting
 * again) cannot use up the room of the events after it.
 * The copier's pace: --copier-throughput, by default the messages spread
 * over 2 s per event (10 s at least), so that on a fast cluster the copy
 * does not end before the events, whose recovery takes seconds.
 */
static void verify_plan(struct verify *v)
{
	int kills = (int)opt_int(v->o, "copier-kills", 10, 0, 1000);
	int nf = opt_count(v->o, "fault-cmd");
	int faults = (int)opt_int(v->o, "faults", nf, 0, 1000);
	int64_t secs = 2 * (kills + faults + 1) > 10 ? 2 * (kills + faults + 1) : 10, tp;

	v->nev = kills + faults;
	v->evs = calloc((size_t)v->nev + 1, sizeof(*v->evs));
	v->deck = calloc((size_t)nf + 1, sizeof(*v->deck));
	if (!v->evs || !v->deck)
		kafka_die("out of memory");
	for (int j = 0; j < v->nev; j++)
		v->evs[j].fault = j < faults;
	for (int j = v->nev - 1; j > 0; j--) {
		int k = (int)(rng_next(v) % (uint64_t)(j + 1));
		bool t = v->evs[j].fault;

		v->evs[j].fault = v->evs[k].fault;
		v->evs[k].fault = t;
	}
	for (int j = 0; j < v->nev; j++)
		v->evs[j].share = rng_uniform(v, 0.1, 1.0);
	tp = opt_int(v->o, "copier-throughput", -1, 0, INT32_MAX);
	if (tp < 0)
		tp = (v->n + secs - 1) / secs;
	snprintf(v->throughput, sizeof(v->throughput), "%" PRId64, tp);
}

/* Has the copy (done committed messages) reached the next event's point? */
static bool verify_due(const struct verify *v, int64_t done)
{
	int64_t left = v->n > v->fired_at ? v->n - v->fired_at : 0;

	return done >= v->fired_at + 1 + (int64_t)(v->evs[v->next].share * (double)left / (v->nev - v->next + 1));
}

/* Fires the next event (its point is reached; for a fault, no other fault is active). */
static void verify_fire(struct verify *v, int64_t done)
{
	const struct verify_event *ev = &v->evs[v->next++];
	const char *txn = verify_await_txn(v);
	int64_t now = verify_progress(v);

	done = now > done ? now : done;
	v->fired_at = done;
	if (!ev->fault) {
		verify_copier_kill(v);
		now = verify_progress(v); /* where the next copier resumes: the next event waits for it to copy */
		v->fired_at = now > done ? now : done;
		verify_copier_start(v);
		verify_log(v, "copied %" PRId64 "/%" PRId64 ", %s: copier kill %d: SIGKILL, started again (pid %d)",
			   done, v->n, txn, ++v->kills, (int)v->copier);
		return;
	}
	int f = verify_draw_fault(v);
	const char *cmd = opt_nth(v->o, "fault-cmd", f);
	int64_t after = opt_int(v->o, "restore-after-ms", 5000, 0, 3600000);

	verify_log(v, "copied %" PRId64 "/%" PRId64 ", %s: fault %d: %s", done, v->n, txn, ++v->faults, cmd);
	verify_cmd_run(v, cmd, f);
	if (verify_restore_cmd(v, f)) {
		v->active = f;
		v->restore_at_ms = kafka_now_ms() + (int64_t)rng_uniform(v, (double)after / 2, (double)after + 1);
	}
}

/* Runs the copy and the planned events until the copy is complete, stalls or the user interrupts. */
static void verify_copy(struct verify *v)
{
	int64_t done = 0, last_move = kafka_now_ms();
	int64_t stall_ms = opt_int(v->o, "stall-timeout-ms", 120000, 1000, 86400000);

	verify_copier_start(v);
	verify_log(v, "copier started (pid %d): %s, at most %s messages/s", (int)v->copier, v->copier_path,
		   v->throughput);
	while (!verify_interrupted) {
		int64_t now = verify_progress(v);

		if (now > done) {
			done = now;
			last_move = kafka_now_ms();
		}
		verify_copier_check(v);
		if (v->active >= 0 && kafka_now_ms() >= v->restore_at_ms)
			verify_restore(v);
		if (v->next < v->nev && verify_due(v, done) && (!v->evs[v->next].fault || v->active < 0)) {
			verify_fire(v, done);
			continue;
		}
		if (v->active < 0 && done >= v->n)
			break;
		if (kafka_now_ms() - last_move > stall_ms && v->active < 0) {
			v->stalled = true;
			verify_log(v,
				   "the copy made no progress for %" PRId64 " ms (copied %" PRId64 "/%" PRId64
				   "): giving up",
				   stall_ms, done, v->n);
			break;
		}
		sleep_ms(TICK_MS);
	}
	if (v->active >= 0)
		verify_restore(v);
	if (!v->stalled && !verify_interrupted)
		verify_log(v, "copy complete: the copier's committed offsets are at the end of every source partition");
	verify_copier_stop(v);
	verify_log(v, "copier stopped");
}

/* ---- reading the sink back ---------------------------------------------- */

/*
 * Transactional modes: waits (bounded by SETTLE_MS, several transaction
 * timeouts) until no transaction is open on the sink.  One still open then
 * is hanging: no copier is left to end it and its coordinator did not
 * abort it, so a read_committed consumer stops there for good.  The
 * partitions are logged and counted (v->hanging, a failure of the run).
 */
static void verify_settle(struct verify *v)
{
	int64_t deadline = kafka_now_ms() + SETTLE_MS;
	int64_t *hw = calloc((size_t)v->parts, sizeof(*hw)), *lso = calloc((size_t)v->parts, sizeof(*lso));
	bool known = false;

	if (!hw || !lso)
		kafka_die("out of memory");
	while (v->mode != MODE_IDEMPOTENT && kafka_now_ms() < deadline && !verify_interrupted) {
		known = verify_ends(v->watch_rc, v, v->sink, lso, 5000) == 0 &&
			verify_ends(v->watch, v, v->sink, hw, 5000) == 0;
		if (known && !memcmp(hw, lso, (size_t)v->parts * sizeof(*hw))) {
			verify_log(v, "no transaction open on %s", v->sink);
			goto out;
		}
		sleep_ms(200);
	}
	if (!known && v->mode != MODE_IDEMPOTENT)
		verify_log(v, "the end offsets of %s could not be read for %d s", v->sink, SETTLE_MS / 1000);
	for (int32_t p = 0; known && p < v->parts; p++)
		if (lso[p] < hw[p]) {
			v->hanging++;
			verify_log(v,
				   "%s partition %d: a transaction still open %d s after the copy (last stable offset "
				   "%" PRId64 ", high watermark %" PRId64 ")",
				   v->sink, p, SETTLE_MS / 1000, lso[p], hw[p]);
		}
out:
	free(hw);
	free(lso);
}

/* Counts one record of the sink (count[i]: copies of message i seen so far; last[p]: highest first copy in p). */
static void verify_tally_one(const struct verify *v, struct verify_tally *t, uint8_t *count, int64_t *last,
			     const rd_kafka_message_t *m)
{
	const char *s = m->payload;
	int64_t i = 0;
	size_t k = 4;

	t->seen++;
	if (m->len < 5 || m->len > 14 || memcmp(s, "MSG-", 4) != 0) {
		t->unexpected++;
		return;
	}
	for (; k < m->len && s[k] >= '0' && s[k] <= '9'; k++)
		i = i * 10 + (s[k] - '0');
	if (k != m->len || i >= v->n) {
		t->unexpected++;
		return;
	}
	if (count[i]) {
		t->dups++;
		count[i] += count[i] < UINT8_MAX;
		return;
	}
	count[i] = 1;
	if (i % v->parts != m->partition || i < last[m->partition])
		t->out_of_order++;
	if (i > last[m->partition])
		last[m->partition] = i;
}

/* Reads each sink partition from the beginning to its end (bounded), counting into count[] and last[]. */
static void verify_read_loop(struct verify *v, rd_kafka_t *rk, const int64_t *end, struct verify_tally *t,
			     uint8_t *count, int64_t *last)
{
	int32_t at_end = 0;
	bool *eof = calloc((size_t)v->parts, sizeof(*eof));
	int64_t last_msg = kafka_now_ms();

	if (!eof)
		kafka_die("out of memory");
	for (int32_t p = 0; p < v->parts; p++)
		if (end[p] == 0)
			eof[p] = true, at_end++;
	while (at_end < v->parts && kafka_now_ms() - last_msg < READ_IDLE_MS && !verify_interrupted) {
		rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 500);

		if (!m)
			continue;
		if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
			if (m->partition >= 0 && m->partition < v->parts && !eof[m->partition] &&
			    m->offset >= end[m->partition])
				eof[m->partition] = true, at_end++;
		} else if (m->err) {
			verify_log(v, "reading %s: %s", v->sink, rd_kafka_message_errstr(m));
		} else {
			verify_tally_one(v, t, count, last, m);
			last_msg = kafka_now_ms();
		}
		rd_kafka_message_destroy(m);
	}
	if (at_end < v->parts)
		verify_log(v, "reading %s: %d of %d partitions not read to their end", v->sink, v->parts - at_end,
			   v->parts);
	free(eof);
}

static void verify_read(struct verify *v, struct verify_tally *t)
{
	const char *iso = v->mode == MODE_READ_UNCOMMITTED ? "read_uncommitted" : "read_committed";
	char group[300];
	const char *kv[] = { "group.id",
			     group,
			     "isolation.level",
			     iso,
			     "enable.auto.commit",
			     "false",
			     "enable.partition.eof",
			     "true",
			     "fetch.wait.max.ms",
			     "100",
			     "topic.metadata.refresh.interval.ms",
			     "1000",
			     NULL };
	rd_kafka_t *rk;
	rd_kafka_topic_partition_list_t *l;
	int64_t *end = calloc((size_t)v->parts, sizeof(*end)), *last = malloc((size_t)v->parts * sizeof(*last));
	uint8_t *count = calloc((size_t)v->n, 1);

	if (!end || !last || !count)
		kafka_die("out of memory");
	snprintf(group, sizeof(group), "%s-reader", v->group);
	rk = verify_client(v, RD_KAFKA_CONSUMER, kv);
	if (verify_ends_retry(rk, v, v->sink, end, kafka_timeout_ms()) != 0)
		kafka_die("cannot read the end offsets of %s within %d ms", v->sink, kafka_timeout_ms());
	for (int32_t p = 0; p < v->parts; p++)
		last[p] = -1;
	l = verify_parts(v, v->sink, RD_KAFKA_OFFSET_BEGINNING);
	if (rd_kafka_assign(rk, l))
		kafka_die("cannot assign %s", v->sink);
	rd_kafka_topic_partition_list_destroy(l);
	verify_read_loop(v, rk, end, t, count, last);
	verify_log(v, "read %" PRId64 " records of %s (%s)", t->seen, v->sink, iso);
	for (int64_t i = 0; i < v->n; i++)
		t->missing += count[i] == 0;
	rd_kafka_consumer_close(rk);
	rd_kafka_destroy(rk);
	free(count);
	free(last);
	free(end);
}

/* ---- the report ------------------------------------------------------------ */

static void verify_report_chaos(const struct verify *v)
{
	int kills = (int)opt_int(v->o, "copier-kills", 10, 0, 1000);
	int faults = (int)opt_int(v->o, "faults", opt_count(v->o, "fault-cmd"), 0, 1000);

	printf("copier kills   %d of %d\n", v->kills, kills);
	printf("faults         %d of %d (%d restored, %d commands failed)\n", v->faults, faults, v->restores,
	       v->cmd_failures);
	if (v->mode != MODE_IDEMPOTENT)
		printf("open txn       at %d of the %d kills and faults\n", v->open_txn_events, v->kills + v->faults);
	if (v->copier_restarts)
		printf("copier exits   %d (it was started again each time)\n", v->copier_restarts);
	if (v->next < v->nev)
		printf("warning: the copy ended before %d of the kills and faults; more --messages leave room for "
		       "them\n",
		       v->nev - v->next);
}

/* Prints the counts and the verdict; returns the exit status. */
static int verify_report(const struct verify *v, const struct verify_tally *t)
{
	static const char *const dup_why[] = {
		"",
		" (expected in idempotent mode: messages copied again after a kill, their offsets not yet committed)",
		" (expected in read-uncommitted mode: records of aborted transactions)",
	};
	bool dups_ok = v->mode != MODE_EOS;
	bool bad = t->missing || t->out_of_order || t->unexpected || (t->dups && !dups_ok);

	printf("\n%s: mode %s, %s copier, %s reader, sink %s\n", PROG, mode_names[v->mode],
	       v->mode == MODE_IDEMPOTENT ? "non-transactional" : "transactional",
	       v->mode == MODE_READ_UNCOMMITTED ? "read_uncommitted" : "read_committed", v->sink);
	printf("expected       %" PRId64 "\n", v->n);
	printf("seen           %" PRId64 "\n", t->seen);
	printf("duplicates     %" PRId64 "%s\n", t->dups, t->dups ? dup_why[v->mode] : "");
	printf("missing        %" PRId64 "\n", t->missing);
	printf("out-of-order   %" PRId64 "\n", t->out_of_order);
	printf("unexpected     %" PRId64 "\n", t->unexpected);
	verify_report_chaos(v);
	if (bad)
		printf("result: FAIL: %s\n",
		       v->mode == MODE_EOS ? "not exactly once" : "messages lost or out of order");
	else if (v->hanging)
		printf("result: FAIL: %d sink partitions hold a hanging transaction (read_committed consumers stop "
		       "there)\n",
		       v->hanging);
	else if (v->mode == MODE_EOS)
		printf("result: OK: exactly once, every message once and in source-partition order\n");
	else
		printf("result: OK for %s mode: no message missing or out of order; %" PRId64
		       " duplicates, which only eos mode rules out\n",
		       mode_names[v->mode], t->dups);
	if (v->stalled || v->cmd_failures)
		printf("the run was not done as asked (%s)\n", v->stalled ? "the copy stalled" : "a command failed");
	fflush(stdout);
	return bad || v->hanging || v->stalled || v->cmd_failures ? 1 : 0;
}

int main(int argc, char **argv)
{
	struct opts *o = opts_parse(&verify_cmd, argc, argv);
	struct verify v = { 0 };
	struct verify_tally t = { 0 };
	char watch_group[300];
	/* metadata every second: ListOffsets go to the leaders, which move when brokers fail */
	const char *watch_kv[] = {
		"group.id", v.group, "isolation.level", "read_uncommitted", "topic.metadata.refresh.interval.ms",
		"1000",     NULL
	};
	const char *rc_kv[] = {
		"group.id", watch_group, "isolation.level", "read_committed", "topic.metadata.refresh.interval.ms",
		"1000",     NULL
	};
	int rc;

	verify_parse(&v, o);
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	v.t0_ms = kafka_now_ms();
	printf("%s: mode %s, seed %" PRIu64 ", topics %s and %s (%d partitions), group and transactional id %s\n", PROG,
	       mode_names[v.mode], v.seed, v.source, v.sink, v.parts, v.group);
	verify_create_topics(&v);
	snprintf(watch_group, sizeof(watch_group), "%s-watch", v.group);
	v.watch = verify_client(&v, RD_KAFKA_CONSUMER, watch_kv);
	v.watch_rc = verify_client(&v, RD_KAFKA_CONSUMER, rc_kv);
	verify_produce_source(&v);
	verify_source_ends(&v);
	verify_plan(&v);
	verify_copy(&v);
	if (verify_interrupted)
		kafka_die("interrupted");
	verify_settle(&v);
	verify_read(&v, &t);
	if (verify_interrupted)
		kafka_die("interrupted");
	rc = verify_report(&v, &t);
	rd_kafka_destroy(v.watch_rc);
	rd_kafka_destroy(v.watch);
	free(v.src_end);
	free(v.evs);
	free(v.deck);
	opts_free(o);
	return rc;
}
