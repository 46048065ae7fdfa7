/*
 * endpoint.c - the advertised endpoint a client is given for this broker
 * and, in cluster mode, for the others: the one of the listener the
 * client came through (see broker.h), so a client on an SSL listener is
 * never sent to a plaintext port; and the endpoint brokers reach each
 * other on (inter.broker.listener.name).
 */
#include <stdbool.h>
#include <string.h>

#include "broker/broker.h"
#include "cluster/cluster.h"
#include "net/conn.h"

void broker_endpoint(const struct broker *b, const struct conn *c, const char **host, int32_t *port)
{
	int i = c ? conn_listener(c) : 0;

	if (i < 0 || i >= b->nlisteners)
		i = 0;
	*host = b->listeners[i].host;
	*port = b->listeners[i].port;
}

void broker_endpoint_of(const struct broker *b, const struct conn *c, const struct cluster_broker *cb,
			const char **host, int32_t *port)
{
	int i = c ? conn_listener(c) : 0;

	if (cb->id == b->node_id) {
		broker_endpoint(b, c, host, port);
		return;
	}
	if (i < 0 || i >= b->nlisteners)
		i = 0;
	*host = cb->host;
	*port = cb->port;
	for (int e = 0; e < cb->nendpoints; e++) {
		if (!strcmp(cb->endpoints[e].listener, b->listeners[i].name)) {
			*host = cb->endpoints[e].host;
			*port = cb->endpoints[e].port;
		}
	}
}

bool broker_endpoint_inter(const struct broker *b, int32_t id, const char **host, int32_t *port)
{
	const struct cluster_broker *v;
	int n = b->cluster ? cluster_brokers(b->cluster, &v) : 0;

	for (int i = 0; i < n; i++) {
		if (v[i].id != id || !v[i].inter_port)
			continue;
		*host = v[i].inter_host;
		*port = v[i].inter_port;
		return true;
	}
	return false;
}
