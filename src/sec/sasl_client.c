/*
 * sasl_client.c - SASL towards another broker (see sasl_client.h).
 *
 * Steps of one exchange (struct sasl_run.step):
 *   0  SaslHandshake sent            -> answer: the mechanism is enabled there
 *   1  first SaslAuthenticate sent   -> PLAIN: done; SCRAM: server-first, client-final sent
 *   2  client-final sent (SCRAM)     -> server-final's signature checked: done
 * A refusal carries the server's ErrorMessage into the log.
 */
#include "sec/sasl_client.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/header.h"
#include "proto/kerr.h"
#include "proto_msgs.h"
#include "sec/sasl_plain.h"
#include "sec/scram.h"
#include "util/arena.h"

#define SASL_CLIENT_ID "gregor-inter-broker"
#define SASL_AUTH_VERSION 1
#define SASL_HANDSHAKE_VERSION 1

struct sasl_client {
	char mechanism[32];
	enum scram_mech scram; /* 0: PLAIN */
	char user[256];
	char password[256];
};

struct sasl_run {
	const struct sasl_client *sc;
	int step;
	int32_t corr;
	struct scram_client scram;
};

int sasl_client_new(const char *mechanism, const char *jaas, struct sasl_client **out, char *err, size_t errlen)
{
	struct sasl_client *sc;
	const char *m = mechanism ? mechanism : "";

	if (strcmp(m, "PLAIN") && !scram_mech_of(m, strlen(m))) {
		snprintf(err, errlen,
			 "sasl.mechanism.inter.broker.protocol '%s' is not supported (PLAIN, SCRAM-SHA-256, "
			 "SCRAM-SHA-512%s)",
			 m, strcmp(m, "GSSAPI") ? "" : "; GSSAPI, Kafka's default, needs Kerberos");
		return -EINVAL;
	}
	if (!jaas) {
		snprintf(err, errlen,
			 "no JAAS config for %s (sasl.jaas.config, or listener.name.<listener>.%s.sasl.jaas.config)", m,
			 m);
		return -EINVAL;
	}
	sc = calloc(1, sizeof(*sc));
	if (!sc)
		return -ENOMEM;
	snprintf(sc->mechanism, sizeof(sc->mechanism), "%s", m);
	sc->scram = scram_mech_of(m, strlen(m));
	if (sasl_jaas_option(jaas, "username", sc->user, sizeof(sc->user), err, errlen) ||
	    sasl_jaas_option(jaas, "password", sc->password, sizeof(sc->password), err, errlen)) {
		free(sc);
		return -EINVAL;
	}
	*out = sc;
	return 0;
}

void sasl_client_free(struct sasl_client *sc)
{
	if (sc)
		memset(sc->password, 0, sizeof(sc->password));
	free(sc);
}

/* Writes a SaslAuthenticate request carrying tok. */
static void sasl_client_token(struct sasl_run *run, const void *tok, size_t len, struct wr *w)
{
	struct SaslAuthenticateRequest req = { .AuthBytes = { tok, (int32_t)len } };
	size_t at =
		header_write_request(w, API_SaslAuthenticate, SASL_AUTH_VERSION, ++run->corr, kstr_c(SASL_CLIENT_ID));

	SaslAuthenticateRequest_encode(w, SASL_AUTH_VERSION, &req);
	wr_patch_i32(w, at, (int32_t)(wr_total(w) - (int64_t)at - 4));
}

static int sasl_client_start(void *arg, void **st, struct wr *w)
{
	struct sasl_run *run = calloc(1, sizeof(*run));
	struct SaslHandshakeRequest req;
	size_t at;

	if (!run)
		return -ENOMEM;
	run->sc = arg;
	req.Mechanism = kstr_c(run->sc->mechanism);
	at = header_write_request(w, API_SaslHandshake, SASL_HANDSHAKE_VERSION, ++run->corr, kstr_c(SASL_CLIENT_ID));
	SaslHandshakeRequest_encode(w, SASL_HANDSHAKE_VERSION, &req);
	wr_patch_i32(w, at, (int32_t)(wr_total(w) - (int64_t)at - 4));
	*st = run;
	return 0;
}

