/*
 * conn.c - connection framing and the in-order reply queue (see conn.h).
 *
 * Reading: small frames are cut out of a 64 KiB read buffer; a frame that
 * does not fit is given its own buffer of exactly its size and the rest is
 * read straight into it, so large produce requests are copied at most once.
 *
 * queued.max.request.bytes (Kafka's memory pool): a request frame is counted
 * whole from the moment its size is read and its buffer allocated, until its
 * slot is finished (the reply is queued or dropped).  A frame that would take
 * the total past the limit is not started: that connection stops reading and
 * waits in conn_waiting, unless nothing at all is counted (so one frame of
 * any allowed size can always proceed and the limit cannot deadlock).
 * conn_resume() re-arms the waiters once the total is below the limit.  As in
 * Kafka, a client that announces a large frame and stalls holds its
 * reservation until connections.max.idle.ms closes it.
 */
#include "net/conn.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include "net/send.h"
#include "util/clock.h"
#include "util/log.h"

#define CONN_RBUF_BYTES (64 * 1024)
/*
 * Reads per readiness event before the loop turns to other work: the
 * syncer's wake-up that answers parked acks=all requests waits for the
 * pass to end, and a pipelining producer keeps a connection readable.
 * At 16 (about six 1 MB requests) answers waited 6-19 ms for a 1 ms
 * round; at 4, 2-5 ms, throughput unchanged (docs/performance.md).
 */
#define CONN_READS_PER_EVENT 4
#define CONN_IOV_MAX 64
/* A transport's copy of record bytes on their way out: pread into it, then write (TLS records are 16 KiB). */
#define CONN_FBUF_BYTES (64 * 1024)

enum slot_state { SLOT_PENDING, SLOT_READY, SLOT_NONE };

struct conn_slot {
	struct conn_slot *next;
	enum slot_state state;
	struct wr w;
	struct send_pos pos;
	int64_t req_bytes; /* request frame (and parked state) bytes counted in conn_queued_bytes */
};

struct conn {
	struct loop_io io;
	struct loop *loop;
	struct conn_cfg cfg;
	int refs;
	bool closed;
	uint64_t id;
	char peer[64];
	void *user;
	uint8_t *rbuf; /* CONN_RBUF_BYTES */
	size_t rlen;
	uint8_t *frame; /* a large frame being read into its own buffer */
	int32_t frame_len, frame_got;
	struct conn_slot *head, *tail;
	int nslots;
	int64_t out_bytes; /* bytes of READY responses not yet written */
	bool parsing;      /* conn_parse() is on the stack */
	struct conn *reap_next;
	struct conn *live_prev, *live_next; /* open connections */
	struct conn *wait_next;             /* on conn_waiting (holds a reference) */
	bool waiting;
	int32_t want_len;  /* a large frame waiting for queued.max.request.bytes room */
	int64_t active_ms; /* clock_mono_ms() of the last I/O or finished request */
	void *xt;          /* cfg.xport's state (TLS), NULL on a plain socket */
	bool handshaking;  /* xt's handshake not finished: no frames yet */
	bool want_out;     /* xt's last call waits for the socket to be writable */
	bool on_pending;   /* on conn_pending (holds a reference) */
	struct conn *pend_next;
	uint8_t *fbuf;          /* CONN_FBUF_BYTES, for file slices through xt */
	char *principal;        /* xt's peer identity or the authenticated user, NULL if none */
	int auth;               /* CONN_AUTH_* or a mechanism chosen */
	void *auth_data;        /* the exchange in progress (conn_set_auth_data()) */
	int64_t auth_expiry_ms; /* clock_mono_ms() when the SASL session ends, 0: never (KIP-368) */
	struct loop_timer mute; /* armed while muted (client quota throttling); holds a reference */
};

static struct conn *conn_reap_list;
static struct conn *conn_live;
static uint64_t conn_next_id = 1;
static int64_t conn_queued_bytes;    /* request frames being read or processed */
static int64_t conn_queued_max = -1; /* queued.max.request.bytes, -1 = none */
static struct conn *conn_waiting;    /* stopped reading because of the limit */
static struct conn *conn_pending;    /* xt holds bytes read from the socket: epoll will not say so */
static struct conn *conn_pending_tail;

