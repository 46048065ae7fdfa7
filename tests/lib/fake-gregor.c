/* fake-gregor: a stand-in broker for checking the test harness itself.
 *
 * Not Gregor. It starts librdkafka's in-process mock cluster (one broker) and
 * forwards the port named in server.properties `listeners=` to it, so the
 * harness (start, readiness, SIGTERM, kill -9, logs) and the client tests can
 * be exercised before the real broker exists. The mock advertises its own
 * port in Metadata, so clients move over to it after bootstrap. It keeps no
 * data on disk: restart/recovery/malformed-input tests are expected to fail.
 *
 *   gcc -O1 -o build/fake-gregor tests/lib/fake-gregor.c -lrdkafka -lpthread
 *   GREGOR_BIN=build/fake-gregor sh tests/integration/run.sh 0001 0002
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

static int mock_port;

static void on_term(int sig)
{
	(void)sig;
	_exit(0);
}

static void *pump(void *arg)
{
	int c = (int)(long)arg, u;
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(mock_port) };
	char buf[65536];
	struct pollfd p[2];

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	u = socket(AF_INET, SOCK_STREAM, 0);
	if (connect(u, (struct sockaddr *)&a, sizeof(a)) < 0)
		goto out;
	p[0].fd = c;
	p[1].fd = u;
	p[0].events = p[1].events = POLLIN;
	for (;;) {
		if (poll(p, 2, -1) < 0)
			break;
		for (int i = 0; i < 2; i++) {
			if (!p[i].revents)
				continue;
			ssize_t n = read(p[i].fd, buf, sizeof(buf));
			if (n <= 0)
				goto out;
			if (write(p[1 - i].fd, buf, n) != n)
				goto out;
		}
	}
out:
	close(u);
	close(c);
	return NULL;
}

int main(int argc, char **argv)
{
	char line[4096], errstr[512];
	int port = 0, ls, one = 1;
	FILE *f;

	if (argc < 2 || !(f = fopen(argv[1], "r"))) {
		fprintf(stderr, "usage: fake-gregor server.properties\n");
		return 2;
	}
	while (fgets(line, sizeof(line), f)) {
		char *p = strstr(line, "listeners=PLAINTEXT://");
		if (p == line) {
			char *colon = strrchr(line, ':');
			port = atoi(colon + 1);
		}
	}
	fclose(f);
	rd_kafka_conf_t *conf = rd_kafka_conf_new();
	rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr));
	rd_kafka_mock_cluster_t *mc = rd_kafka_mock_cluster_new(rk, 1);
	const char *bs = rd_kafka_mock_cluster_bootstraps(mc);
	mock_port = atoi(strrchr(bs, ':') + 1);

	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ls = socket(AF_INET, SOCK_STREAM, 0);
	setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(ls, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(ls, 64) < 0) {
		fprintf(stderr, "fake-gregor: bind 127.0.0.1:%d: %s\n", port, strerror(errno));
		return 1;
	}
	signal(SIGPIPE, SIG_IGN);
	signal(SIGTERM, on_term);
	fprintf(stderr, "fake-gregor: mock cluster at %s; listening on 127.0.0.1:%d\n", bs, port);
	for (;;) {
		int c = accept(ls, NULL, NULL);
		pthread_t t;
		if (c < 0)
			continue;
		pthread_create(&t, NULL, pump, (void *)(long)c);
		pthread_detach(t);
	}
}
