/*
 * client.c - one outbound broker connection (client.h).
 *
 * States: idle (waiting for the backoff timer) -> connecting (EPOLLOUT
 * tells the outcome) -> up.  Output is one byte buffer with a read
 * offset; input is one buffer holding at most one partial frame.
 */
#include "net/client.h"

#include <errno.h>
#include <stddef.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "util/clock.h"
#include "util/log.h"

#define NCLIENT_BACKOFF_MIN 100
#define NCLIENT_BACKOFF_MAX 5000

enum nclient_state { NC_IDLE, NC_CONNECTING, NC_UP };

struct nclient {
	struct loop *loop;
	struct nclient_cfg cfg;
	char host[256];
	char peer[300];
	enum nclient_state state;
	struct loop_io io;
	struct loop_timer retry;
	int64_t backoff_ms;
	uint8_t *out;
	size_t out_len, out_off, out_cap;
	uint8_t *in;
	size_t in_len, in_cap;
};

static void nclient_connect(struct nclient *c);

static struct nclient *nclient_of_io(struct loop_io *io)
{
	return (struct nclient *)((char *)io - offsetof(struct nclient, io));
}

static struct nclient *nclient_of_timer(struct loop_timer *t)
{
	return (struct nclient *)((char *)t - offsetof(struct nclient, retry));
}

static void nclient_on_retry(struct loop_timer *t)
{
	nclient_connect(nclient_of_timer(t));
}

/* Drops the socket and what was buffered; tries again after the backoff. */
static void nclient_down(struct nclient *c, const char *why, int err)
{
	bool was_up = c->state == NC_UP;

	if (c->io.fd >= 0) {
		loop_del(c->loop, &c->io);
		close(c->io.fd);
		c->io.fd = -1;
	}
	c->state = NC_IDLE;
	c->out_len = c->out_off = 0;
	c->in_len = 0;
	log_debug(LOGC_NET, "net", "broker connection %s: %s%s%s", c->peer, why, err ? ": " : "",
		  err ? strerror(err) : "");
	loop_timer_set(c->loop, &c->retry, clock_mono_ms() + c->backoff_ms);
	c->backoff_ms = c->backoff_ms * 2 > NCLIENT_BACKOFF_MAX ? NCLIENT_BACKOFF_MAX : c->backoff_ms * 2;
	if (was_up)
		c->cfg.on_state(c->cfg.arg, false);
}

static int nclient_resolve(struct nclient *c, struct sockaddr_storage *sa, socklen_t *salen)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICHOST }, *ai = NULL;
	char port[16];
	int rc;

	snprintf(port, sizeof(port), "%d", c->cfg.port);
	rc = getaddrinfo(c->host, port, &hints, &ai);
	if (rc == EAI_NONAME) { /* a name: /etc/hosts or the resolver (advertise addresses to avoid the wait) */
		hints.ai_flags = 0;
		rc = getaddrinfo(c->host, port, &hints, &ai);
	}
	if (rc || !ai)
		return -EHOSTUNREACH;
	memcpy(sa, ai->ai_addr, ai->ai_addrlen);
	*salen = ai->ai_addrlen;
	freeaddrinfo(ai);
	return 0;
}