void conn_set_queued_max(int64_t bytes)
{
	conn_queued_max = bytes;
}
int64_t conn_queued(void)
{
	return conn_queued_bytes;
}

static bool conn_global_full(void)
{
	return conn_queued_max > 0 && conn_queued_bytes >= conn_queued_max;
}

/* Whether a frame of len bytes may be reserved now. */
static bool conn_global_fits(int32_t len)
{
	return conn_queued_max <= 0 || conn_queued_bytes == 0 || conn_queued_bytes + len <= conn_queued_max;
}

static void conn_on_io(struct loop_io *io, uint32_t events);
static void conn_send(struct conn *c);
static void conn_update_events(struct conn *c);
static bool conn_paused(const struct conn *c);
static void conn_unmute(struct loop_timer *t);

static void conn_peer_name(struct conn *c)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	char host[INET6_ADDRSTRLEN] = "?";
	int port = 0;

	if (getpeername(c->io.fd, (struct sockaddr *)&ss, &sl) == 0) {
		if (ss.ss_family == AF_INET) {
			struct sockaddr_in *a = (struct sockaddr_in *)&ss;

			inet_ntop(AF_INET, &a->sin_addr, host, sizeof(host));
			port = ntohs(a->sin_port);
		} else if (ss.ss_family == AF_INET6) {
			struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;

			inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof(host));
			port = ntohs(a->sin6_port);
		}
	}
	snprintf(c->peer, sizeof(c->peer), "%s:%d", host, port);
}

int conn_new(struct loop *loop, int fd, const struct conn_cfg *cfg, struct conn **out)
{
	struct conn *c = calloc(1, sizeof(*c));
	int err;

	if (!c) {
		close(fd);
		return -ENOMEM;
	}
	c->rbuf = malloc(CONN_RBUF_BYTES);
	if (!c->rbuf) {
		err = -ENOMEM;
		goto out_free;
	}
	c->io.fd = fd;
	c->io.fn = conn_on_io;
	c->loop = loop;
	c->cfg = *cfg;
	c->auth = cfg->auth_required ? CONN_AUTH_NONE : CONN_AUTH_DONE;
	c->refs = 1;
	c->id = conn_next_id++;
	c->active_ms = clock_mono_ms();
	loop_timer_init(&c->mute, conn_unmute);
	conn_peer_name(c);
	if (cfg->xport) {
		err = cfg->xport->open(cfg->xport_arg, fd, &c->xt);
		if (err)
			goto out_free;
		c->handshaking = true;
	}
	err = loop_add(loop, &c->io, EPOLLIN);
	if (err)
		goto out_free;
	c->live_next = conn_live;
	if (conn_live)
		conn_live->live_prev = c;
	conn_live = c;
	*out = c;
	return 0;
out_free:
	if (c->xt)
		cfg->xport->close(c->xt);
	close(fd);
	free(c->rbuf);
	free(c);
	return err;
}

struct conn *conn_get(struct conn *c)
{
	c->refs++;
	return c;
}

static void conn_free(struct conn *c)
{
	struct conn_slot *s, *next;

	for (s = c->head; s; s = next) {
		next = s->next;
		conn_queued_bytes -= s->req_bytes;
		wr_release(&s->w);
		free(s);
	}
	if (c->frame)
		conn_queued_bytes -= c->frame_len;
	free(c->frame);
	free(c->rbuf);
	free(c->fbuf);
	free(c->principal);
	free(c->auth_data);
	free(c);
}

void conn_put(struct conn *c)
{
	if (--c->refs > 0)
		return;
	/* freed between events: the loop may still hold this io in its batch */
	c->reap_next = conn_reap_list;
	conn_reap_list = c;
}

void conn_close_all(void)
{
	while (conn_live)
		conn_close(conn_live, NULL);
	while (conn_pending) { /* and the pending readers' */
		struct conn *c = conn_pending;

		conn_pending = c->pend_next;
		c->on_pending = false;
		conn_put(c);
	}
	conn_pending_tail = NULL;
	while (conn_waiting) { /* drop the waiters' references */
		struct conn *c = conn_waiting;

		conn_waiting = c->wait_next;
		c->waiting = false;
		conn_put(c);
	}
}

