/* quotas.h - client quotas for gregor-configs (--entity-type clients or
 * users), over AlterClientQuotas and DescribeClientQuotas sent with
 * wire.h: librdkafka 2.0.2 has no Admin API for them.
 *
 * An entity is one component: type "clients" or "users" (the tool's
 * names; the protocol's "client-id" and "user"), name NULL for the
 * <default> entity.
 */
#ifndef GREGOR_TOOLS_QUOTAS_H
#define GREGOR_TOOLS_QUOTAS_H

#include <stdbool.h>
#include <librdkafka/rdkafka.h>

/* The protocol's entity type for the tool's "clients"/"users"; NULL if neither. */
const char *quotas_entity_type(const char *tool_type);

/*
 * Prints Kafka's "Quota configs for client-id 'x' are k=v, ..." line for
 * each entity of type matching name (NULL with all: every entity of the
 * type; NULL without all: the <default> one).  Returns NULL, or the
 * broker's error message.
 */
const char *quotas_describe(rd_kafka_t *rk, const char *type, const char *name, bool all);

/*
 * Sets keys[i] to vals[i] (vals[i] NULL: removes keys[i]) for n keys on
 * the entity.  Returns NULL, or an error message (a value that is not a
 * number, or the broker's error).
 */
const char *quotas_alter(rd_kafka_t *rk, const char *type, const char *name, char **keys, char **vals, int n);

#endif
