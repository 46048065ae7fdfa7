/*
 * h_sasl.c - SaslHandshake and SaslAuthenticate on SASL_PLAINTEXT and
 * SASL_SSL listeners: the client names a mechanism, then exchanges
 * tokens; success makes the connection's principal User:<name> and lets
 * every other request through (api.c refuses them before).
 *
 * Mechanisms: PLAIN against the listener's JAAS users; SCRAM-SHA-256 and
 * SCRAM-SHA-512 against the credentials of AlterUserScramCredentials
 * (h_scram.c), then sasl.scram.users, derived once at start-up into
 * Kafka's salted credentials.  After a v0 SaslHandshake (kafka-python
 * 2.0) the tokens come bare in size-prefixed frames, answered the same
 * way, and a failure closes the connection, as Kafka does.  A failed
 * SaslAuthenticate is answered, and a failed bare token's connection
 * closed, after connection.failed.authentication.delay.ms times the recent
 * failures from that address.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/api.h"
#include "broker/broker.h"
#include "broker/handlers.h"
#include "net/loop.h"
#include "proto/kerr.h"
#include "sec/sasl_plain.h"
#include "sec/scram.h"
#include "sec/scram_store.h"
#include "util/clock.h"
#include "util/log.h"

/* conn_auth() once a mechanism is chosen; SASL_AUTH_RAW: after a v0 handshake. */
#define SASL_AUTH_PLAIN 1
#define SASL_AUTH_SCRAM 2 /* conn_auth_data(): the struct scram_session */
#define SASL_AUTH_RAW 0x10
#define SASL_AUTH_REAUTH 0x20 /* re-authentication of an authenticated connection (KIP-368) */
#define SASL_AUTH_MECH(a) ((a)&0x0f)

struct sasl_scram_user {
	char *name;
	struct scram_cred cred[3]; /* by enum scram_mech */
};

static const struct listener *sasl_listener(const struct broker *b, const struct conn *c)
{
	int i = conn_listener(c);

	return i >= 0 && i < b->nlisteners && b->listeners[i].sasl ? &b->listeners[i] : NULL;
}

static void sasl_scram_add(struct broker *b, const char *item, size_t n, int *err)
{
	const char *colon = memchr(item, ':', n);
	struct sasl_scram_user *u;
	char *pw;

	if (!colon || colon == item || colon == item + n - 1) {
		log_error("sasl.scram.users: '%.*s' is not name:password", (int)n, item);
		*err = -EINVAL;
		return;
	}
	u = &b->scram_users[b->nscram_users];
	u->name = strndup(item, (size_t)(colon - item));
	pw = strndup(colon + 1, n - (size_t)(colon + 1 - item));
	if (!u->name || !pw || scram_cred_make(SCRAM_SHA_256, pw, SCRAM_ITERATIONS_MIN, &u->cred[SCRAM_SHA_256]) ||
	    scram_cred_make(SCRAM_SHA_512, pw, SCRAM_ITERATIONS_MIN, &u->cred[SCRAM_SHA_512])) {
		log_error("sasl.scram.users: cannot derive the credentials of '%.*s'", (int)n, item);
		*err = -EINVAL;
	}
	b->nscram_users++;
	free(pw);
}

int sasl_scram_load(struct broker *b)
{
	const char *users = b->cfg.sasl_scram_users ? b->cfg.sasl_scram_users : "";
	int err = 0;

	if (b->scram_users)
		return 0;
	b->scram_users = calloc(strlen(users) / 2 + 1, sizeof(*b->scram_users));
	if (!b->scram_users)
		return -ENOMEM;
	for (const char *p = users; *p && !err; p += *p == ',') {
		size_t n;

		p += strspn(p, " ");
		n = strcspn(p, ",");
		while (n && p[n - 1] == ' ')
			n--;
		if (n)
			sasl_scram_add(b, p, n, &err);
		p += strcspn(p, ",");
	}
	return err;
}

void sasl_scram_free(struct broker *b)
{
	for (int i = 0; i < b->nscram_users; i++)
		free(b->scram_users[i].name);
	free(b->scram_users);
	b->scram_users = NULL;
	b->nscram_users = 0;
}

static int sasl_scram_lookup(void *arg, enum scram_mech m, const char *user, struct scram_cred *out)
{
	const struct broker *b = arg;

	if (!scram_store_get(b->scram_store, m, user, out))
		return 0; /* AlterUserScramCredentials' first, as Kafka keeps only those */
	for (int i = 0; i < b->nscram_users; i++)
		if (!strcmp(b->scram_users[i].name, user)) {
			*out = b->scram_users[i].cred[m];
			return 0;
		}
	return -ENOENT;
}

