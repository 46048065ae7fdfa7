/* wire.h - a small blocking Kafka protocol client, for the requests
 * librdkafka 2.0.2 has no Admin API for (DescribeProducers,
 * DescribeTransactions, ListTransactions, WriteTxnMarkers, FindCoordinator
 * of a transactional id, DescribeLogDirs).
 *
 * Requests and responses are the broker's generated structs
 * (build/gen/proto_msgs.h, from src/proto/schema/), encoded and decoded by
 * the generated code, so a tool speaks exactly the wire format the schema
 * describes and writes no byte by hand. Brokers are found the way
 * librdkafka sees them: wire_open() connects to a node id of librdkafka's
 * metadata (which also proves the bootstrap works), and asks ApiVersions so
 * wire_version() can pick the highest version both sides speak.
 *
 *     struct wire *wc = wire_open(rk, wire_leader(rk, "t", 0));
 *     struct arena a;  arena_init(&a, 0);
 *     struct DescribeProducersRequest req;  struct DescribeProducersResponse resp;
 *     DescribeProducersRequest_init(&req);  ... fill req ...
 *     wire_call(wc, API_DescribeProducers, wire_version(wc, API_DescribeProducers, 0), &req, &resp, &a);
 *     ... read resp (strings are views into frames held by a) ...
 *     arena_release(&a);  wire_close(wc);
 *
 * Security (TLS, SASL) is the librdkafka handle's (wire.c). Every
 * send and receive is bounded by kafka_timeout_ms(). Failures (connect,
 * timeout, a closed connection, a response that does not decode, no common
 * version) print "<prog>: <what>" and exit 1, like the rest of tools/lib.
 */
#ifndef GREGOR_TOOLS_WIRE_H
#define GREGOR_TOOLS_WIRE_H

#include <stdint.h>
#include <librdkafka/rdkafka.h>

#include "proto_msgs.h"
#include "util/arena.h"

struct wire;

/* Connects to broker node_id (host and port from librdkafka's metadata)
 * and reads its ApiVersions. Exits 1 on failure. Free with wire_close(). */
struct wire *wire_open(rd_kafka_t *rk, int32_t node_id);
void wire_close(struct wire *wc);
int32_t wire_node_id(const struct wire *wc);

/* The highest version of api_key in [schema min, max] the broker also
 * advertises. Exits 1, naming the API, if there is none. */
int16_t wire_version(const struct wire *wc, int16_t api_key, int16_t max);

/* Sends req (the generated request struct of api_key) at version and
 * decodes the answer into resp (the generated response struct). Arrays
 * and the response frame, which decoded strings point into, come from a.
 * Exits 1 on failure. */
void wire_call(struct wire *wc, int16_t api_key, int16_t version, const void *req, void *resp, struct arena *a);

/* librdkafka's metadata of every topic (no topic is auto-created by
 * asking). Caller frees with rd_kafka_metadata_destroy(). Exits 1 if the
 * brokers do not answer within kafka_timeout_ms(). */
const struct rd_kafka_metadata *wire_metadata(rd_kafka_t *rk);
/* The leader of topic/partition, or -1 if the topic or partition is unknown. */
int32_t wire_leader(rd_kafka_t *rk, const char *topic, int32_t partition);

#endif
