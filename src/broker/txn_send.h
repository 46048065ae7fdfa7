/*
 * txn_send.h - cluster mode: the transaction coordinator's COMMIT/ABORT
 * markers for partitions led by other brokers, sent as WriteTxnMarkers.
 *
 * One outbound connection (net/client.h) per destination broker, one
 * request in flight on it: the markers queued meanwhile leave together in
 * the next request (one entry per marker, each with its coordinator
 * epoch).  Every marker's outcome is reported once through
 * txn_coord_on_marker_sent(): the destination's error code for it, or
 * NETWORK_EXCEPTION when the connection was lost before the answer (the
 * coordinator then looks the leader up again and resends).
 *
 * Runs on the event loop; knows the coordinator only through that call.
 */
#ifndef GREGOR_BROKER_TXN_SEND_H
#define GREGOR_BROKER_TXN_SEND_H

#include <stdbool.h>
#include <stdint.h>

#include "util/buf.h"

struct broker;
struct marker;
struct txn_send;

int txn_send_new(struct broker *b, struct txn_send **out);
/* Closes the connections; markers not answered are not reported. */
void txn_send_free(struct txn_send *ts);
/*
 * Queues the marker m of transactional id for topic-partition at broker
 * leader.  0 (reported later), -ENOENT (leader not registered) or -ENOMEM.
 */
int txn_send_marker(struct txn_send *ts, int32_t leader, struct kstr id, const struct marker *m, const char *topic,
		    int32_t partition);

#endif
