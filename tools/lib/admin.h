/* admin.h - Admin API calls more than one tool makes (topics, configs).
 *
 * Each call issues one request and waits for its answer with
 * kafka_admin_wait(), so a request-level failure (timeout, transport)
 * exits 1 with a message; per-resource errors are returned to the caller.
 */
#ifndef GREGOR_TOOLS_ADMIN_H
#define GREGOR_TOOLS_ADMIN_H

#include <stdbool.h>
#include <librdkafka/rdkafka.h>

/* DescribeConfigs for one resource. Returns the resource (owned by *evp,
 * which the caller destroys with rd_kafka_event_destroy()); check
 * rd_kafka_ConfigResource_error() on it. */
const rd_kafka_ConfigResource_t *admin_describe_config(rd_kafka_t *rk, rd_kafka_ResourceType_t type, const char *name,
						       rd_kafka_event_t **evp);

/* Sorted names of every topic in the cluster (Metadata for all topics).
 * Returns the count; *names_out is a heap array of heap strings the caller
 * frees with admin_names_free(). Exits 1 if the broker does not answer. */
int admin_list_topics(rd_kafka_t *rk, char ***names_out);
void admin_names_free(char **names, int n);

/* True for Kafka's internal topics (__consumer_offsets, __transaction_state). */
bool admin_topic_is_internal(const char *name);

#endif