/* Chooses the mechanism named in a SaslHandshake (flags: SASL_AUTH_RAW, SASL_AUTH_REAUTH): a KERR_* code. */
static int sasl_choose(const struct listener *l, struct conn *c, struct kstr name, int flags)
{
	enum scram_mech m = name.p ? scram_mech_of(name.p, (size_t)name.len) : 0;
	struct scram_session *s;

	if (name.len == 5 && !memcmp(name.p, "PLAIN", 5) && (l->sasl_mechs & SASL_MECHS_PLAIN)) {
		conn_set_auth(c, SASL_AUTH_PLAIN | flags);
		return KERR_NONE;
	}
	if (!m || !(l->sasl_mechs & (1 << m)))
		return KERR_UNSUPPORTED_SASL_MECHANISM;
	s = calloc(1, sizeof(*s));
	if (!s)
		return KERR_UNKNOWN_SERVER_ERROR;
	s->mech = m;
	conn_set_auth_data(c, s);
	conn_set_auth(c, SASL_AUTH_SCRAM | flags);
	return KERR_NONE;
}

int h_sasl_handshake(struct req *rq, const void *in, void *out)
{
	const struct SaslHandshakeRequest *h = in;
	struct SaslHandshakeResponse *resp = out;
	const struct listener *l = sasl_listener(rq->b, rq->c);
	static const char *const names[] = { "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512" };

	resp->Mechanisms.v = req_alloc(rq, 3, sizeof(*resp->Mechanisms.v));
	for (int i = 0; i < 3 && l; i++)
		if (l->sasl_mechs & (1 << i))
			resp->Mechanisms.v[resp->Mechanisms.n++] = (struct kstr){ names[i], (int32_t)strlen(names[i]) };
	/* re-authentication: a v1 handshake on a connection that authenticated (KIP-368) */
	if (l && conn_auth(rq->c) == CONN_AUTH_DONE && rq->hdr.api_version >= 1)
		resp->ErrorCode = (int16_t)sasl_choose(l, rq->c, h->Mechanism, SASL_AUTH_REAUTH);
	else if (!l || conn_auth(rq->c) != CONN_AUTH_NONE)
		resp->ErrorCode = KERR_ILLEGAL_SASL_STATE;
	else
		resp->ErrorCode =
			(int16_t)sasl_choose(l, rq->c, h->Mechanism, rq->hdr.api_version == 0 ? SASL_AUTH_RAW : 0);
	return H_REPLY;
}

/*
 * Authenticated as user with mechanism mi (0 PLAIN, enum scram_mech): the
 * principal becomes User:<name>, and the session lasts the listener's
 * connections.max.reauth.ms for mi.  A re-authentication must keep the
 * principal (-EACCES otherwise, as Kafka refuses to change it).
 */
static int sasl_done(const struct listener *l, struct conn *c, const char *user, int mi)
{
	const char *mech = mi ? scram_mech_name(mi) : "PLAIN";
	bool reauth = conn_auth(c) & SASL_AUTH_REAUTH;
	char *principal;

	if (asprintf(&principal, "User:%s", user) < 0)
		return -ENOMEM;
	if (reauth && (!conn_principal(c) || strcmp(conn_principal(c), principal))) {
		log_warn("%s: SASL/%s re-authentication as %s refused: the connection is %s", conn_peer(c), mech,
			 principal, conn_principal(c) ? conn_principal(c) : "ANONYMOUS");
		free(principal);
		return -EACCES;
	}
	conn_set_principal(c, principal);
	conn_set_auth(c, CONN_AUTH_DONE);
	conn_set_auth_data(c, NULL);
	conn_set_auth_expiry_ms(c, l->reauth_ms[mi] > 0 ? clock_mono_ms() + l->reauth_ms[mi] : 0);
	if (reauth)
		log_debug(LOGC_NET, "net", "%s: re-authenticated as %s (SASL/%s)", conn_peer(c), principal, mech);
	else
		log_info("%s: authenticated as %s (SASL/%s)", conn_peer(c), principal, mech);
	return 1;
}

/* A failed exchange: the connection is back to before any handshake.  -EACCES. */
static int sasl_fail(struct conn *c)
{
	conn_set_auth(c, CONN_AUTH_NONE);
	conn_set_auth_data(c, NULL);
	return -EACCES;
}

/*
 * Runs one client token through the chosen mechanism.  Returns 1 when
 * authenticated, 0 to wait for the next token, -EACCES on failure (logged;
 * the connection is back to before the handshake).  out gets the answer.
 */
