/*
 * client.c - one outbound broker connection (client.h).
 *
 * States: idle (waiting for the backoff timer) -> connecting (EPOLLOUT
 * tells the outcome) -> [handshake (the transport's, TLS)] -> [auth (the
 * SASL exchange, its frames in a buffer of their own ahead of the queued
 * ones)] -> up.  Output is one byte buffer with a read offset; input is
 * one buffer holding at most one partial frame.
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

enum nclient_state { NC_IDLE, NC_CONNECTING, NC_HANDSHAKE, NC_AUTH, NC_UP };

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
	void *t;          /* the transport's state (sec->xport), NULL on a plain socket */
	void *auth_st;    /* the authentication exchange's state (sec->auth) */
	struct wr auth_w; /* its request not yet written, and how much of it is */
	size_t auth_off;
	bool want_out;    /* the transport waits for the socket to become writable */
	bool answered;    /* a frame came on this connection: the peer accepted it */
	char failed[256]; /* the security failure last logged; "" once answered again */
};

static void nclient_connect(struct nclient *c);
static void nclient_auth_step(struct nclient *c, const uint8_t *frame, int32_t len);

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

/* Ends the transport and the authentication exchange of the connection lost. */
static void nclient_sec_end(struct nclient *c)
{
	if (c->t)
		c->cfg.sec->xport->close(c->t);
	c->t = NULL;
	if (c->auth_st)
		c->cfg.sec->auth->end(c->auth_st);
	c->auth_st = NULL;
	wr_release(&c->auth_w);
	c->auth_off = 0;
	c->want_out = false;
}

