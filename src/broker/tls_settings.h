/*
 * tls_settings.h - Kafka's ssl.* settings of one listener, as the TLS layer
 * takes them: for the broker's SSL listeners (server.c) and for its own
 * connections to other brokers (interbroker.c).
 */
#ifndef GREGOR_BROKER_TLS_SETTINGS_H
#define GREGOR_BROKER_TLS_SETTINGS_H

#include "broker/broker.h"

struct tls_cfg;

/* The ssl.* settings as they apply to listener name (listener.name.<name>.ssl.* first); *out points into cfg. */
void tls_settings_of(const struct broker_cfg *cfg, const char *name, struct tls_cfg *out);

#endif