static int sasl_token(struct broker *b, const struct listener *l, struct conn *c, const uint8_t *tok, int32_t len,
		      char *out, size_t outlen)
{
	struct scram_session *s = conn_auth_data(c);
	char user[256];
	int r;

	out[0] = 0;
	if (SASL_AUTH_MECH(conn_auth(c)) == SASL_AUTH_PLAIN) {
		r = len >= 0 && !sasl_plain_verify(l->plain_jaas, tok, (size_t)len, user, sizeof(user)) ? 1 : -EACCES;
		if (r == 1)
			return sasl_done(l, c, user, 0) == 1 ? 1 : sasl_fail(c);
		log_warn("%s: SASL/PLAIN authentication failed for user '%s'", conn_peer(c), user);
	} else if (s && len >= 0) {
		r = scram_step(s, sasl_scram_lookup, b, tok, (size_t)len, out, outlen);
		if (r == 1)
			return sasl_done(l, c, s->user, s->mech) == 1 ? 1 : sasl_fail(c);
		if (r == 0)
			return 0;
		log_warn("%s: SASL/%s authentication failed for user '%s'", conn_peer(c), scram_mech_name(s->mech),
			 s->user);
	}
	return sasl_fail(c);
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

/* How long the answer to a failed authentication from c waits: the delay times the recent failures. */
static int64_t sasl_fail_delay_ms(const struct broker *b, const struct conn *c)
{
	return b->cfg.connection_failed_authentication_delay_ms * sasl_fail_count(c, clock_mono_ms());
}

int h_sasl_authenticate(struct req *rq, const void *in, void *out)
{
	const struct SaslAuthenticateRequest *a = in;
	struct SaslAuthenticateResponse *resp = out;
	const struct listener *l = sasl_listener(rq->b, rq->c);
	struct scram_session *s = conn_auth_data(rq->c);
	int auth = conn_auth(rq->c);
	char *tok;
	int r;

	if (!l || auth <= 0 || (auth & SASL_AUTH_RAW)) {
		resp->ErrorCode = KERR_ILLEGAL_SASL_STATE;
		resp->ErrorMessage = req_printf(rq, "Unexpected SaslAuthenticate: no SaslHandshake v1 before it");
		return H_REPLY;
	}
	tok = req_alloc(rq, 1024, 1);
	if (SASL_AUTH_MECH(auth) == SASL_AUTH_PLAIN)
		resp->ErrorMessage = req_printf(rq, "Authentication failed: Invalid username or password");
	else
		resp->ErrorMessage = req_printf(
			rq,
			"Authentication failed during authentication due to invalid credentials with SASL mechanism %s",
			scram_mech_name(s->mech));
	r = sasl_token(rq->b, l, rq->c, a->AuthBytes.p, a->AuthBytes.len, tok, 1024);
	if (r < 0) {
		resp->ErrorCode = KERR_SASL_AUTHENTICATION_FAILED;
		req_reply_after(rq, sasl_fail_delay_ms(rq->b, rq->c));
		return H_PARKED;
	}
	resp->ErrorMessage = KSTR_NULL;
	resp->AuthBytes = (struct bytes){ (const uint8_t *)tok, (int32_t)strlen(tok) };
	if (r == 1 && conn_auth_expiry_ms(rq->c))
		resp->SessionLifetimeMs = conn_auth_expiry_ms(rq->c) - clock_mono_ms();
	return H_REPLY;
}

/*
 * Connections whose bare v0 token failed, closed once their failure delay
 * is over (without an answer, as Kafka closes them); muted until then.
 */
struct sasl_closing {
	struct loop_timer timer;
	struct conn *c;
	struct conn_slot *slot;
	struct sasl_closing *next;
};
static struct sasl_closing *sasl_closings;

static void sasl_closing_end(struct sasl_closing *sc)
{
	for (struct sasl_closing **p = &sasl_closings; *p; p = &(*p)->next)
		if (*p == sc) {
			*p = sc->next;
			break;
		}
	conn_slot_done(sc->c, sc->slot, NULL);
	conn_close(sc->c, "SASL authentication failed");
	conn_put(sc->c);
	free(sc);
}

static void sasl_closing_due(struct loop_timer *t)
{
	sasl_closing_end((struct sasl_closing *)((char *)t - offsetof(struct sasl_closing, timer)));
}

/* Closes c (its token in slot failed) after the failure delay; at once if there is none. */
static void sasl_close_after(struct broker *b, struct conn *c, struct conn_slot *slot)
{
	int64_t ms = sasl_fail_delay_ms(b, c);
	struct sasl_closing *sc = ms > 0 ? calloc(1, sizeof(*sc)) : NULL;

	if (!sc) {
		conn_slot_done(c, slot, NULL);
		conn_close(c, "SASL authentication failed");
		return;
	}
	sc->c = conn_get(c);
	sc->slot = slot;
	sc->next = sasl_closings;
	sasl_closings = sc;
	conn_mute(c, ms); /* nothing more is read from a client that failed */
	loop_timer_init(&sc->timer, sasl_closing_due);
	loop_timer_set(b->loop, &sc->timer, clock_mono_ms() + ms);
}

void sasl_closing_drop(struct broker *b)
{
	while (sasl_closings) {
		loop_timer_cancel(b->loop, &sasl_closings->timer);
		sasl_closing_end(sasl_closings);
	}
}

bool sasl_raw_token(struct broker *b, struct conn *c, struct conn_slot *slot, uint8_t *frame, int32_t len)
{
	const struct listener *l = sasl_listener(b, c);
	char tok[1024];
	struct wr w;

	if (conn_auth(c) <= 0 || !(conn_auth(c) & SASL_AUTH_RAW))
		return false;
	if (!l || sasl_token(b, l, c, frame, len, tok, sizeof(tok)) < 0) {
		free(frame);
		sasl_close_after(b, c, slot);
		return true;
	}
	free(frame);
	wr_init(&w);
	wr_i32(&w, (int32_t)strlen(tok));
	wr_raw(&w, tok, strlen(tok));
	conn_slot_done(c, slot, &w);
	wr_release(&w);
	return true;
}