int conn_close_idle(int64_t now_ms)
{
	struct conn *c = conn_live, *next;
	int n = 0;

	for (; c; c = next) {
		next = c->live_next; /* conn_close() unlinks c */
		if (c->cfg.idle_ms_max <= 0 || c->nslots > 0 || now_ms - c->active_ms <= c->cfg.idle_ms_max)
			continue;
		log_debug(LOGC_NET, "net", "%s: idle for %lld ms", c->peer, (long long)(now_ms - c->active_ms));
		conn_close(c, NULL);
		n++;
	}
	return n;
}

/* Reads what transports hold already (epoll does not report it). */
static void conn_read_pending(void)
{
	struct conn *list = conn_pending;

	conn_pending = conn_pending_tail = NULL;
	while (list) {
		struct conn *c = list;

		list = c->pend_next;
		c->on_pending = false;
		if (!c->closed)
			c->io.fn(&c->io, EPOLLIN);
		conn_put(c);
	}
}

void conn_resume(void)
{
	struct conn *list;

	conn_read_pending();
	if (!conn_waiting || conn_global_full())
		return;
	list = conn_waiting;
	conn_waiting = NULL;
	while (list) {
		struct conn *c = list;

		list = c->wait_next;
		c->waiting = false;
		if (!c->closed && !conn_paused(c))
			conn_send(c); /* parses what is buffered, re-arms EPOLLIN */
		else if (!c->closed)
			conn_update_events(c); /* back on the list */
		conn_put(c);
	}
}

void conn_reap(void)
{
	while (conn_reap_list) {
		struct conn *c = conn_reap_list;

		conn_reap_list = c->reap_next;
		conn_free(c);
	}
}

bool conn_is_closed(const struct conn *c)
{
	return c->closed;
}
const char *conn_peer(const struct conn *c)
{
	return c->peer;
}
void *conn_user(const struct conn *c)
{
	return c->user;
}
void conn_set_user(struct conn *c, void *user)
{
	c->user = user;
}
uint64_t conn_id(const struct conn *c)
{
	return c->id;
}
int conn_listener(const struct conn *c)
{
	return c->cfg.listener;
}
const char *conn_principal(const struct conn *c)
{
	return c->principal;
}
void conn_set_principal(struct conn *c, char *principal)
{
	free(c->principal);
	c->principal = principal;
}
int conn_auth(const struct conn *c)
{
	return c->auth;
}
void conn_set_auth(struct conn *c, int state)
{
	c->auth = state;
}
int64_t conn_auth_expiry_ms(const struct conn *c)
{
	return c->auth_expiry_ms;
}
void conn_set_auth_expiry_ms(struct conn *c, int64_t at_ms)
{
	c->auth_expiry_ms = at_ms;
}
void *conn_auth_data(const struct conn *c)
{
	return c->auth_data;
}
void conn_set_auth_data(struct conn *c, void *data)
{
	free(c->auth_data);
	c->auth_data = data;
}

void conn_close(struct conn *c, const char *why)
{
	if (c->closed)
		return;
	if (why)
		log_info("%s: closing connection: %s", c->peer, why);
	c->closed = true;
	if (c->live_prev)
		c->live_prev->live_next = c->live_next;
	else
		conn_live = c->live_next;
	if (c->live_next)
		c->live_next->live_prev = c->live_prev;
	loop_del(c->loop, &c->io);
	if (c->xt)
		c->cfg.xport->close(c->xt);
	c->xt = NULL;
	if (loop_timer_armed(&c->mute)) {
		loop_timer_cancel(c->loop, &c->mute);
		conn_put(c);
	}
	close(c->io.fd);
	c->io.fd = -1;
	if (c->cfg.on_closed)
		c->cfg.on_closed(c);
	conn_put(c);
}

/* ---- reply queue ---- */

static struct conn_slot *conn_slot_push(struct conn *c)
{
	struct conn_slot *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	if (c->tail)
		c->tail->next = s;
	else
		c->head = s;
	c->tail = s;
	c->nslots++;
	return s;
}

static void conn_slot_pop(struct conn *c)
{
	struct conn_slot *s = c->head;

	c->head = s->next;
	if (!c->head)
		c->tail = NULL;
	c->nslots--;
	wr_release(&s->w);
	free(s);
}

