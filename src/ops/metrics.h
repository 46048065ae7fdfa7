/*
 * metrics.h - the Prometheus text exposition (format 0.0.4) of the
 * broker's figures (broker/stats.h) and the process's own (CPU, memory,
 * descriptors), with the names the Prometheus JMX exporter's Kafka rules
 * give them so Kafka dashboards work unchanged (docs/metrics.md lists
 * every series).
 */
#ifndef GREGOR_OPS_METRICS_H
#define GREGOR_OPS_METRICS_H

#include <stddef.h>

/*
 * Renders every metric; returns a malloc'd text the caller frees, its
 * length in *len, or NULL when out of memory.  Runs on the HTTP thread:
 * waits at most STATS_SNAP_WAIT_MS for the loop's snapshot.
 */
char *metrics_render(size_t *len);

#endif