/* The first token: PLAIN's "\0user\0password", or SCRAM's client-first. */
static int sasl_client_first(struct sasl_run *run, struct wr *w, char *why, size_t whylen)
{
	const struct sasl_client *sc = run->sc;
	char tok[600];
	size_t n;

	if (!sc->scram) {
		n = (size_t)snprintf(tok, sizeof(tok), "%c%s%c%s", 0, sc->user, 0, sc->password);
		sasl_client_token(run, tok, n, w);
		memset(tok, 0, sizeof(tok));
		return 1;
	}
	if (scram_client_first(&run->scram, sc->scram, sc->user, tok, sizeof(tok))) {
		snprintf(why, whylen, "SCRAM user name '%s' not usable", sc->user);
		return -EINVAL;
	}
	sasl_client_token(run, tok, strlen(tok), w);
	return 1;
}

/* The SaslHandshake answer: the mechanism must be enabled on the other side. */
static int sasl_client_handshake(struct sasl_run *run, struct rd *r, struct arena *a, struct wr *w, char *why,
				 size_t whylen)
{
	struct SaslHandshakeResponse resp;

	SaslHandshakeResponse_init(&resp);
	if (SaslHandshakeResponse_decode(r, a, SASL_HANDSHAKE_VERSION, &resp)) {
		snprintf(why, whylen, "malformed SaslHandshake response");
		return -EBADMSG;
	}
	if (resp.ErrorCode) {
		snprintf(why, whylen, "SaslHandshake: %s: mechanism %s not enabled on the listener",
			 kerr_name(resp.ErrorCode), run->sc->mechanism);
		return -EACCES;
	}
	return sasl_client_first(run, w, why, whylen);
}

/* A SaslAuthenticate answer. */
static int sasl_client_answer(struct sasl_run *run, struct rd *r, struct arena *a, struct wr *w, char *why,
			      size_t whylen)
{
	struct SaslAuthenticateResponse resp;
	char out[1024];

	SaslAuthenticateResponse_init(&resp);
	if (SaslAuthenticateResponse_decode(r, a, SASL_AUTH_VERSION, &resp)) {
		snprintf(why, whylen, "malformed SaslAuthenticate response");
		return -EBADMSG;
	}
	if (resp.ErrorCode) {
		snprintf(why, whylen, "%s as '%s' (%s): %.*s", run->sc->mechanism, run->sc->user,
			 kerr_name(resp.ErrorCode), resp.ErrorMessage.len > 0 ? (int)resp.ErrorMessage.len : 0,
			 resp.ErrorMessage.len > 0 ? resp.ErrorMessage.p : "");
		return -EACCES;
	}
	if (!run->sc->scram)
		return 0;
	if (run->step == 2) {
		if (!scram_client_verify(&run->scram, resp.AuthBytes.p,
					 resp.AuthBytes.len > 0 ? resp.AuthBytes.len : 0))
			return 0;
		snprintf(why, whylen, "%s: the server's signature is wrong", run->sc->mechanism);
		return -EACCES;
	}
	if (scram_client_final(&run->scram, run->sc->password, resp.AuthBytes.p,
			       resp.AuthBytes.len > 0 ? (size_t)resp.AuthBytes.len : 0, out, sizeof(out))) {
		snprintf(why, whylen, "%s: unusable server-first message", run->sc->mechanism);
		return -EACCES;
	}
	sasl_client_token(run, out, strlen(out), w);
	return 1;
}

static int sasl_client_step(void *st, const uint8_t *frame, int32_t len, struct wr *w, char *why, size_t whylen)
{
	struct sasl_run *run = st;
	int16_t api = run->step == 0 ? API_SaslHandshake : API_SaslAuthenticate;
	int16_t version = run->step == 0 ? SASL_HANDSHAKE_VERSION : SASL_AUTH_VERSION;
	struct arena a;
	struct rd r;
	int32_t corr;
	int rc;

	rd_init(&r, frame, (size_t)len);
	if (header_read_response(&r, api, version, &corr) || corr != run->corr) {
		snprintf(why, whylen, "unexpected response during SASL authentication");
		return -EBADMSG;
	}
	arena_init(&a, 0);
	if (run->step == 0)
		rc = sasl_client_handshake(run, &r, &a, w, why, whylen);
	else
		rc = sasl_client_answer(run, &r, &a, w, why, whylen);
	arena_release(&a);
	run->step++;
	return rc;
}

static void sasl_client_end(void *st)
{
	struct sasl_run *run = st;

	memset(&run->scram, 0, sizeof(run->scram));
	free(run);
}

const struct nclient_auth sasl_client_auth = {
	.start = sasl_client_start,
	.step = sasl_client_step,
	.end = sasl_client_end,
};