/* Paused by this connection's own queue: its replies will unpause it. */
static bool conn_paused_self(const struct conn *c)
{
	return c->nslots >= c->cfg.slots_max || c->out_bytes > c->cfg.out_bytes_max || loop_timer_armed(&c->mute);
}

/*
 * Paused: own queue, or the global limit.  Under the global limit a
 * connection still finishes a frame already counted, and one with nothing
 * in flight may read a small request that fits its read buffer (memory it
 * already has), so an ordinary client is answered while floods wait.
 */
static bool conn_paused(const struct conn *c)
{
	if (conn_paused_self(c))
		return true;
	if (c->want_len && !c->frame)
		return !conn_global_fits(c->want_len);
	if (!conn_global_full() || c->frame)
		return false;
	return c->nslots > 0 || c->rlen >= CONN_RBUF_BYTES;
}

static size_t iov_total(const struct iovec *iov, int n)
{
	size_t t = 0;

	for (int i = 0; i < n; i++)
		t += iov[i].iov_len;
	return t;
}

/* Writes iov through the transport until it takes less; bytes written or -errno (-EAGAIN: none). */
static ssize_t conn_xport_writev(struct conn *c, const struct iovec *iov, int n)
{
	ssize_t done = 0;

	for (int i = 0; i < n; i++) {
		ssize_t w = c->cfg.xport->write(c->xt, iov[i].iov_base, iov[i].iov_len, &c->want_out);

		if (w < 0)
			return done ? done : w;
		done += w;
		if ((size_t)w < iov[i].iov_len)
			break;
	}
	return done;
}

/* A file slice through the transport: pread into fbuf, write what it takes. */
static ssize_t conn_xport_file(struct conn *c, struct conn_slot *s)
{
	ssize_t n, w;

	if (!c->fbuf && !(c->fbuf = malloc(CONN_FBUF_BYTES)))
		return -ENOMEM;
	n = send_file_copy(&s->w, &s->pos, c->fbuf, CONN_FBUF_BYTES);
	if (n <= 0)
		return n ? n : -EIO;
	w = c->cfg.xport->write(c->xt, c->fbuf, (size_t)n, &c->want_out);
	if (w > 0)
		send_file_advance(&s->w, &s->pos, (size_t)w);
	return w;
}

/* Gathers the memory runs of READY responses from the head into one writev. */
static int conn_write_mem(struct conn *c)
{
	struct iovec iov[CONN_IOV_MAX];
	int n = 0;
	ssize_t done;
	size_t left;

	for (struct conn_slot *s = c->head; s && s->state != SLOT_PENDING && n < CONN_IOV_MAX; s = s->next) {
		struct send_pos p = s->pos;

		if (s->state == SLOT_NONE)
			continue;
		if (!send_iov_fill(&s->w, &s->pos, iov + n, 1))
			break; /* at a file slice */
		send_advance(&s->w, &p, iov[n].iov_len);
		n++;
		if (!send_done(&s->w, &p))
			break; /* a file slice follows: send it before later responses */
	}
	if (!n)
		return 0;
	done = c->xt ? conn_xport_writev(c, iov, n) : writev(c->io.fd, iov, n);
	if (done < 0 && c->xt)
		return (int)done;
	if (done < 0)
		return errno == EAGAIN || errno == EINTR ? -EAGAIN : -errno;
	left = (size_t)done;
	for (struct conn_slot *s = c->head; s && left; s = s->next)
		if (s->state == SLOT_READY)
			left = send_advance(&s->w, &s->pos, left);
	c->out_bytes -= done;
	return (size_t)done < iov_total(iov, n) ? -EAGAIN : 0;
}

/* Writes what the socket takes; returns 0, -EAGAIN (socket full) or -errno. */
static int conn_flush(struct conn *c)
{
	while (c->head && c->head->state != SLOT_PENDING) {
		struct conn_slot *s = c->head;
		int err;

		if (s->state == SLOT_NONE || send_done(&s->w, &s->pos)) {
			conn_slot_pop(c);
			continue;
		}
		if (send_at_file(&s->w, &s->pos)) {
			ssize_t n = c->xt ? conn_xport_file(c, s) : send_file(c->io.fd, &s->w, &s->pos);

			if (n < 0)
				return n == -EINTR ? 0 : n;
			c->out_bytes -= n;
			continue;
		}
		err = conn_write_mem(c);
		if (err)
			return err;
	}
	return 0;
}

