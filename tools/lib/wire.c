/* wire.c - the blocking raw-protocol client (see wire.h).
 *
 * One TCP connection per broker, one request in flight: a tool asks a
 * handful of questions, so there is no pipelining. Frames are read whole
 * into the caller's arena (bounded by WIRE_FRAME_MAX) because the decoded
 * structs point into them. Timeouts are SO_SNDTIMEO/SO_RCVTIMEO, which
 * Linux also applies to connect().
 */
#include "wire.h"

#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "kafka.h"
#include "opt.h"
#include "proto/header.h"

#define WIRE_FRAME_MAX (100 << 20) /* Kafka's socket.request.max.bytes default */

struct wire {
	int fd;
	int32_t node_id;
	int32_t corr;                        /* last correlation id sent */
	char addr[300];                      /* host:port, for messages */
	struct arena arena;                  /* holds versions */
	struct ApiVersionsResponse versions; /* what the broker speaks */
};

static int wire_connect(const char *host, int port, int *fd_out)
{
	struct timeval tv = { kafka_timeout_ms() / 1000, (kafka_timeout_ms() % 1000) * 1000 };
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM }, *res, *ai;
	char service[16];
	int fd = -1, err = -EHOSTUNREACH;

	snprintf(service, sizeof(service), "%d", port);
	if (getaddrinfo(host, service, &hints, &res))
		return -EHOSTUNREACH;
	for (ai = res; ai && fd < 0; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
		if (fd < 0)
			continue;
		setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		if (connect(fd, ai->ai_addr, ai->ai_addrlen) < 0) {
			err = -errno;
			close(fd);
			fd = -1;
		}
	}
	freeaddrinfo(res);
	*fd_out = fd;
	return fd < 0 ? err : 0;
}

/*
 * Sends (out) or receives all len bytes at p, again after EINTR. 0, -errno,
 * or -EPIPE / -ECONNRESET when the broker closed the connection.
 */
