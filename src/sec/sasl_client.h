/*
 * sasl_client.h - the client side of SASL for inter-broker connections:
 * SaslHandshake v1 naming the mechanism, then SaslAuthenticate requests
 * carrying PLAIN's token or SCRAM's two messages, as a Kafka broker
 * authenticates to another one (sasl.mechanism.inter.broker.protocol,
 * with the username and password of the listener's JAAS entry).  Run by
 * net/client.c as its struct nclient_auth on every new connection.
 */
#ifndef GREGOR_SEC_SASL_CLIENT_H
#define GREGOR_SEC_SASL_CLIENT_H

#include <stddef.h>

#include "net/client.h"

struct sasl_client;

/*
 * mechanism: PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512; jaas: a JAAS entry
 * with username="..." password="...".  0, or -EINVAL with a message in err
 * (GSSAPI and other mechanisms are refused), or -ENOMEM.
 */
int sasl_client_new(const char *mechanism, const char *jaas, struct sasl_client **out, char *err, size_t errlen);
void sasl_client_free(struct sasl_client *sc);

/* The exchange for nclient_sec.auth; nclient_sec.auth_arg is the struct sasl_client. */
extern const struct nclient_auth sasl_client_auth;

#endif