static void conn_pending_push(struct conn *c)
{
	if (conn_pending_tail)
		conn_pending_tail->pend_next = c;
	else
		conn_pending = c;
	conn_pending_tail = c;
}

static void conn_update_events(struct conn *c)
{
	uint32_t ev = 0;

	if (c->closed)
		return;
	if (!conn_paused(c))
		ev |= EPOLLIN;
	else if (!conn_paused_self(c) && !c->waiting) {
		c->waiting = true;
		c->wait_next = conn_waiting;
		conn_waiting = conn_get(c);
	}
	if ((c->head && c->head->state == SLOT_READY) || c->want_out)
		ev |= EPOLLOUT;
	if (c->handshaking)
		ev = c->want_out ? EPOLLOUT : EPOLLIN;
	else if ((ev & EPOLLIN) && c->xt && !c->on_pending && c->cfg.xport->pending(c->xt)) {
		c->on_pending = true; /* read by conn_resume() */
		c->pend_next = NULL;
		conn_pending_push(conn_get(c));
		loop_wake(c->loop);
	}
	if (loop_mod(c->loop, &c->io, ev) < 0)
		conn_close(c, "epoll_ctl failed");
}

static void conn_parse(struct conn *c);

void conn_mute(struct conn *c, int64_t ms)
{
	int64_t due = clock_mono_ms() + ms;

	if (c->closed || ms <= 0 || (loop_timer_armed(&c->mute) && c->mute.due_ms >= due))
		return;
	if (!loop_timer_armed(&c->mute))
		conn_get(c);
	loop_timer_set(c->loop, &c->mute, due);
	conn_update_events(c);
}

static void conn_unmute(struct loop_timer *t)
{
	struct conn *c = (struct conn *)((char *)t - offsetof(struct conn, mute));

	if (!c->closed) {
		if (!c->parsing && !c->frame && c->rlen >= 4 && !conn_paused_self(c))
			conn_parse(c);
		conn_update_events(c);
	}
	conn_put(c);
}

static void conn_send(struct conn *c)
{
	int err = conn_flush(c);

	if (err && err != -EAGAIN) {
		conn_close(c, err == -EPIPE || err == -ECONNRESET ? NULL : "write failed");
		return;
	}
	/* frames already buffered while paused get no new EPOLLIN */
	if (!c->parsing && !c->frame && c->rlen >= 4 && !conn_paused_self(c))
		conn_parse(c);
	conn_update_events(c);
}

void conn_slot_charge(struct conn_slot *slot, int64_t bytes)
{
	slot->req_bytes += bytes;
	conn_queued_bytes += bytes;
}

void conn_slot_done(struct conn *c, struct conn_slot *slot, struct wr *w)
{
	conn_queued_bytes -= slot->req_bytes;
	slot->req_bytes = 0;
	c->active_ms = clock_mono_ms();
	if (w) {
		slot->w = *w;
		wr_reset(w);
		slot->state = SLOT_READY;
		c->out_bytes += wr_total(&slot->w);
	} else {
		slot->state = SLOT_NONE;
	}
	if (!c->closed && slot == c->head)
		conn_send(c);
}

/* ---- reading ---- */

static void conn_dispatch(struct conn *c, uint8_t *frame, int32_t len)
{
	struct conn_slot *slot = conn_slot_push(c);

	if (!slot) {
		free(frame);
		conn_queued_bytes -= len;
		conn_close(c, "out of memory");
		return;
	}
	slot->req_bytes = len;
	conn_get(c);
	c->cfg.on_request(c, slot, frame, len);
	conn_put(c);
}