static int wire_xfer(struct wire *wc, uint8_t *p, size_t len, bool out)
{
	while (len > 0) {
		ssize_t n = out ? send(wc->fd, p, len, MSG_NOSIGNAL) : recv(wc->fd, p, len, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : out ? -EPIPE : -ECONNRESET;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* One response frame into the arena. OUT *frame, *len. 0 or -errno. */
static int wire_recv(struct wire *wc, struct arena *a, uint8_t **frame, int32_t *len)
{
	uint8_t size[4];
	struct rd r;
	int err = wire_xfer(wc, size, sizeof(size), false);

	if (err)
		return err;
	rd_init(&r, size, sizeof(size));
	*len = rd_i32(&r);
	if (*len < 4 || *len > WIRE_FRAME_MAX)
		return -EBADMSG;
	*frame = arena_alloc(a, (size_t)*len);
	if (!*frame)
		return -ENOMEM;
	return wire_xfer(wc, *frame, (size_t)*len, false);
}

static const char *wire_errstr(int err)
{
	return err == -EAGAIN || err == -EWOULDBLOCK ? "timed out" : strerror(-err);
}

void wire_call(struct wire *wc, int16_t api_key, int16_t version, const void *req, void *resp, struct arena *a)
{
	const struct proto_api *pa = &proto_apis[api_key];
	int32_t corr = ++wc->corr, got = -1, len = 0;
	uint8_t *frame = NULL;
	struct wr w;
	struct rd r;
	size_t at;
	int err;

	wr_init(&w);
	at = header_write_request(&w, api_key, version, corr, kstr_c(opt_prog()));
	pa->req_encode(&w, version, req);
	wr_patch_i32(&w, at, (int32_t)(wr_total(&w) - (int64_t)at - 4));
	err = w.err ? w.err : wire_xfer(wc, w.buf, w.len, true);
	wr_release(&w);
	if (!err)
		err = wire_recv(wc, a, &frame, &len);
	if (err)
		kafka_die("%s v%d to broker %d (%s): %s", pa->name, version, wc->node_id, wc->addr, wire_errstr(err));
	rd_init(&r, frame, (size_t)len);
	if (header_read_response(&r, api_key, version, &got) || got != corr || pa->resp_decode(&r, a, version, resp))
		kafka_die("%s v%d: broker %d (%s) sent a response that does not parse", pa->name, version, wc->node_id,
			  wc->addr);
}

int16_t wire_version(const struct wire *wc, int16_t api_key, int16_t max)
{
	const struct proto_api *pa = &proto_apis[api_key];

	for (int32_t i = 0; i < wc->versions.ApiKeys.n; i++) {
		const struct ApiVersion *v = &wc->versions.ApiKeys.v[i];
		int16_t hi = v->MaxVersion < max ? v->MaxVersion : max;

		if (v->ApiKey == api_key && hi >= pa->min && hi >= v->MinVersion)
			return hi;
	}
	kafka_die("broker %d (%s) does not support %s v%d-%d", wc->node_id, wc->addr, pa->name, pa->min, max);
}

const struct rd_kafka_metadata *wire_metadata(rd_kafka_t *rk)
{
	const struct rd_kafka_metadata *md;
	rd_kafka_resp_err_t err = rd_kafka_metadata(rk, 1, NULL, &md, kafka_timeout_ms());

	if (err)
		kafka_die("cannot read the cluster metadata: %s", kafka_err_name(err));
	return md;
}

int32_t wire_leader(rd_kafka_t *rk, const char *topic, int32_t partition)
{
	const struct rd_kafka_metadata *md = wire_metadata(rk);
	int32_t leader = -1;

	for (int i = 0; i < md->topic_cnt; i++)
		for (int j = 0; !strcmp(md->topics[i].topic, topic) && j < md->topics[i].partition_cnt; j++)
			if (md->topics[i].partitions[j].id == partition)
				leader = md->topics[i].partitions[j].leader;
	rd_kafka_metadata_destroy(md);
	return leader;
}

/* host:port of node_id from the metadata; exits 1 if the node is unknown. */
static void wire_node_addr(rd_kafka_t *rk, int32_t node_id, char *host, size_t size, int *port)
{
	const struct rd_kafka_metadata *md = wire_metadata(rk);
	int found = 0;

	for (int i = 0; i < md->broker_cnt && !found; i++)
		if (md->brokers[i].id == node_id) {
			snprintf(host, size, "%s", md->brokers[i].host);
			*port = md->brokers[i].port;
			found = 1;
		}
	rd_kafka_metadata_destroy(md);
	if (!found)
		kafka_die("broker %d is not in the cluster metadata", node_id);
}

struct wire *wire_open(rd_kafka_t *rk, int32_t node_id)
{
	struct wire *wc = calloc(1, sizeof(*wc));
	struct ApiVersionsRequest req;
	char host[256];
	int port = 0, err;

	if (!wc)
		kafka_die("out of memory");
	wire_node_addr(rk, node_id, host, sizeof(host), &port);
	wc->node_id = node_id;
	snprintf(wc->addr, sizeof(wc->addr), "%s:%d", host, port);
	err = wire_connect(host, port, &wc->fd);
	if (err)
		kafka_die("cannot connect to broker %d at %s: %s", node_id, wc->addr, wire_errstr(err));
	arena_init(&wc->arena, 0);
	ApiVersionsRequest_init(&req);
	wire_call(wc, API_ApiVersions, 0, &req, &wc->versions, &wc->arena);
	if (wc->versions.ErrorCode)
		kafka_die("ApiVersions to broker %d (%s): %s", node_id, wc->addr,
			  kafka_err_name(wc->versions.ErrorCode));
	return wc;
}

void wire_close(struct wire *wc)
{
	if (!wc)
		return;
	close(wc->fd);
	arena_release(&wc->arena);
	free(wc);
}

int32_t wire_node_id(const struct wire *wc)
{
	return wc->node_id;
}
