/*
 * 6103-security-client-matrix.c - the librdkafka (C API) client of the
 * security matrix (driven by 6103-security-client-matrix.py): produces
 * N records with acks=all to a topic, then reads them back from the start
 * of partition 0 and checks each value, over whatever security settings
 * the driver passes.
 *
 *   6103-security-client-matrix BOOTSTRAP TOPIC N key=value...
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <librdkafka/rdkafka.h>

#include "../lib/itest.h"

static rd_kafka_conf_t *matrix_conf(const char *bootstrap, int argc, char **argv)
{
	rd_kafka_conf_t *conf = itest_conf_new(bootstrap);

	for (int i = 4; i < argc; i++) {
		char *eq = strchr(argv[i], '=');

		if (!eq)
			ITEST_FAIL("argument '%s' is not key=value", argv[i]);
		*eq = '\0';
		itest_conf_set(conf, argv[i], eq + 1);
		*eq = '=';
	}
	return conf;
}

static void matrix_produce(const char *bootstrap, const char *topic, int n, int argc, char **argv)
{
	rd_kafka_conf_t *conf = matrix_conf(bootstrap, argc, argv);
	char errstr[512], val[32];
	rd_kafka_t *rk;

	itest_conf_set(conf, "acks", "all");
	itest_conf_set(conf, "message.timeout.ms", "20000");
	rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr));
	if (!rk)
		ITEST_FAIL("producer: %s", errstr);
	for (int i = 0; i < n; i++) {
		snprintf(val, sizeof(val), "c-%06d", i);
		if (rd_kafka_producev(rk, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_PARTITION(0),
				      RD_KAFKA_V_VALUE(val, strlen(val)), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
				      RD_KAFKA_V_END))
			ITEST_FAIL("produce %d failed", i);
	}
	ITEST_EQ_INT(rd_kafka_flush(rk, 30000), RD_KAFKA_RESP_ERR_NO_ERROR, "flush");
	ITEST_EQ_INT(rd_kafka_outq_len(rk), 0, "records left undelivered");
	rd_kafka_destroy(rk);
}

static void matrix_consume(const char *bootstrap, const char *topic, int n, int argc, char **argv)
{
	rd_kafka_conf_t *conf = matrix_conf(bootstrap, argc, argv);
	rd_kafka_topic_partition_list_t *parts = rd_kafka_topic_partition_list_new(1);
	int64_t deadline = itest_now_ms() + 30000;
	char errstr[512], want[32];
	rd_kafka_t *rk;
	int got = 0;

	itest_conf_set(conf, "group.id", "matrix-c");
	rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, sizeof(errstr));
	if (!rk)
		ITEST_FAIL("consumer: %s", errstr);
	rd_kafka_topic_partition_list_add(parts, topic, 0)->offset = RD_KAFKA_OFFSET_BEGINNING;
	ITEST_EQ_INT(rd_kafka_assign(rk, parts), 0, "assign");
	while (got < n && itest_now_ms() < deadline) {
		rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 500);

		if (!m)
			continue;
		if (!m->err) {
			snprintf(want, sizeof(want), "c-%06d", got);
			ITEST_CHECK(m->len == strlen(want) && !memcmp(m->payload, want, m->len), "record %d is wrong",
				    got);
			got++;
		}
		rd_kafka_message_destroy(m);
	}
	ITEST_EQ_INT(got, n, "records read back");
	rd_kafka_topic_partition_list_destroy(parts);
	rd_kafka_consumer_close(rk);
	rd_kafka_destroy(rk);
}

int main(int argc, char **argv)
{
	if (argc < 4)
		ITEST_FAIL("usage: %s BOOTSTRAP TOPIC N key=value...", argv[0]);
	matrix_produce(argv[1], argv[2], atoi(argv[3]), argc, argv);
	matrix_consume(argv[1], argv[2], atoi(argv[3]), argc, argv);
	ITEST_LOG("librdkafka: %s records produced and read back on %s", argv[3], argv[2]);
	return 0;
}
