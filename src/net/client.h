/*
 * client.h - one outbound connection to another broker, on the event loop.
 *
 * The connect is non-blocking; frames handed in while it is not connected
 * wait in the output buffer (bounded by out_max: past it a frame is
 * refused) and leave once it is.  Responses are read as size-prefixed
 * frames and handed up whole, in the order they arrive (a Kafka broker
 * answers one connection's requests in order).  A lost or refused
 * connection drops what was buffered, reports down, and is tried again
 * after a backoff (100 ms doubling to 5 s, reset by a connection that
 * comes up).  Everything runs in the loop thread.
 *
 * Security (inter-broker listeners of SSL, SASL_PLAINTEXT or SASL_SSL) is
 * injected by the layer that knows it (struct nclient_sec): a transport
 * run over the socket (TLS, net/conn.h's struct conn_xport) and an
 * authentication exchange of Kafka frames (SASL) run once the transport
 * is up; "up" is reported only after both, and every reconnection redoes
 * them.  A failure of either is logged once at warning level with the
 * peer, then again only when the reason changes or the connection has
 * come up in between, not on every retry.
 */
#ifndef GREGOR_NET_CLIENT_H
#define GREGOR_NET_CLIENT_H

#include <stdbool.h>
#include <stdint.h>

#include "net/conn.h"
#include "net/loop.h"
#include "util/buf.h"

struct nclient;

/* The connection came up (up true) or went down (false). */
typedef void nclient_state_fn(void *arg, bool up);
/* One response frame, without its 4-byte size; valid during the call. */
typedef void nclient_frame_fn(void *arg, const uint8_t *frame, int32_t len);

/*
 * An authentication exchange run on each new connection before it is up.
 * start() writes the first request frame (size prefix included) into w
 * and keeps its state in *st; step() takes each response frame (without
 * its size) and returns 1 with the next request in w, 0 when
 * authenticated, or -EACCES (refused) / -EBADMSG with the reason in why.
 * end() frees the state.  w is wr_init()ed by the caller.
 */
struct nclient_auth {
	int (*start)(void *arg, void **st, struct wr *w);
	int (*step)(void *st, const uint8_t *frame, int32_t len, struct wr *w, char *why, size_t whylen);
	void (*end)(void *st);
};

/* What secures the connections: NULL members mean a plain socket, no authentication. */
struct nclient_sec {
	const struct conn_xport *xport; /* its open_client() is used */
	void *xport_arg;
	const struct nclient_auth *auth;
	void *auth_arg;
};

struct nclient_cfg {
	const char *host; /* an address, or a name resolved when connecting */
	int32_t port;
	int64_t out_max;   /* bytes buffered before nclient_send() refuses */
	int32_t frame_max; /* largest response accepted; larger closes */
	nclient_state_fn *on_state;
	nclient_frame_fn *on_frame;
	void *arg;
	const struct nclient_sec *sec; /* NULL: plaintext; must outlive the client */
};

/* Starts connecting.  0 or -ENOMEM / -EINVAL. */
int nclient_new(struct loop *loop, const struct nclient_cfg *cfg, struct nclient **out);
/* Closes the socket and frees c; no callback runs afterwards. */
void nclient_free(struct nclient *c);
/* Queues frame (size prefix included); w's contents are copied.  0, -ENOBUFS (out_max) or -ENOMEM. */
int nclient_send(struct nclient *c, const struct wr *w);
bool nclient_up(const struct nclient *c);
/* Address in use: "host:port". */
const char *nclient_peer(const struct nclient *c);

#endif
