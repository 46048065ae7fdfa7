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
 */
#ifndef GREGOR_NET_CLIENT_H
#define GREGOR_NET_CLIENT_H

#include <stdbool.h>
#include <stdint.h>

#include "net/loop.h"
#include "util/buf.h"

struct nclient;

/* The connection came up (up true) or went down (false). */
typedef void nclient_state_fn(void *arg, bool up);
/* One response frame, without its 4-byte size; valid during the call. */
typedef void nclient_frame_fn(void *arg, const uint8_t *frame, int32_t len);

struct nclient_cfg {
	const char *host; /* an address, or a name resolved when connecting */
	int32_t port;
	int64_t out_max;   /* bytes buffered before nclient_send() refuses */
	int32_t frame_max; /* largest response accepted; larger closes */
	nclient_state_fn *on_state;
	nclient_frame_fn *on_frame;
	void *arg;
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
