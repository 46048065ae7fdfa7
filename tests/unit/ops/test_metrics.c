/* test_metrics.c - the Prometheus text of the broker's counters and histograms (no snapshot, no loop). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/stats.h"
#include "broker/stats_snap.h"
#include "ops/metrics.h"
#include "proto/kerr.h"

static char *render(void)
{
	size_t len = 0;
	char *text = metrics_render(&len);

	assert_non_null(text);
	assert_int_equal(strlen(text), len);
	return text;
}

static void assert_line(const char *text, const char *line)
{
	char want[512];

	snprintf(want, sizeof(want), "\n%s\n", line);
	if (!strstr(text, want))
		fail_msg("missing line '%s'", line);
}

static void test_request_histogram(void **state)
{
	char *text;

	(void)state;
	stats_request(API_Produce, 7, 0, false, false);    /* le 0.5 */
	stats_request(API_Produce, 7, 700, false, false);  /* le 1 */
	stats_request(API_Produce, 99, 3000, true, false); /* le 5, counted as version 16, refused */
	stats_request(-1, 0, 10, false, false);            /* not an API: ignored */
	stats_request(API_COUNT, 0, 10, false, false);     /* idem */
	text = render();
	assert_line(text, "kafka_network_requestmetrics_requests_total{request=\"Produce\",version=\"7\"} 2");
	assert_line(text, "kafka_network_requestmetrics_requests_total{request=\"Produce\",version=\"16\"} 1");
	assert_line(text, "kafka_network_requestmetrics_errors_total{request=\"Produce\",error=\"INVALID_REQUEST\"} 1");
	assert_line(text, "kafka_network_requestmetrics_totaltimems_bucket{request=\"Produce\",le=\"0.5\"} 1");
	assert_line(text, "kafka_network_requestmetrics_totaltimems_bucket{request=\"Produce\",le=\"1\"} 2");
	assert_line(text, "kafka_network_requestmetrics_totaltimems_bucket{request=\"Produce\",le=\"2\"} 2");
	assert_line(text, "kafka_network_requestmetrics_totaltimems_bucket{request=\"Produce\",le=\"5\"} 3");
	assert_line(text, "kafka_network_requestmetrics_totaltimems_bucket{request=\"Produce\",le=\"+Inf\"} 3");
	assert_line(text, "kafka_network_requestmetrics_totaltimems_sum{request=\"Produce\"} 3.700");
	assert_line(text, "kafka_network_requestmetrics_totaltimems_count{request=\"Produce\"} 3");
	assert_null(strstr(text, "request=\"Fetch\"")); /* no series for APIs not used */
	assert_line(text, "# TYPE kafka_network_requestmetrics_totaltimems histogram");
	free(text);
}

static void test_topic_totals_and_sync(void **state)
{
	char *text;

	(void)state;
	stats_topic_in((struct kstr){ "a", 1 }, 100, 3);
	stats_topic_in((struct kstr){ "bb", 2 }, 50, 1);
	stats_topic_out((struct kstr){ "a", 1 }, 70);
	stats_sync_round(2000, 4, 1000); /* 2 ms: le 2.5 */
	stats_sync_round(-5, 1, 24);     /* a clock step backwards counts as 0 */
	text = render();
	assert_line(text, "kafka_server_brokertopicmetrics_bytesin_total 150");
	assert_line(text, "kafka_server_brokertopicmetrics_messagesin_total 4");
	assert_line(text, "kafka_server_brokertopicmetrics_bytesout_total 70");
	assert_line(text, "kafka_log_logflushstats_logflushrateandtimems_bucket{le=\"0.1\"} 1");
	assert_line(text, "kafka_log_logflushstats_logflushrateandtimems_bucket{le=\"2.5\"} 2");
	assert_line(text, "kafka_log_logflushstats_logflushrateandtimems_count 2");
	assert_line(text, "kafka_log_logflushstats_logflushrateandtimems_sum 2.000");
	assert_line(text, "gregor_log_flush_partitions_total 5");
	assert_line(text, "gregor_log_flush_bytes_total 1024");
	assert_non_null(strstr(text, "\nprocess_open_fds "));
	assert_non_null(strstr(text, "\nprocess_resident_memory_bytes "));
	free(text);
}

/* Error codes in a response, nested ones included, counted by API and code; NONE is not an error. */
static void test_response_errors(void **state)
{
	struct ProduceResponsePartition parts[3] = { { .ErrorCode = KERR_UNKNOWN_TOPIC_OR_PARTITION },
						     { .ErrorCode = KERR_NONE },
						     { .ErrorCode = KERR_UNKNOWN_TOPIC_OR_PARTITION } };
	struct ProduceResponseTopic topic = { .PartitionResponses = { parts, 3 } };
	struct ProduceResponse out = { .Responses = { &topic, 1 } };
	struct InitProducerIdResponse ipid = { .ErrorCode = 500 }; /* outside 1..127 */
	char *text;

	(void)state;
	stats_response_errors(API_Produce, 9, &out);
	stats_response_errors(API_InitProducerId, 4, &ipid);
	stats_request(API_Fetch, 12, 100, false, true);
	stats_request(API_Fetch, 12, 100, false, false);
	stats_request(API_Fetch, 12, 100, false, false);
	stats_isr_change(true);
	text = render();
	assert_line(text, "kafka_network_requestmetrics_errors_total{request=\"Produce\",error=\"UNKNOWN_TOPIC_OR_"
			  "PARTITION\"} 2");
	assert_line(text, "kafka_network_requestmetrics_errors_total{request=\"InitProducerId\",error=\"UNKNOWN_SERVER_"
			  "ERROR\"} 1");
	assert_null(strstr(text, "error=\"NONE\""));
	assert_line(text, "kafka_network_requestmetrics_requests_total{request=\"Fetch\",version=\"12\"} 3");
	assert_line(text, "kafka_network_requestmetrics_requests_total{request=\"FetchFollower\",version=\"12\"} 1");
	assert_line(text, "kafka_network_requestmetrics_requests_total{request=\"FetchConsumer\",version=\"12\"} 2");
	assert_line(text, "kafka_network_requestmetrics_totaltimems_count{request=\"FetchFollower\"} 1");
	free(text);
}

/* Without a loop attached a scrape does not wait and shows no per-partition series. */
static void test_no_loop_no_snapshot(void **state)
{
	char *text;

	(void)state;
	assert_null(stats_snap_get());
	text = render();
	assert_null(strstr(text, "kafka_log_log_size"));
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_request_histogram),
		cmocka_unit_test(test_topic_totals_and_sync),
		cmocka_unit_test(test_response_errors),
		cmocka_unit_test(test_no_loop_no_snapshot),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
