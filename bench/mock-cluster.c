/* mock-cluster.c - librdkafka's in-memory mock cluster in a process of its own.
 *
 * bench/compare measures Gregor against librdkafka's mock broker
 * (rd_kafka_mock_cluster_new(), <librdkafka/rdkafka_mock.h>). The mock lives
 * inside an rd_kafka_t, so to keep client and broker in separate processes in
 * both cases this program hosts it: it creates the cluster, optionally
 * creates topics, prints the bootstrap address as the only line on stdout and
 * then serves until SIGTERM/SIGINT or until stdin reaches end of file (so the
 * parent dying takes it down too).
 *
 *     mock-cluster [--brokers N] [--topic NAME:PARTITIONS]...
 *
 * The mock keeps records in memory and checks neither CRCs nor sequences; it
 * auto-creates unknown topics with `num.partitions`-like defaults
 * (librdkafka: 4 partitions) when a client asks for them.
 *
 * Built by bench/compare and bench/partition-sweep with
 *     cc -O2 bench/mock-cluster.c -o $BUILD/bin/mock-cluster -lrdkafka -lpthread
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
	(void)sig;
	stop_requested = 1;
}

static void usage(void)
{
	fprintf(stderr, "usage: mock-cluster [--brokers N] [--topic NAME:PARTITIONS]...\n");
	exit(2);
}

/* Waits for a signal or end of file on stdin. */
static void serve(void)
{
	struct pollfd pfd = { .fd = 0, .events = POLLIN };
	char buf[256];

	while (!stop_requested) {
		int n = poll(&pfd, 1, 200);
		if (n < 0 && errno != EINTR)
			break;
		if (n > 0) {
			ssize_t r = read(0, buf, sizeof(buf));
			if (r <= 0)
				break;
		}
	}
}

int main(int argc, char **argv)
{
	int brokers = 1;
	char errstr[512];

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--brokers") && i + 1 < argc) {
			brokers = atoi(argv[++i]);
			if (brokers < 1)
				usage();
		} else if (!strcmp(argv[i], "--topic") && i + 1 < argc) {
			i++; /* applied once the cluster exists */
		} else {
			usage();
		}
	}

	rd_kafka_conf_t *conf = rd_kafka_conf_new();
	rd_kafka_conf_set(conf, "log_level", "3", errstr, sizeof(errstr));
	rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr));
	if (!rk) {
		fprintf(stderr, "mock-cluster: %s\n", errstr);
		return 1;
	}
	rd_kafka_mock_cluster_t *mc = rd_kafka_mock_cluster_new(rk, brokers);
	if (!mc) {
		fprintf(stderr, "mock-cluster: rd_kafka_mock_cluster_new failed\n");
		rd_kafka_destroy(rk);
		return 1;
	}
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--topic"))
			continue;
		char *spec = strdup(argv[++i]);
		char *colon = strrchr(spec, ':');
		int parts = colon ? atoi(colon + 1) : 1;
		if (colon)
			*colon = '\0';
		rd_kafka_resp_err_t err = rd_kafka_mock_topic_create(mc, spec, parts > 0 ? parts : 1, 1);
		if (err)
			fprintf(stderr, "mock-cluster: topic %s: %s\n", spec, rd_kafka_err2str(err));
		free(spec);
	}

	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	signal(SIGPIPE, SIG_IGN);
	printf("%s\n", rd_kafka_mock_cluster_bootstraps(mc));
	fflush(stdout);
	serve();

	rd_kafka_mock_cluster_destroy(mc);
	rd_kafka_destroy(rk);
	return 0;
}
