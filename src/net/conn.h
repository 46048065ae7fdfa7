/*
 * conn.h - one client connection: frame reading, and the in-order queue
 * of responses.
 *
 * Every request frame gets a slot in the connection's reply queue when it
 * is read; responses leave strictly in slot order, whatever order handlers
 * finish in (a parked acks=all produce or long-poll fetch holds back the
 * replies behind it, as Kafka does).  A slot may also be finished with no
 * reply at all (acks=0 produce).
 *
 * Back-pressure: past slots_max unanswered requests (queued.max.requests),
 * or past out_bytes_max bytes of responses not yet written, the connection
 * stops reading from its socket until the queue drains.
 *
 * Lifetime: a conn is reference counted.  Parked requests hold a
 * reference, so a conn closed under them stays valid (but closed) until
 * they finish; their replies are then dropped.
 */
#ifndef GREGOR_NET_CONN_H
#define GREGOR_NET_CONN_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "net/loop.h"
#include "util/buf.h"

struct conn;
struct conn_slot;

/*
 * Called for each complete request frame (without the 4-byte size).
 * Takes ownership of frame (free() it).  slot is this request's place in
 * the reply queue: finish it with conn_slot_done() now or later.
 */
typedef void conn_request_fn(struct conn *c, struct conn_slot *slot, uint8_t *frame, int32_t len);
typedef void conn_closed_fn(struct conn *c);

/*
 * A transport between the socket and the frames (TLS): the connection
 * calls it instead of read/writev/sendfile when conn_cfg.xport is set.
 * Each call returns bytes (read: 0 at EOF), -EAGAIN (then *want_out says
 * whether it waits for the socket to become writable rather than
 * readable) or another -errno.
 */
struct conn_xport {
	int (*open)(void *arg, int fd, void **t);  /* 0 or -errno; does not take fd */
	int (*handshake)(void *t, bool *want_out); /* 0 once done */
	ssize_t (*read)(void *t, void *buf, size_t len, bool *want_out);
	ssize_t (*write)(void *t, const void *buf, size_t len, bool *want_out);
	bool (*pending)(void *t);    /* bytes already taken from the socket, not yet read */
	char *(*principal)(void *t); /* the peer's identity after the handshake, malloc()ed, or NULL */
	void (*close)(void *t);
	/* The client side (net/client.c): as open, checking the peer against host (an address or a name). */
	int (*open_client)(void *arg, int fd, const char *host, void **t);
	/* Why the last handshake, read or write of t failed, for the log. */
	void (*error)(void *t, char *buf, size_t len);
};

struct conn_cfg {
	int32_t frame_bytes_max; /* socket.request.max.bytes */
	int64_t out_bytes_max;   /* responses queued before reading pauses */
	int32_t slots_max;       /* queued.max.requests: requests read, not yet answered (>= 1) */
	int64_t idle_ms_max;     /* connections.max.idle.ms: conn_close_idle(); <= 0 never */
	conn_request_fn *on_request;
	conn_closed_fn *on_closed;      /* may be NULL */
	const struct conn_xport *xport; /* NULL: plain socket, zero-copy writes */
	void *xport_arg;                /* given to xport->open */
	int listener;                   /* which listener accepted it (conn_listener()) */
	bool auth_required;             /* SASL listener: conn_auth() starts at CONN_AUTH_NONE */
};

/* Authentication state of a connection (conn_auth()); > 0: a mechanism chosen by the broker's numbering. */
#define CONN_AUTH_DONE (-1) /* authenticated, or a listener without authentication */
#define CONN_AUTH_NONE 0    /* nothing yet: only pre-authentication requests are served */

/* Takes ownership of fd (a connected, non-blocking socket). */
int conn_new(struct loop *loop, int fd, const struct conn_cfg *cfg, struct conn **out);
struct conn *conn_get(struct conn *c);
void conn_put(struct conn *c);
/* Closes the socket now (idempotent); logs why at info level when why != NULL. */
void conn_close(struct conn *c, const char *why);
bool conn_is_closed(const struct conn *c);
const char *conn_peer(const struct conn *c);
void *conn_user(const struct conn *c);
void conn_set_user(struct conn *c, void *user);
uint64_t conn_id(const struct conn *c);
int conn_listener(const struct conn *c);
/* The transport's principal (a client certificate's subject DN), or NULL. */
const char *conn_principal(const struct conn *c);
/* Replaces the principal (e.g. User:alice after SASL); takes ownership of principal. */
void conn_set_principal(struct conn *c, char *principal);
int conn_auth(const struct conn *c);
void conn_set_auth(struct conn *c, int state);
/* When the authenticated session ends (clock_mono_ms()), 0 never: after it, only re-authentication is served. */
int64_t conn_auth_expiry_ms(const struct conn *c);
void conn_set_auth_expiry_ms(struct conn *c, int64_t at_ms);
/* State of an authentication exchange in progress, malloc()ed; freed (free()) with c or when replaced. */
void *conn_auth_data(const struct conn *c);
void conn_set_auth_data(struct conn *c, void *data);

/*
 * Finishes a slot.  w holds the whole response frame (size prefix
 * included); its contents are taken over and w is left empty.  w == NULL
 * means no reply.
 */
void conn_slot_done(struct conn *c, struct conn_slot *slot, struct wr *w);

/*
 * Counts bytes more (or fewer, if negative) of memory held for slot's
 * request in queued.max.request.bytes, on top of its frame, until the slot
 * is finished: a parked request's state and response.
 */
void conn_slot_charge(struct conn_slot *slot, int64_t bytes);

/*
 * Stops reading from c for ms milliseconds (client quota throttling, as
 * Kafka mutes a throttled channel); replies already queued still go out.
 * A later call extends the mute, never shortens it.
 */
void conn_mute(struct conn *c, int64_t ms);

/* Closes every open connection (shutdown). */
void conn_close_all(void);
/*
 * Closes connections idle for longer than their cfg.idle_ms_max at now_ms
 * (clock_mono_ms()): no bytes read or written and no request in flight
 * (a parked request, or replies not yet written, keep a connection open;
 * its idle time starts when the last of them is finished).  Call
 * periodically.  Returns the number closed.
 */
int conn_close_idle(int64_t now_ms);
/* Frees connections closed since the last call; call between events. */
void conn_reap(void);

/*
 * queued.max.request.bytes: total bytes of request frames being read or
 * processed (allocated, slot not yet finished) past which no connection
 * starts reading a new frame.  bytes <= 0: no limit.  conn_resume() (call
 * between events, like conn_reap) lets waiting connections read again once
 * the total is below the limit.  conn_queued() is the current total.
 */
void conn_set_queued_max(int64_t bytes);
int64_t conn_queued(void);
void conn_resume(void);

#endif
