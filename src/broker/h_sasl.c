/*
 * h_sasl.c - SaslHandshake and SaslAuthenticate on SASL_PLAINTEXT and
 * SASL_SSL listeners: the client names a mechanism, then sends its
 * token; a good one makes the connection's principal User:<name> and
 * lets every other request through (api.c refuses them before).
 * Mechanism: PLAIN against the listener's JAAS users.  After a v0
 * SaslHandshake (kafka-python 2.0) the next frame is the bare token,
 * answered by an empty frame on success and a closed connection on
 * failure, as Kafka does.  A failed SaslAuthenticate is answered after
 * connection.failed.authentication.delay.ms times the recent failures
 * from that address.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/api.h"
#include "broker/broker.h"
#include "broker/handlers.h"
#include "proto/kerr.h"
#include "sec/sasl_plain.h"
#include "util/clock.h"
#include "util/log.h"

#define SASL_MECH_PLAIN 1     /* conn_auth() after a SaslHandshake v1 for PLAIN: SaslAuthenticate next */
#define SASL_MECH_PLAIN_RAW 2 /* after a SaslHandshake v0: the next frame is the bare token */

static const struct listener *h_sasl_listener(const struct req *rq)
{
	int i = conn_listener(rq->c);

	return i >= 0 && i < rq->b->nlisteners && rq->b->listeners[i].sasl ? &rq->b->listeners[i] : NULL;
}

int h_sasl_handshake(struct req *rq, const void *in, void *out)
{
	const struct SaslHandshakeRequest *h = in;
	struct SaslHandshakeResponse *resp = out;

	resp->Mechanisms.n = 1;
	resp->Mechanisms.v = req_alloc(rq, 1, sizeof(*resp->Mechanisms.v));
	resp->Mechanisms.v[0] = (struct kstr){ "PLAIN", 5 };
	if (!h_sasl_listener(rq) || conn_auth(rq->c) != CONN_AUTH_NONE)
		resp->ErrorCode = KERR_ILLEGAL_SASL_STATE;
	else if (h->Mechanism.len != 5 || memcmp(h->Mechanism.p, "PLAIN", 5))
		resp->ErrorCode = KERR_UNSUPPORTED_SASL_MECHANISM;
	else
		conn_set_auth(rq->c, rq->hdr.api_version == 0 ? SASL_MECH_PLAIN_RAW : SASL_MECH_PLAIN);
	return H_REPLY;
}

/* Checks a PLAIN token; on success the connection is authenticated as User:<name>. */
static int sasl_plain_login(const struct listener *l, struct conn *c, const uint8_t *tok, int32_t len)
{
	char user[256];
	char *principal;

	if (len < 0 || sasl_plain_verify(l->plain_jaas, tok, (size_t)len, user, sizeof(user))) {
		log_warn("%s: SASL/PLAIN authentication failed for user '%s'", conn_peer(c), user);
		conn_set_auth(c, CONN_AUTH_NONE);
		return -EACCES;
	}
	if (asprintf(&principal, "User:%s", user) < 0)
		return -ENOMEM;
	conn_set_principal(c, principal);
	conn_set_auth(c, CONN_AUTH_DONE);
	log_info("%s: authenticated as %s (SASL/PLAIN)", conn_peer(c), principal);
	return 0;
}

/* Recent authentication failures by client address (without the port), for the delay. */
#define SASL_FAILS_SLOTS 64
#define SASL_FAILS_WINDOW_MS 60000
#define SASL_FAILS_MAX 10
static struct sasl_fails {
	char addr[64];
	int n;
	int64_t last_ms;
} sasl_fails[SASL_FAILS_SLOTS];

/* Counts one more failure from c's address; returns how many in the window (1..SASL_FAILS_MAX). */
static int sasl_fail_count(const struct conn *c, int64_t now_ms)
{
	const char *peer = conn_peer(c), *colon = strrchr(peer, ':');
	size_t len = colon ? (size_t)(colon - peer) : strlen(peer);
	struct sasl_fails *f = &sasl_fails[0];

	if (len >= sizeof(f->addr))
		len = sizeof(f->addr) - 1;
	for (int i = 0; i < SASL_FAILS_SLOTS; i++) {
		struct sasl_fails *e = &sasl_fails[i];

		if (!strncmp(e->addr, peer, len) && e->addr[len] == 0) {
			f = e;
			break;
		}
		if (e->last_ms < f->last_ms)
			f = e; /* the oldest, reused if the address is not there */
	}
	if (strncmp(f->addr, peer, len) || f->addr[len] || now_ms - f->last_ms > SASL_FAILS_WINDOW_MS) {
		memcpy(f->addr, peer, len);
		f->addr[len] = 0;
		f->n = 0;
	}
	if (f->n < SASL_FAILS_MAX)
		f->n++;
	f->last_ms = now_ms;
	return f->n;
}

int h_sasl_authenticate(struct req *rq, const void *in, void *out)
{
	const struct SaslAuthenticateRequest *a = in;
	struct SaslAuthenticateResponse *resp = out;
	const struct listener *l = h_sasl_listener(rq);

	if (!l || conn_auth(rq->c) != SASL_MECH_PLAIN) {
		resp->ErrorCode = KERR_ILLEGAL_SASL_STATE;
		resp->ErrorMessage = req_printf(rq, "Unexpected SaslAuthenticate: no SaslHandshake before it");
		return H_REPLY;
	}
	if (sasl_plain_login(l, rq->c, a->AuthBytes.p, a->AuthBytes.len)) {
		resp->ErrorCode = KERR_SASL_AUTHENTICATION_FAILED;
		resp->ErrorMessage = req_printf(rq, "Authentication failed: Invalid username or password");
		req_reply_after(rq, rq->b->cfg.connection_failed_authentication_delay_ms *
					    sasl_fail_count(rq->c, clock_mono_ms()));
		return H_PARKED;
	}
	return H_REPLY;
}

bool sasl_raw_token(struct broker *b, struct conn *c, struct conn_slot *slot, uint8_t *frame, int32_t len)
{
	int i = conn_listener(c);
	struct wr w;

	if (conn_auth(c) != SASL_MECH_PLAIN_RAW)
		return false;
	if (i < 0 || i >= b->nlisteners || sasl_plain_login(&b->listeners[i], c, frame, len)) {
		free(frame);
		conn_slot_done(c, slot, NULL);
		conn_close(c, "SASL authentication failed");
		return true;
	}
	free(frame);
	wr_init(&w);
	wr_i32(&w, 0);
	conn_slot_done(c, slot, &w);
	wr_release(&w);
	return true;
}
