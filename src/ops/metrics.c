/*
 * metrics.c - renders /metrics (see metrics.h).
 *
 * Names follow what the JMX exporter's example Kafka rules produce from
 * Kafka's MBeans (kafka.server:type=BrokerTopicMetrics,name=BytesInPerSec
 * -> kafka_server_brokertopicmetrics_bytesin_total), with the process_*
 * names of the Prometheus client libraries.  Label cardinality is bounded
 * by what the broker holds: one series per topic (at most
 * STATS_TOPICS_MAX), per partition, per API and version in use; group ids
 * and client ids are never labels.
 *
 * Everything is written into one growing buffer: at 10,000 partitions the
 * text is about 1.5 MB and takes a few milliseconds (docs/performance.md).
 */
#include "ops/metrics.h"

#include <dirent.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "broker/quota.h"
#include "broker/stats.h"
#include "broker/stats_snap.h"
#include "coord/txn.h"
#include "net/send.h"
#include "proto/kerr.h"

struct mbuf {
	char *p;
	size_t len, cap;
	bool err;
};

static void mb_printf(struct mbuf *m, const char *fmt, ...)
{
	va_list ap;
	int n;

	for (int tries = 0; tries < 2 && !m->err; tries++) {
		va_start(ap, fmt);
		n = vsnprintf(m->p + m->len, m->cap - m->len, fmt, ap);
		va_end(ap);
		if (n < 0) {
			m->err = true;
			return;
		}
		if ((size_t)n < m->cap - m->len) {
			m->len += (size_t)n;
			return;
		}
		size_t cap = (m->cap + (size_t)n + 1) * 2;
		char *p = realloc(m->p, cap);

		if (!p) {
			m->err = true;
			return;
		}
		m->p = p;
		m->cap = cap;
	}
}

