/* login.h - the client side of SASL PLAIN and SCRAM-SHA-256/512 (RFC 5802,
 * RFC 7677) for the tools' raw-protocol connections (wire.h), with the
 * username and password librdkafka was configured with.
 *
 *     struct login sc;
 *     login_init(&sc, "SCRAM-SHA-512", user, password);
 *     while ((r = login_step(&sc, in, inlen, out, sizeof(out))) == 0)
 *             ... send out, read the server's token into in ...
 *     // r == 1: out is the last token to send (PLAIN) or nothing (SCRAM: verified)
 */
#ifndef GREGOR_TOOLS_LOGIN_H
#define GREGOR_TOOLS_LOGIN_H

#include <stddef.h>
#include <stdint.h>

#include "sec/scram.h"

struct login {
	int mech; /* 0 PLAIN, else enum scram_mech */
	int step; /* tokens sent so far */
	char user[256], password[256];
	struct scram_client scram;
};

/* 0, or -EINVAL for a mechanism other than PLAIN, SCRAM-SHA-256, SCRAM-SHA-512. */
int login_init(struct login *sc, const char *mechanism, const char *user, const char *password);
/*
 * The next token to send into out (NUL-terminated; its length is strlen
 * except PLAIN's, returned in *outlen) from the server's last one (in,
 * inlen; nothing before the first).  Returns 0 with a token to send, 1
 * when the exchange is over (the server's signature checked), -EACCES if
 * the server's answer is malformed or its signature wrong.
 */
int login_step(struct login *sc, const uint8_t *in, size_t inlen, char *out, size_t outsize, size_t *outlen);

#endif
