/*
 * channel.h - the controller's channels to the brokers (Kafka's
 * ControllerChannelManager): one outbound connection per live broker
 * (net/client.h) to the listener it registered, and one queue of
 * requests per broker.
 *
 * The controller sends the whole cluster state in each LeaderAndIsr and
 * UpdateMetadata, so the queue keeps, per API, only the latest request
 * not yet answered: a newer one replaces a waiting older one, and a
 * request whose connection was lost before the answer is sent again
 * once the broker is reachable (reconnects back off as net/client.h
 * says).  Answers are matched by correlation id; an error in one is
 * logged.  A broker that leaves the live set loses its channel.
 */
#ifndef GREGOR_CLUSTER_CHANNEL_H
#define GREGOR_CLUSTER_CHANNEL_H

#include <stdint.h>

#include "cluster/cluster.h"
#include "net/loop.h"

struct channel;
struct nclient_sec;

int channel_new(struct loop *loop, int32_t self_id, const struct nclient_sec *sec, struct channel **out);
void channel_free(struct channel *ch);
/* Opens channels to brokers not known yet, closes those of brokers not in b[0..n). */
void channel_set_brokers(struct channel *ch, const struct cluster_broker *b, int n);
/* Closes every channel and forgets what waits (this broker is no longer controller). */
void channel_reset(struct channel *ch);
/*
 * Queues msg (the generated request struct of api_key, encoded at version)
 * for broker id, replacing a request of the same api_key that waits.
 * 0, -ENOENT (no channel to id) or -ENOMEM.
 */
int channel_send(struct channel *ch, int32_t id, int16_t api_key, int16_t version, const void *msg);

#endif
