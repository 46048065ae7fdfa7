/*
 * interbroker.h - cluster mode: which listener brokers reach each other on
 * and how those connections are secured, as Kafka configures them.
 *
 * The inter-broker listener is inter.broker.listener.name, else the
 * listener named like security.inter.broker.protocol, else the first
 * listener of that security protocol.  Its protocol decides: SSL and
 * SASL_SSL connect with TLS (the broker's truststore verifies the other
 * broker, its keystore is the client certificate,
 * ssl.endpoint.identification.algorithm checks the host name), and
 * SASL_PLAINTEXT and SASL_SSL authenticate with
 * sasl.mechanism.inter.broker.protocol and the listener's JAAS username
 * and password.  The listener's own listener.name.<name>.* settings win,
 * as on the server side.
 */
#ifndef GREGOR_BROKER_INTERBROKER_H
#define GREGOR_BROKER_INTERBROKER_H

#include "broker/broker.h"

/* Sets b->inter_listener and b->inter_sec.  0, or -EINVAL (logged) when the settings cannot work. */
int interbroker_start(struct broker *b);
/* Frees b->inter_sec; no inter-broker connection may be left. */
void interbroker_stop(struct broker *b);

#endif