static void mb_head(struct mbuf *m, const char *name, const char *type, const char *help)
{
	mb_printf(m, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* A topic name as a label value: topic names are [a-zA-Z0-9._-], so only a guard against anything else. */
static const char *label_safe(const char *s)
{
	return strpbrk(s, "\"\\\n") ? "invalid" : s;
}

static void metrics_topics(struct mbuf *m, const struct stats_snap *s)
{
	static const struct {
		const char *name, *help;
		size_t off;
	} tm[] = {
		{ "kafka_server_brokertopicmetrics_bytesin_total", "Record bytes appended by produce requests.",
		  offsetof(struct stats_topic, bytes_in) },
		{ "kafka_server_brokertopicmetrics_bytesout_total", "Record bytes served to fetch requests.",
		  offsetof(struct stats_topic, bytes_out) },
		{ "kafka_server_brokertopicmetrics_messagesin_total", "Records appended by produce requests.",
		  offsetof(struct stats_topic, messages_in) },
	};
	const uint64_t totals[3] = { stats_load(&stats_counters.bytes_in), stats_load(&stats_counters.bytes_out),
				     stats_load(&stats_counters.messages_in) };

	for (size_t k = 0; k < 3; k++) {
		mb_head(m, tm[k].name, "counter", tm[k].help);
		mb_printf(m, "%s %llu\n", tm[k].name, (unsigned long long)totals[k]);
		for (int32_t i = 0; s && i < s->ntopics; i++) {
			uint64_t v = *(const uint64_t *)((const char *)&s->topics[i] + tm[k].off);

			mb_printf(m, "%s{topic=\"%s\"} %llu\n", tm[k].name, label_safe(s->topics[i].name),
				  (unsigned long long)v);
		}
	}
}

static void metrics_lags(struct mbuf *m, const struct stats_snap *s)
{
	mb_head(m, "kafka_consumergroup_lag", "gauge",
		"High watermark minus the group's committed offset, per group and partition with a commit.");
	for (int32_t i = 0; i < s->nlags; i++)
		mb_printf(m, "kafka_consumergroup_lag{consumergroup=\"%s\",topic=\"%s\",partition=\"%d\"} %lld\n",
			  s->lags[i].group, label_safe(s->lags[i].topic), s->lags[i].partition,
			  (long long)s->lags[i].lag);
	mb_head(m, "gregor_consumergroup_lag_series_dropped", "gauge",
		"Lag series left out of this scrape past the limit of 10,000.");
	mb_printf(m, "gregor_consumergroup_lag_series_dropped %d\n", s->lags_dropped);
}

/* Per-client rates and throttle time, named as Kafka's JMX exporter names its quota sensors. */
static void metrics_quotas(struct mbuf *m, const struct stats_snap *s)
{
	static const struct {
		const char *rate, *rate_help, *throttle;
	} qm[QUOTA_KINDS] = {
		[QUOTA_PRODUCE] = { "kafka_server_produce_byte_rate", "Produce request bytes per second, per client.",
				    "kafka_server_produce_throttle_time" },
		[QUOTA_FETCH] = { "kafka_server_fetch_byte_rate", "Fetch response record bytes per second, per client.",
				  "kafka_server_fetch_throttle_time" },
		[QUOTA_REQUEST] = { "kafka_server_request_request_time",
				    "Request handler time as a percentage of one thread, per client.",
				    "kafka_server_request_throttle_time" },
	};

	for (int k = 0; k < QUOTA_KINDS; k++) {
		mb_head(m, qm[k].rate, "gauge", qm[k].rate_help);
		for (int32_t i = 0; i < s->nquotas; i++)
			if (s->quotas[i].kind == k)
				mb_printf(m, "%s{user=\"%s\",client_id=\"%s\"} %.3f\n", qm[k].rate, s->quotas[i].user,
					  s->quotas[i].client_id, s->quotas[i].rate);
		mb_head(m, qm[k].throttle, "gauge",
			"Milliseconds of throttling per second over the quota window, per client.");
		for (int32_t i = 0; i < s->nquotas; i++)
			if (s->quotas[i].kind == k)
				mb_printf(m, "%s{user=\"%s\",client_id=\"%s\"} %.3f\n", qm[k].throttle,
					  s->quotas[i].user, s->quotas[i].client_id, s->quotas[i].throttle_ms);
	}
}

/* One gauge with no labels. */
static void metrics_gauge(struct mbuf *m, const char *name, const char *help, long long v)
{
	mb_head(m, name, "gauge", help);
	mb_printf(m, "%s %lld\n", name, v);
}

/* Replication and the controller (0 on a single node, where nothing is replicated) and ISR changes. */
static void metrics_replication(struct mbuf *m, const struct stats_snap *s)
{
	struct stats_counters *sc = &stats_counters;

	metrics_gauge(m, "kafka_server_replicamanager_underreplicatedpartitions",
		      "Partitions led here whose ISR is smaller than their replicas.", s->under_replicated);
	metrics_gauge(m, "kafka_server_replicamanager_underminisrpartitioncount",
		      "Partitions led here whose ISR is smaller than min.insync.replicas.", s->under_min_isr);
	metrics_gauge(m, "kafka_server_replicamanager_atminisrpartitioncount",
		      "Partitions led here whose ISR is exactly min.insync.replicas.", s->at_min_isr);
	metrics_gauge(m, "kafka_server_replicafetchermanager_maxlag",
		      "Largest lag, in records, of a partition followed here behind its leader's high watermark.",
		      (long long)s->replica_max_lag);
	metrics_gauge(m, "kafka_controller_kafkacontroller_activecontrollercount",
		      "1 if this broker is the active controller.", s->active_controller);
	metrics_gauge(m, "kafka_controller_kafkacontroller_offlinepartitionscount",
		      "On the controller: partitions without a leader.", s->offline_partitions);
	mb_head(m, "kafka_server_replicamanager_isrshrinks_total", "counter", "ISR shrinks of partitions led here.");
	mb_printf(m, "kafka_server_replicamanager_isrshrinks_total %llu\n",
		  (unsigned long long)stats_load(&sc->isr_shrinks));
	mb_head(m, "kafka_server_replicamanager_isrexpands_total", "counter", "ISR expansions of partitions led here.");
	mb_printf(m, "kafka_server_replicamanager_isrexpands_total %llu\n",
		  (unsigned long long)stats_load(&sc->isr_expands));
}

/* Connections open and accepted per listener (Kafka's connection-count and connection-creation-total). */
static void metrics_listeners(struct mbuf *m, const struct stats_snap *s)
{
	struct stats_counters *sc = &stats_counters;

	for (int i = 0; i < s->nlisteners; i++) { /* under the total's head (metrics_partitions) */
		uint64_t closed =
			stats_load(&sc->listener_closed[i]); /* first: a close never counts before its accept */
		uint64_t created = stats_load(&sc->listener_created[i]);

		mb_printf(m, "kafka_server_socketservermetrics_connections{listener=\"%s\"} %llu\n",
			  label_safe(s->listeners[i]), (unsigned long long)(created > closed ? created - closed : 0));
	}
	mb_head(m, "kafka_server_socketservermetrics_connection_creation_total", "counter",
		"Connections accepted, by listener.");
	for (int i = 0; i < s->nlisteners; i++)
		mb_printf(m, "kafka_server_socketservermetrics_connection_creation_total{listener=\"%s\"} %llu\n",
			  label_safe(s->listeners[i]), (unsigned long long)stats_load(&sc->listener_created[i]));
}

static void metrics_partitions(struct mbuf *m, const struct stats_snap *s)
{
	static const char *states[5] = { "Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead" };

	mb_head(m, "kafka_server_replicamanager_partitioncount", "gauge", "Partitions on this broker.");
	mb_printf(m, "kafka_server_replicamanager_partitioncount %d\n", s->nparts);
	mb_head(m, "kafka_server_replicamanager_leadercount", "gauge", "Partitions this broker leads.");
	mb_printf(m, "kafka_server_replicamanager_leadercount %d\n", s->leaders);
	metrics_replication(m, s);
	mb_head(m, "kafka_server_delayedoperationpurgatory_purgatorysize", "gauge",
		"Requests waiting: acks=all produces (for a sync round or the ISR), long-poll fetches.");
	mb_printf(m, "kafka_server_delayedoperationpurgatory_purgatorysize{delayed_operation=\"Produce\"} %d\n",
		  s->purgatory_produce);
	mb_printf(m, "kafka_server_delayedoperationpurgatory_purgatorysize{delayed_operation=\"Fetch\"} %d\n",
		  s->purgatory_fetch);
	mb_head(m, "kafka_log_log_size", "gauge", "Bytes in all segments of a partition.");
	for (int32_t i = 0; i < s->nparts; i++)
		mb_printf(m, "kafka_log_log_size{topic=\"%s\",partition=\"%d\"} %lld\n",
			  label_safe(s->topics[s->parts[i].topic].name), s->parts[i].partition,
			  (long long)s->parts[i].size_bytes);
	mb_head(m, "kafka_log_log_logendoffset", "gauge", "Log end offset of a partition.");
	for (int32_t i = 0; i < s->nparts; i++)
		mb_printf(m, "kafka_log_log_logendoffset{topic=\"%s\",partition=\"%d\"} %lld\n",
			  label_safe(s->topics[s->parts[i].topic].name), s->parts[i].partition,
			  (long long)s->parts[i].log_end_offset);
	mb_head(m, "kafka_coordinator_group_groupmetadatamanager_numgroups", "gauge", "Consumer groups by state.");
	for (int i = 0; i < 5; i++)
		mb_printf(m, "kafka_coordinator_group_groupmetadatamanager_numgroups{state=\"%s\"} %d\n", states[i],
			  s->groups_by_state[i]);
	mb_head(m, "gregor_transactions", "gauge", "Transactional ids held by this transaction coordinator, by state.");
	for (int i = 0; i < TXN_STATE_COUNT; i++)
		mb_printf(m, "gregor_transactions{state=\"%s\"} %d\n", txn_state_name((enum txn_state)i),
			  s->txns_by_state[i]);
	metrics_lags(m, s);
	metrics_quotas(m, s);
	mb_head(m, "gregor_metrics_snapshot_seconds", "gauge",
		"Event-loop time spent copying the state this scrape shows (topics, partitions, groups).");
	mb_printf(m, "gregor_metrics_snapshot_seconds %.6f\n", (double)s->build_us / 1e6);
	mb_head(m, "kafka_server_socketservermetrics_connections", "gauge", "Kafka client connections open.");
	mb_printf(m, "kafka_server_socketservermetrics_connections %d\n", s->connections);
	metrics_listeners(m, s);
}

/* One histogram: non-cumulative bucket counts, their bounds in ms, count and sum in microseconds. */
static void metrics_histogram(struct mbuf *m, const char *name, const char *labels, const uint64_t *buckets,
			      const double *bounds, int n, uint64_t count, uint64_t sum_us)
{
	uint64_t cum = 0;

	for (int i = 0; i < n; i++) {
		cum += stats_load(&buckets[i]);
		mb_printf(m, "%s_bucket{%s%sle=\"%g\"} %llu\n", name, labels, labels[0] ? "," : "", bounds[i],
			  (unsigned long long)cum);
	}
	if (count < cum)
		count = cum; /* read a moment apart: never let +Inf fall below a bucket */
	mb_printf(m, "%s_bucket{%s%sle=\"+Inf\"} %llu\n", name, labels, labels[0] ? "," : "",
		  (unsigned long long)count);
	mb_printf(m, "%s_sum%s%s%s %.3f\n", name, labels[0] ? "{" : "", labels, labels[0] ? "}" : "",
		  (double)sum_us / 1000.0);
	mb_printf(m, "%s_count%s%s%s %llu\n", name, labels[0] ? "{" : "", labels, labels[0] ? "}" : "",
		  (unsigned long long)count);
}

/* A request slot's name: the API's, or Kafka's FetchConsumer / FetchFollower; NULL for keys without a schema. */
static const char *metrics_slot_name(int slot)
{
	if (slot == STATS_FETCH_CONSUMER)
		return "FetchConsumer";
	if (slot == STATS_FETCH_FOLLOWER)
		return "FetchFollower";
	return proto_apis[slot].name;
}

/* Error codes in responses (and refused requests as INVALID_REQUEST), by API and code. */
static void metrics_errors(struct mbuf *m)
{
	mb_head(m, "kafka_network_requestmetrics_errors_total", "counter",
		"Error codes in responses by API and error (a request refused by closing its connection: "
		"INVALID_REQUEST).");
	for (int a = 0; a < API_COUNT; a++)
		for (int e = 0; e < STATS_ERRCODES && proto_apis[a].name; e++) {
			uint64_t n = stats_load(&stats_counters.errors[a][e]);

			if (n)
				mb_printf(
					m,
					"kafka_network_requestmetrics_errors_total{request=\"%s\",error=\"%s\"} %llu\n",
					proto_apis[a].name, kerr_name(stats_slot_errcode(e)), (unsigned long long)n);
		}
}

static void metrics_requests(struct mbuf *m)
{
	struct stats_counters *sc = &stats_counters;
	char labels[96];

	mb_head(m, "kafka_network_requestmetrics_requests_total", "counter",
		"Requests received, by API and version (Fetch also as FetchConsumer and FetchFollower).");
	for (int a = 0; a < STATS_SLOTS; a++)
		for (int v = 0; v < STATS_VERSIONS; v++) {
			uint64_t n = stats_load(&sc->requests[a][v]);

			if (n && metrics_slot_name(a))
				mb_printf(m,
					  "kafka_network_requestmetrics_requests_total{request=\"%s\",version=\"%d\"} "
					  "%llu\n",
					  metrics_slot_name(a), v, (unsigned long long)n);
		}
	metrics_errors(m);
	mb_head(m, "kafka_network_requestmetrics_totaltimems", "histogram",
		"Time from a request read to its response queued, in ms, by API.");
	for (int a = 0; a < STATS_SLOTS; a++) {
		uint64_t count = stats_load(&sc->lat_count[a]);

		if (!count || !metrics_slot_name(a))
			continue;
		snprintf(labels, sizeof(labels), "request=\"%s\"", metrics_slot_name(a));
		metrics_histogram(m, "kafka_network_requestmetrics_totaltimems", labels, sc->lat_bucket[a],
				  stats_lat_bounds_ms, STATS_LAT_BUCKETS, count, stats_load(&sc->lat_sum_us[a]));
	}
}

static void metrics_sync(struct mbuf *m)
{
	struct stats_counters *sc = &stats_counters;

	mb_head(m, "kafka_log_logflushstats_logflushrateandtimems", "histogram",
		"Duration of one group-commit round of fdatasyncs, in ms.");
	metrics_histogram(m, "kafka_log_logflushstats_logflushrateandtimems", "", sc->sync_bucket, stats_sync_bounds_ms,
			  STATS_SYNC_BUCKETS, stats_load(&sc->sync_count), stats_load(&sc->sync_sum_us));
	mb_head(m, "gregor_log_flush_partitions_total", "counter", "Partitions synced, summed over sync rounds.");
	mb_printf(m, "gregor_log_flush_partitions_total %llu\n", (unsigned long long)stats_load(&sc->sync_parts));
	mb_head(m, "gregor_log_flush_bytes_total", "counter", "Record bytes made durable, summed over sync rounds.");
	mb_printf(m, "gregor_log_flush_bytes_total %llu\n", (unsigned long long)stats_load(&sc->sync_bytes));
	mb_head(m, "gregor_network_sendfile_bytes_total", "counter",
		"Record bytes sent to consumers and followers with sendfile, never copied by the broker.");
	mb_printf(m, "gregor_network_sendfile_bytes_total %llu\n", (unsigned long long)send_sendfile_bytes());
	mb_head(m, "gregor_network_copied_bytes_total", "counter",
		"Record bytes read into a buffer before they were sent (TLS listeners).");
	mb_printf(m, "gregor_network_copied_bytes_total %llu\n", (unsigned long long)send_copied_bytes());
}

/* process_* from /proc/self: CPU seconds, resident memory, open and maximum descriptors, start time. */
static void metrics_process(struct mbuf *m)
{
	char buf[1024], *p;
	FILE *f = fopen("/proc/self/stat", "r");
	unsigned long long ut = 0, st = 0, rss = 0;
	long tck = sysconf(_SC_CLK_TCK), page = sysconf(_SC_PAGESIZE);
	int nfd = 0;
	DIR *d;
	struct dirent *de;
	struct rlimit rl;

	if (f && fgets(buf, sizeof(buf), f) && (p = strrchr(buf, ')')))
		sscanf(p + 2,
		       "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %*d %*d %*d %*d %*d %*d %*u %*u %llu",
		       &ut, &st, &rss);
	if (f)
		fclose(f);
	d = opendir("/proc/self/fd");
	while (d && (de = readdir(d)))
		nfd += de->d_name[0] != '.';
	if (d) {
		closedir(d);
		nfd--; /* the directory's own descriptor */
	}
	getrlimit(RLIMIT_NOFILE, &rl);
	mb_head(m, "process_cpu_seconds_total", "counter", "User and system CPU time spent, in seconds.");
	mb_printf(m, "process_cpu_seconds_total %.2f\n", (double)(ut + st) / (double)tck);
	mb_head(m, "process_resident_memory_bytes", "gauge", "Resident memory size in bytes.");
	mb_printf(m, "process_resident_memory_bytes %llu\n", rss * (unsigned long long)page);
	mb_head(m, "process_open_fds", "gauge", "Open file descriptors.");
	mb_printf(m, "process_open_fds %d\n", nfd);
	mb_head(m, "process_max_fds", "gauge", "Limit of open file descriptors.");
	mb_printf(m, "process_max_fds %llu\n", (unsigned long long)rl.rlim_cur);
}

char *metrics_render(size_t *len)
{
	struct mbuf m = { 0 };
	struct stats_snap *s = stats_snap_get();

	metrics_topics(&m, s);
	if (s)
		metrics_partitions(&m, s);
	metrics_requests(&m);
	metrics_sync(&m);
	metrics_process(&m);
	stats_snap_put(s);
	if (m.err || !m.p) {
		free(m.p);
		return NULL;
	}
	*len = m.len;
	return m.p;
}