static void nclient_connect(struct nclient *c)
{
	struct sockaddr_storage sa;
	socklen_t salen = 0;
	int one = 1, fd, rc = nclient_resolve(c, &sa, &salen);

	if (rc) {
		nclient_down(c, "cannot resolve", -rc);
		return;
	}
	fd = socket(sa.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		nclient_down(c, "socket", errno);
		return;
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	c->io.fd = fd;
	c->state = NC_CONNECTING;
	if (connect(fd, (struct sockaddr *)&sa, salen) < 0 && errno != EINPROGRESS) {
		rc = errno;
		close(fd);
		c->io.fd = -1;
		nclient_down(c, "connect", rc);
		return;
	}
	if (loop_add(c->loop, &c->io, EPOLLOUT | EPOLLIN)) {
		close(fd);
		c->io.fd = -1;
		nclient_down(c, "epoll", ENOMEM);
	}
}

/* Writes what is buffered; waits for EPOLLOUT while some is left. */
static int nclient_flush(struct nclient *c)
{
	while (c->out_off < c->out_len) {
		ssize_t n = send(c->io.fd, c->out + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			break;
		if (n < 0)
			return -errno;
		c->out_off += (size_t)n;
	}
	if (c->out_off == c->out_len)
		c->out_len = c->out_off = 0;
	return loop_mod(c->loop, &c->io, EPOLLIN | (c->out_len ? EPOLLOUT : 0));
}

/* Hands up every complete frame read; -EBADMSG for a size out of bounds. */
static int nclient_frames(struct nclient *c)
{
	size_t at = 0;

	while (c->in_len - at >= 4) {
		const uint8_t *p = c->in + at;
		int32_t len = (int32_t)((uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]);

		if (len < 4 || len > c->cfg.frame_max)
			return -EBADMSG;
		if (c->in_len - at - 4 < (size_t)len)
			break;
		c->cfg.on_frame(c->cfg.arg, p + 4, len);
		if (c->state != NC_UP)
			return 0; /* the callback dropped the connection */
		at += 4 + (size_t)len;
	}
	memmove(c->in, c->in + at, c->in_len - at);
	c->in_len -= at;
	return 0;
}

static int nclient_read(struct nclient *c)
{
	for (;;) {
		ssize_t n;

		if (c->in_cap - c->in_len < 65536) {
			uint8_t *p = realloc(c->in, c->in_cap + 65536);

			if (!p)
				return -ENOMEM;
			c->in = p;
			c->in_cap += 65536;
		}
		n = recv(c->io.fd, c->in + c->in_len, c->in_cap - c->in_len, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return 0;
		if (n <= 0)
			return n == 0 ? -ECONNRESET : -errno;
		c->in_len += (size_t)n;
		if (nclient_frames(c))
			return -EBADMSG;
		if (c->state != NC_UP)
			return 0;
	}
}

static void nclient_on_io(struct loop_io *io, uint32_t events)
{
	struct nclient *c = nclient_of_io(io);
	int err = 0;
	socklen_t len = sizeof(err);

	if (c->state == NC_CONNECTING) {
		if (getsockopt(io->fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0 || err) {
			nclient_down(c, "connect", err ? err : errno);
			return;
		}
		c->state = NC_UP;
		c->backoff_ms = NCLIENT_BACKOFF_MIN;
		log_debug(LOGC_NET, "net", "broker connection %s: up", c->peer);
		c->cfg.on_state(c->cfg.arg, true); /* may queue frames */
		if (c->state != NC_UP)
			return;
	}
	if ((events & (EPOLLERR | EPOLLHUP)) && !(events & EPOLLIN)) {
		nclient_down(c, "closed", 0);
		return;
	}
	if ((events & EPOLLIN) && (err = nclient_read(c)) < 0) {
		nclient_down(c, "read", -err);
		return;
	}
	if (c->state == NC_UP && (err = nclient_flush(c)) < 0)
		nclient_down(c, "write", -err);
}

int nclient_new(struct loop *loop, const struct nclient_cfg *cfg, struct nclient **out)
{
	struct nclient *c;

	if (!cfg->host || strlen(cfg->host) >= sizeof(c->host) || cfg->port <= 0 || cfg->port > 65535)
		return -EINVAL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->loop = loop;
	c->cfg = *cfg;
	strcpy(c->host, cfg->host);
	snprintf(c->peer, sizeof(c->peer), "%s:%d", c->host, cfg->port);
	c->cfg.host = c->host;
	c->io.fd = -1;
	c->io.fn = nclient_on_io;
	c->backoff_ms = NCLIENT_BACKOFF_MIN;
	loop_timer_init(&c->retry, nclient_on_retry);
	nclient_connect(c);
	*out = c;
	return 0;
}

void nclient_free(struct nclient *c)
{
	if (!c)
		return;
	loop_timer_cancel(c->loop, &c->retry);
	if (c->io.fd >= 0) {
		loop_del(c->loop, &c->io);
		close(c->io.fd);
	}
	free(c->out);
	free(c->in);
	free(c);
}

int nclient_send(struct nclient *c, const struct wr *w)
{
	if (w->err)
		return w->err;
	if ((int64_t)(c->out_len + w->len) > c->cfg.out_max)
		return -ENOBUFS;
	if (c->out_len + w->len > c->out_cap) {
		size_t cap = (c->out_len + w->len) * 2;
		uint8_t *p = realloc(c->out, cap);

		if (!p)
			return -ENOMEM;
		c->out = p;
		c->out_cap = cap;
	}
	memcpy(c->out + c->out_len, w->buf, w->len);
	c->out_len += w->len;
	if (c->state == NC_UP && nclient_flush(c) < 0)
		nclient_down(c, "write", EPIPE);
	return 0;
}

bool nclient_up(const struct nclient *c)
{
	return c->state == NC_UP;
}

const char *nclient_peer(const struct nclient *c)
{
	return c->peer;
}