/* Drops the socket and what was buffered; tries again after the backoff. */
static void nclient_down(struct nclient *c, const char *why, int err)
{
	bool was_up = c->state == NC_UP;

	nclient_sec_end(c);
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

/*
 * A security failure (TLS handshake, authentication, or a transport error):
 * logged at warning level when it differs from the one last logged, then
 * the connection is dropped as any other.
 */
static void nclient_fail(struct nclient *c, const char *what, const char *why)
{
	char msg[sizeof(c->failed)];

	snprintf(msg, sizeof(msg), "%s: %s", what, why);
	if (strcmp(msg, c->failed)) {
		log_warn("broker connection %s: %s (retrying)", c->peer, msg);
		snprintf(c->failed, sizeof(c->failed), "%s", msg);
	}
	nclient_down(c, what, 0);
}

/* A failed transport call: its own reason when it has one. */
static void nclient_fail_io(struct nclient *c, const char *what, int err)
{
	char why[200] = "";

	if (c->t && c->cfg.sec->xport->error)
		c->cfg.sec->xport->error(c->t, why, sizeof(why));
	if (c->answered || !c->t) /* a connection lost after it served: nothing to do with its security */
		nclient_down(c, what, err);
	else
		nclient_fail(c, what, why[0] ? why : strerror(err));
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
	c->answered = false;
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

static ssize_t nclient_recv(struct nclient *c, void *buf, size_t len)
{
	ssize_t n;

	if (c->t)
		return c->cfg.sec->xport->read(c->t, buf, len, &c->want_out);
	do
		n = recv(c->io.fd, buf, len, 0);
	while (n < 0 && errno == EINTR);
	return n < 0 ? -errno : n;
}

static ssize_t nclient_write(struct nclient *c, const void *buf, size_t len)
{
	ssize_t n;

	if (c->t)
		return c->cfg.sec->xport->write(c->t, buf, len, &c->want_out);
	do
		n = send(c->io.fd, buf, len, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	return n < 0 ? -errno : n;
}

/* Writes buf from *off to len; 0 (done, or waiting for the socket) or -errno. */
static int nclient_write_all(struct nclient *c, const uint8_t *buf, size_t len, size_t *off)
{
	while (*off < len) {
		ssize_t n = nclient_write(c, buf + *off, len - *off);

		if (n == -EAGAIN)
			return 0;
		if (n < 0)
			return (int)n;
		*off += (size_t)n;
	}
	return 0;
}

/* Writes what is buffered (the authentication request before it is up); waits for EPOLLOUT while some is left. */
static int nclient_flush(struct nclient *c)
{
	bool left;
	int rc;

	if (c->state == NC_AUTH) {
		rc = nclient_write_all(c, c->auth_w.buf, c->auth_w.len, &c->auth_off);
		left = c->auth_off < c->auth_w.len;
	} else {
		rc = nclient_write_all(c, c->out, c->out_len, &c->out_off);
		if (c->out_off == c->out_len)
			c->out_len = c->out_off = 0;
		left = c->out_len > 0;
	}
	if (rc)
		return rc;
	return loop_mod(c->loop, &c->io, EPOLLIN | (left || c->want_out ? EPOLLOUT : 0));
}

/*
 * The first frame of a connection up, or its authentication done: the
 * peer accepted it (with TLS 1.3 the client's handshake ends before the
 * server has checked the client certificate, so being up proves nothing
 * yet).  Only now does the backoff
 * start again from its minimum and a logged failure count as over.
 */
static void nclient_answered(struct nclient *c)
{
	c->answered = true;
	c->backoff_ms = NCLIENT_BACKOFF_MIN;
	if (c->failed[0])
		log_info("broker connection %s: up again (after: %s)", c->peer, c->failed);
	c->failed[0] = '\0';
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
		if (c->state == NC_UP && !c->answered)
			nclient_answered(c);
		if (c->state == NC_AUTH)
			nclient_auth_step(c, p + 4, len);
		else
			c->cfg.on_frame(c->cfg.arg, p + 4, len);
		if (c->state != NC_UP && c->state != NC_AUTH)
			return 0; /* the callback dropped the connection */
		at += 4 + (size_t)len;
	}
	if (at) { /* a large frame arrives in many reads: nothing to move until one is whole */
		memmove(c->in, c->in + at, c->in_len - at);
		c->in_len -= at;
	}
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
		n = nclient_recv(c, c->in + c->in_len, c->in_cap - c->in_len);
		if (n == -EAGAIN)
			return 0;
		if (n <= 0)
			return n == 0 ? -ECONNRESET : (int)n;
		c->in_len += (size_t)n;
		if (nclient_frames(c))
			return -EBADMSG;
		if (c->state != NC_UP && c->state != NC_AUTH)
			return 0;
	}
}

/* Authenticated (or nothing to authenticate): up, and the queued frames may leave. */
static void nclient_set_up(struct nclient *c)
{
	if (c->auth_st) { /* the authentication's answers came through the transport: both accepted */
		c->cfg.sec->auth->end(c->auth_st);
		nclient_answered(c);
	}
	c->auth_st = NULL;
	wr_release(&c->auth_w);
	c->state = NC_UP;
	if (!c->cfg.sec)
		c->backoff_ms = NCLIENT_BACKOFF_MIN; /* a plain connection up is proof enough */
	log_debug(LOGC_NET, "net", "broker connection %s: up", c->peer);
	c->cfg.on_state(c->cfg.arg, true); /* may queue frames */
}

/* The transport is up: starts the authentication exchange, or is up. */
static void nclient_secured(struct nclient *c)
{
	const struct nclient_sec *sec = c->cfg.sec;

	if (!sec || !sec->auth) {
		nclient_set_up(c);
		return;
	}
	c->state = NC_AUTH;
	wr_init(&c->auth_w);
	c->auth_off = 0;
	if (sec->auth->start(sec->auth_arg, &c->auth_st, &c->auth_w) || c->auth_w.err)
		nclient_down(c, "authentication", ENOMEM);
}

/* A response of the authentication exchange. */
static void nclient_auth_step(struct nclient *c, const uint8_t *frame, int32_t len)
{
	char why[200] = "";
	int rc;

	wr_release(&c->auth_w);
	wr_init(&c->auth_w);
	c->auth_off = 0;
	rc = c->cfg.sec->auth->step(c->auth_st, frame, len, &c->auth_w, why, sizeof(why));
	if (rc < 0)
		nclient_fail(c, "authentication failed", why[0] ? why : strerror(-rc));
	else if (rc == 0)
		nclient_set_up(c);
}

/* The TCP connection is made: starts the transport's handshake, or the next step. */
static int nclient_connected(struct nclient *c)
{
	int rc;

	if (!c->cfg.sec || !c->cfg.sec->xport) {
		nclient_secured(c);
		return 0;
	}
	rc = c->cfg.sec->xport->open_client(c->cfg.sec->xport_arg, c->io.fd, c->host, &c->t);
	if (rc)
		return rc;
	c->state = NC_HANDSHAKE;
	return 0;
}

/* Drives the transport's handshake; true once done (the connection then goes on). */
static bool nclient_handshake(struct nclient *c)
{
	int rc = c->cfg.sec->xport->handshake(c->t, &c->want_out);

	if (rc == -EAGAIN) {
		if (loop_mod(c->loop, &c->io, EPOLLIN | (c->want_out ? EPOLLOUT : 0)))
			nclient_down(c, "epoll", ENOMEM);
		return false;
	}
	if (rc) {
		nclient_fail_io(c, "TLS handshake failed", -rc);
		return false;
	}
	c->want_out = false;
	nclient_secured(c);
	return c->state == NC_UP || c->state == NC_AUTH;
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
		if ((err = nclient_connected(c)) < 0) {
			nclient_down(c, "transport", -err);
			return;
		}
	}
	if (c->state == NC_HANDSHAKE && !nclient_handshake(c))
		return;
	if (c->state != NC_UP && c->state != NC_AUTH)
		return;
	if ((events & (EPOLLERR | EPOLLHUP)) && !(events & EPOLLIN)) {
		nclient_fail_io(c, "closed", ECONNRESET);
		return;
	}
	if ((events & EPOLLIN || c->want_out) && (err = nclient_read(c)) < 0) { /* a TLS read may wait to write */
		nclient_fail_io(c, "read", -err);
		return;
	}
	if ((c->state == NC_UP || c->state == NC_AUTH) && (err = nclient_flush(c)) < 0)
		nclient_fail_io(c, "write", -err);
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
	wr_init(&c->auth_w);
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
	nclient_sec_end(c);
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
