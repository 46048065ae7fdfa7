/*
 * interbroker.c - the inter-broker listener and the security of the
 * connections to the other brokers' endpoints of it (see interbroker.h).
 * The TLS client context comes from sec/tls.c and the SASL exchange from
 * sec/sasl_client.c; both are handed to net/client.c as a struct
 * nclient_sec, so the network layer never knows them.
 */
#include "broker/interbroker.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/config.h"
#include "broker/tls_settings.h"
#include "net/client.h"
#include "sec/sasl_client.h"
#include "sec/tls.h"
#include "util/log.h"

struct interbroker {
	struct nclient_sec sec;
	struct tls_ctx *tls;
	struct sasl_client *sasl;
};

/* A listener's security protocol, from what server.c set it up with. */
static const char *interbroker_protocol(const struct listener *l)
{
	if (l->tls)
		return l->sasl ? "SASL_SSL" : "SSL";
	return l->sasl ? "SASL_PLAINTEXT" : "PLAINTEXT";
}

/* The inter-broker listener among this broker's own, or NULL (logged). */
static const struct listener *interbroker_listener(const struct broker *b)
{
	const char *name = b->cfg.inter_broker_listener_name, *proto = b->cfg.security_inter_broker_protocol;

	for (int i = 0; i < b->nlisteners; i++)
		if (!strcasecmp(b->listeners[i].name, name ? name : proto))
			return &b->listeners[i];
	for (int i = 0; !name && i < b->nlisteners; i++)
		if (!strcmp(interbroker_protocol(&b->listeners[i]), proto))
			return &b->listeners[i];
	if (name)
		log_error("inter.broker.listener.name %s is not one of the listeners", name);
	else
		log_error("security.inter.broker.protocol %s: no listener of that name or protocol; set "
			  "inter.broker.listener.name",
			  proto);
	return NULL;
}

static int interbroker_tls(struct broker *b, struct interbroker *ib, const char *name)
{
	struct tls_cfg tc;
	char err[512];

	tls_settings_of(&b->cfg, name, &tc);
	if (tls_client_ctx_new(&tc,
			       config_listener_ssl(&b->cfg, name, "ssl.endpoint.identification.algorithm",
						   b->cfg.ssl_endpoint_identification_algorithm),
			       &ib->tls, err, sizeof(err))) {
		log_error("inter-broker listener %s: TLS towards the other brokers: %s", name, err);
		return -EINVAL;
	}
	ib->sec.xport = &tls_xport;
	ib->sec.xport_arg = ib->tls;
	return 0;
}

/* listener.name.<l>.<mechanism>.sasl.jaas.config (mechanism in lower case), else sasl.jaas.config. */
static int interbroker_sasl(struct broker *b, struct interbroker *ib, const char *name)
{
	const char *mech =
		b->cfg.sasl_mechanism_inter_broker_protocol ? b->cfg.sasl_mechanism_inter_broker_protocol : "";
	char key[128], err[512];
	size_t i;

	for (i = 0; mech[i] && i < 64; i++)
		key[i] = (char)tolower((unsigned char)mech[i]);
	snprintf(key + i, sizeof(key) - i, ".sasl.jaas.config");
	if (sasl_client_new(mech, config_listener_ssl(&b->cfg, name, key, b->cfg.sasl_jaas_config), &ib->sasl, err,
			    sizeof(err))) {
		log_error("inter-broker listener %s: %s", name, err);
		return -EINVAL;
	}
	ib->sec.auth = &sasl_client_auth;
	ib->sec.auth_arg = ib->sasl;
	return 0;
}

int interbroker_start(struct broker *b)
{
	const struct listener *l = interbroker_listener(b);
	struct interbroker *ib;

	if (!l)
		return -EINVAL;
	snprintf(b->inter_listener, sizeof(b->inter_listener), "%s", l->name);
	if (!l->tls && !l->sasl) {
		log_info("inter-broker listener %s (PLAINTEXT)", l->name);
		return 0;
	}
	ib = calloc(1, sizeof(*ib));
	if (!ib)
		return -ENOMEM;
	b->inter_sec = &ib->sec; /* first member: interbroker_stop() finds ib from it */
	if ((l->tls && interbroker_tls(b, ib, l->name)) || (l->sasl && interbroker_sasl(b, ib, l->name))) {
		interbroker_stop(b);
		return -EINVAL;
	}
	log_info("inter-broker listener %s (%s%s%s)", l->name, interbroker_protocol(l), l->sasl ? ", " : "",
		 l->sasl ? b->cfg.sasl_mechanism_inter_broker_protocol : "");
	return 0;
}

void interbroker_stop(struct broker *b)
{
	struct interbroker *ib = (struct interbroker *)b->inter_sec;

	if (!ib)
		return;
	tls_ctx_free(ib->tls);
	sasl_client_free(ib->sasl);
	free(ib);
	b->inter_sec = NULL;
}