/* Cuts complete frames out of rbuf; may start a large-frame read. */
static void conn_parse(struct conn *c)
{
	size_t at = 0;

	if (c->parsing)
		return;
	c->parsing = true;
	while (!c->closed && !conn_paused(c) && c->rlen - at >= 4) {
		const uint8_t *p = c->rbuf + at;
		int32_t len = (int32_t)((uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]);
		uint8_t *frame;

		if (len < 8 || len > c->cfg.frame_bytes_max) {
			log_warn("%s: frame size %d outside 8..%d", c->peer, len, c->cfg.frame_bytes_max);
			conn_close(c, "bad frame size");
			break;
		}
		if (c->rlen - at - 4 < (size_t)len && !conn_global_fits(len)) {
			c->want_len = len; /* queued.max.request.bytes: wait before reserving it */
			break;
		}
		c->want_len = 0;
		frame = malloc((size_t)len);
		if (!frame) {
			conn_close(c, "out of memory for request frame");
			break;
		}
		if (c->rlen - at - 4 < (size_t)len) {
			/* incomplete: keep it whole in its own buffer */
			c->frame = frame;
			c->frame_len = len;
			c->frame_got = (int32_t)(c->rlen - at - 4);
			memcpy(frame, p + 4, (size_t)c->frame_got);
			conn_queued_bytes += len; /* reserved whole */
			at = c->rlen;
			break;
		}
		memcpy(frame, p + 4, (size_t)len);
		conn_queued_bytes += len;
		at += 4 + (size_t)len;
		conn_dispatch(c, frame, len);
	}
	if (at && !c->closed) {
		memmove(c->rbuf, c->rbuf + at, c->rlen - at);
		c->rlen -= at;
	}
	c->parsing = false;
}

/* Returns bytes read, 0 at EOF, or -errno. */
static ssize_t conn_read_some(struct conn *c)
{
	ssize_t n;

	uint8_t *at = c->frame ? c->frame + c->frame_got : c->rbuf + c->rlen;
	size_t len = c->frame ? (size_t)(c->frame_len - c->frame_got) : CONN_RBUF_BYTES - c->rlen;

	if (c->xt)
		n = c->cfg.xport->read(c->xt, at, len, &c->want_out);
	else
		n = read(c->io.fd, at, len);
	if (n < 0)
		return c->xt ? n : -errno;
	if (n > 0 && c->frame) {
		c->frame_got += (int32_t)n;
		if (c->frame_got == c->frame_len) {
			uint8_t *frame = c->frame;

			c->frame = NULL;
			conn_dispatch(c, frame, c->frame_len);
		}
	} else if (n > 0) {
		c->rlen += (size_t)n;
	}
	return n;
}

static void conn_read(struct conn *c)
{
	for (int i = 0; i < CONN_READS_PER_EVENT && !c->closed && !conn_paused(c); i++) {
		ssize_t n = conn_read_some(c);

		if (n == -EAGAIN || n == -EINTR)
			break;
		if (n <= 0) {
			bool mid = c->frame || c->rlen;

			conn_close(c, n == 0             ? (mid ? "peer closed mid-frame" : NULL)
				      : n == -ECONNRESET ? NULL
							 : "read failed");
			return;
		}
		conn_parse(c);
	}
}

/* Drives the transport's handshake; true once it is done and frames may flow. */
static bool conn_handshake(struct conn *c)
{
	int err = c->cfg.xport->handshake(c->xt, &c->want_out);

	if (err == -EAGAIN) {
		conn_update_events(c);
		return false;
	}
	if (err) {
		log_debug(LOGC_NET, "net", "%s: TLS handshake failed: %s", c->peer, strerror(-err));
		conn_close(c, NULL);
		return false;
	}
	c->handshaking = false;
	c->principal = c->cfg.xport->principal(c->xt);
	log_debug(LOGC_NET, "net", "%s: TLS handshake done, principal %s", c->peer,
		  c->principal ? c->principal : "ANONYMOUS");
	return true;
}

static void conn_on_io(struct loop_io *io, uint32_t events)
{
	struct conn *c = (struct conn *)io;

	if (c->closed)
		return;
	c->active_ms = clock_mono_ms();
	conn_get(c);
	if (events & (EPOLLERR | EPOLLHUP) && !(events & EPOLLIN))
		conn_close(c, NULL);
	if (!c->closed && c->handshaking && !conn_handshake(c)) {
		conn_put(c);
		return;
	}
	if (c->want_out && (events & EPOLLOUT))
		events |= EPOLLIN; /* a read that waited for writability */
	if (!c->closed && (events & EPOLLIN))
		conn_read(c);
	if (!c->closed)
		conn_send(c);
	conn_put(c);
}
