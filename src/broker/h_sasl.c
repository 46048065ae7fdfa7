/*
 * h_sasl.c - SaslHandshake and SaslAuthenticate on SASL_PLAINTEXT and
 * SASL_SSL listeners: the client names a mechanism, then sends its
 * token; a good one makes the connection's principal User:<name> and
 * lets every other request through (api.c refuses them before).
 * Mechanism: PLAIN against the listener's JAAS users.  After a v0
 * SaslHandshake (kafka-python 2.0) the next frame is the bare token,
 * answered by an empty frame on success and a closed connection on
 * failure, as Kafka does.
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
