/* test_znode.c - Kafka's znode JSON documents (cluster/znode.c): exact shapes, round trips, bad input. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/znode.h"

static json_t *load(const char *s)
{
	json_t *j = json_loads(s, 0, NULL);

	assert_non_null(j);
	return j;
}

/* A two-listener broker with a rack, encoded, has exactly Kafka's version 5 keys and values. */
static void test_broker_encode_v5(void **state)
{
	struct znode_broker zb = { .id = 7, .timestamp_ms = 1700000000123, .has_rack = true };
	const char *want = "{\"features\":{},\"listener_security_protocol_map\":{\"INTERNAL\":\"SSL\",\"PLAINTEXT\":"
			   "\"PLAINTEXT\"},\"endpoints\":[\"INTERNAL://10.0.0.7:9093\",\"PLAINTEXT://"
			   "broker7:9092\"],\"jmx_port\":-1,\"host\":\"broker7\",\"port\":9092,\"timestamp\":"
			   "\"1700000000123\",\"version\":5,\"rack\":\"rack-a\"}";
	json_t *got, *exp;
	char *doc;

	(void)state;
	strcpy(zb.rack, "rack-a");
	assert_int_equal(znode_endpoints_parse(&zb, "INTERNAL://10.0.0.7:9093,PLAINTEXT://broker7:9092",
					       "INTERNAL:SSL,PLAINTEXT:PLAINTEXT"),
			 0);
	doc = znode_broker_encode(&zb);
	assert_non_null(doc);
	got = load(doc);
	exp = load(want);
	if (!json_equal(got, exp))
		fail_msg("got %s", doc);
	json_decref(got);
	json_decref(exp);
	free(doc);
}

/* Without a PLAINTEXT listener host is null and port -1; without a rack there is no rack key. */
static void test_broker_encode_no_plaintext_no_rack(void **state)
{
	struct znode_broker zb = { .id = 1, .timestamp_ms = 5 };
	json_t *got;
	char *doc;

	(void)state;
	assert_int_equal(znode_endpoints_parse(&zb, "SSL://h:9093", NULL), 0);
	doc = znode_broker_encode(&zb);
	assert_non_null(doc);
	got = load(doc);
	assert_true(json_is_null(json_object_get(got, "host")));
	assert_int_equal(json_integer_value(json_object_get(got, "port")), -1);
	assert_null(json_object_get(got, "rack"));
	assert_string_equal(
		json_string_value(json_object_get(json_object_get(got, "listener_security_protocol_map"), "SSL")),
		"SSL");
	json_decref(got);
	free(doc);
}

/* encode then decode gives the same registration back, IPv6 hosts included. */
static void test_broker_round_trip(void **state)
{
	struct znode_broker zb = { .id = 3, .timestamp_ms = 42, .has_rack = true }, back;
	char *doc;

	(void)state;
	strcpy(zb.rack, "r1");
	assert_int_equal(znode_endpoints_parse(&zb, "PLAINTEXT://[::1]:9092,REPL://127.0.0.1:9192",
					       "PLAINTEXT:PLAINTEXT,REPL:PLAINTEXT"),
			 0);
	assert_string_equal(zb.endpoints[0].host, "::1");
	doc = znode_broker_encode(&zb);
	assert_non_null(doc);
	assert_non_null(strstr(doc, "\"PLAINTEXT://[::1]:9092\""));
	assert_int_equal(znode_broker_decode(doc, strlen(doc), 3, &back), 0);
	assert_int_equal(back.version, 5);
	assert_int_equal(back.timestamp_ms, 42);
	assert_true(back.has_rack);
	assert_string_equal(back.rack, "r1");
	assert_int_equal(back.nendpoints, 2);
	for (int i = 0; i < 2; i++) {
		assert_string_equal(back.endpoints[i].listener, zb.endpoints[i].listener);
		assert_string_equal(back.endpoints[i].protocol, zb.endpoints[i].protocol);
		assert_string_equal(back.endpoints[i].host, zb.endpoints[i].host);
		assert_int_equal(back.endpoints[i].port, zb.endpoints[i].port);
	}
	assert_string_equal(znode_broker_endpoint(&back, "REPL")->host, "127.0.0.1");
	assert_string_equal(znode_broker_endpoint(&back, "NOPE")->listener, "PLAINTEXT");
	free(doc);
}

/* What older Kafka versions wrote decodes too: v1 host/port only, v4 with a map, null rack. */
static void test_broker_decode_older_versions(void **state)
{
	const char *v1 = "{\"jmx_port\":-1,\"timestamp\":\"1\",\"host\":\"old\",\"version\":1,\"port\":9092}";
	const char *v4 = "{\"listener_security_protocol_map\":{\"CLIENT\":\"SASL_SSL\"},\"endpoints\":[\"CLIENT://"
			 "c:9095\"],\"rack\":null,\"jmx_port\":9999,\"host\":null,\"timestamp\":\"2\",\"port\":-1,"
			 "\"version\":4}";
	struct znode_broker zb;

	(void)state;
	assert_int_equal(znode_broker_decode(v1, strlen(v1), 9, &zb), 0);
	assert_int_equal(zb.id, 9);
	assert_int_equal(zb.nendpoints, 1);
	assert_string_equal(zb.endpoints[0].host, "old");
	assert_string_equal(zb.endpoints[0].listener, "PLAINTEXT");
	assert_int_equal(znode_broker_decode(v4, strlen(v4), 2, &zb), 0);
	assert_false(zb.has_rack);
	assert_string_equal(zb.endpoints[0].protocol, "SASL_SSL");
	assert_int_equal(zb.endpoints[0].port, 9095);
}

/* Malformed registrations are -EBADMSG, never a crash. */
static void test_broker_decode_rejects(void **state)
{
	static const char *const bad[] = {
		"",
		"not json",
		"[1,2]",
		"{\"version\":5}",
		"{\"version\":\"5\",\"endpoints\":[]}",
		"{\"version\":5,\"endpoints\":\"PLAINTEXT://h:1\"}",
		"{\"version\":5,\"endpoints\":[\"PLAINTEXT//h:1\"]}",
		"{\"version\":5,\"endpoints\":[\"PLAINTEXT://h:70000\"]}",
		"{\"version\":5,\"endpoints\":[\"PLAINTEXT://h:x\"]}",
		"{\"version\":5,\"endpoints\":[7]}",
		"{\"version\":5,\"endpoints\":[],\"rack\":5}",
		"{\"version\":1,\"host\":\"h\"}",
		"{\"version\":5,\"version\":5,\"endpoints\":[]}",
	};
	struct znode_broker zb;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (znode_broker_decode(bad[i], strlen(bad[i]), 1, &zb) != -EBADMSG)
			fail_msg("accepted '%s'", bad[i]);
	assert_int_equal(znode_broker_decode(NULL, 0, 1, &zb), -EBADMSG);
}

static void test_endpoints_parse_rejects(void **state)
{
	struct znode_broker zb;

	(void)state;
	assert_int_equal(znode_endpoints_parse(&zb, "PLAINTEXT://h:1,PLAINTEXT://g:2", NULL), -EINVAL);
	assert_int_equal(znode_endpoints_parse(&zb, "h:9092", NULL), -EINVAL);
	assert_int_equal(znode_endpoints_parse(&zb, "://h:9092", NULL), -EINVAL);
	assert_int_equal(znode_endpoints_parse(&zb,
					       "A://h:1,B://h:2,C://h:3,D://h:4,E://h:5,F://h:6,G://h:7,H://h:8,"
					       "I://h:9",
					       NULL),
			 -EINVAL);
	assert_int_equal(znode_endpoints_parse(&zb, "PLAINTEXT://:9092", NULL), 0);
	assert_string_equal(zb.endpoints[0].host, "");
}

static void test_controller(void **state)
{
	char *doc = znode_controller_encode(2, 1700000000000);
	json_t *got = load(doc), *exp = load("{\"version\":1,\"brokerid\":2,\"timestamp\":\"1700000000000\"}");
	int32_t id = -1;

	(void)state;
	assert_true(json_equal(got, exp));
	assert_int_equal(znode_controller_decode(doc, strlen(doc), &id), 0);
	assert_int_equal(id, 2);
	assert_int_equal(znode_controller_decode("{\"version\":1}", 13, &id), -EBADMSG);
	assert_int_equal(znode_controller_decode("{\"brokerid\":-1}", 15, &id), -EBADMSG);
	assert_int_equal(znode_controller_decode("{\"brokerid\":\"1\"}", 16, &id), -EBADMSG);
	json_decref(got);
	json_decref(exp);
	free(doc);
}

static void test_cluster_id(void **state)
{
	char *doc = znode_cluster_id_encode("ujOOjVZERrWjanrCUXMP3w"), id[64], small[8];
	const char *empty = "{\"version\":\"1\",\"id\":\"\"}";
	json_t *got = load(doc), *exp = load("{\"version\":\"1\",\"id\":\"ujOOjVZERrWjanrCUXMP3w\"}");

	(void)state;
	assert_true(json_equal(got, exp));
	assert_int_equal(znode_cluster_id_decode(doc, strlen(doc), id, sizeof(id)), 0);
	assert_string_equal(id, "ujOOjVZERrWjanrCUXMP3w");
	assert_int_equal(znode_cluster_id_decode(doc, strlen(doc), small, sizeof(small)), -EBADMSG);
	assert_int_equal(znode_cluster_id_decode(empty, strlen(empty), id, sizeof(id)), -EBADMSG);
	assert_int_equal(znode_cluster_id_decode("{\"id\":\"a\\u0000b\"}", 17, id, sizeof(id)), -EBADMSG);
	json_decref(got);
	json_decref(exp);
	free(doc);
}

static void test_epoch_and_ids(void **state)
{
	int32_t v = -1;

	(void)state;
	assert_int_equal(znode_epoch_decode("17", 2, &v), 0);
	assert_int_equal(v, 17);
	assert_int_equal(znode_epoch_decode("2147483647", 10, &v), 0);
	assert_int_equal(znode_epoch_decode("2147483648", 10, &v), -EBADMSG);
	assert_int_equal(znode_epoch_decode("-1", 2, &v), -EBADMSG);
	assert_int_equal(znode_epoch_decode("", 0, &v), -EBADMSG);
	assert_int_equal(znode_epoch_decode("1 ", 2, &v), -EBADMSG);
	assert_int_equal(znode_broker_id_parse("1001", &v), 0);
	assert_int_equal(v, 1001);
	assert_int_equal(znode_broker_id_parse("seqid", &v), -EINVAL);
	assert_int_equal(znode_broker_id_parse("", &v), -EINVAL);
}

static void test_persistent_paths(void **state)
{
	static const char *const want[] = {
		"/brokers/ids",   "/brokers/topics",      "/brokers/seqid",          "/config/changes",
		"/config/topics", "/admin/delete_topics", "/isr_change_notification"
	};

	(void)state;
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		bool found = false;

		for (int j = 0; znode_persistent_paths[j]; j++)
			found |= !strcmp(znode_persistent_paths[j], want[i]);
		if (!found)
			fail_msg("%s is not created", want[i]);
	}
}

/* A topic's assignment and config documents have exactly Kafka's keys (version 3 with topic_id). */
static void test_topic_documents(void **state)
{
	const int32_t replicas[] = { 1, 2, 2, 3 };
	const char *names[] = { "cleanup.policy", "retention.ms" }, *values[] = { "compact", "1000" };
	char *doc = znode_topic_encode(replicas, 2, 2, "AAAAAAAAAAAAAAAAAAAAAA");
	json_t *got, *exp;

	(void)state;
	assert_non_null(doc);
	got = load(doc);
	exp = load("{\"version\":3,\"partitions\":{\"0\":[1,2],\"1\":[2,3]},\"topic_id\":"
		   "\"AAAAAAAAAAAAAAAAAAAAAA\",\"adding_replicas\":{},\"removing_replicas\":{}}");
	assert_true(json_equal(got, exp));
	json_decref(got);
	json_decref(exp);
	free(doc);
	doc = znode_topic_config_encode(names, values, 2);
	got = load(doc);
	exp = load("{\"version\":1,\"config\":{\"cleanup.policy\":\"compact\",\"retention.ms\":\"1000\"}}");
	assert_true(json_equal(got, exp));
	json_decref(got);
	json_decref(exp);
	free(doc);
	doc = znode_topic_config_encode(NULL, NULL, 0);
	assert_string_equal(doc, "{\"config\":{},\"version\":1}");
	free(doc);
}

/* /config/topics/<t> read back: what encode wrote, Kafka's own documents; non-strings and bad shapes refused. */
static void test_topic_config_decode(void **state)
{
	const char *names[] = { "cleanup.policy", "retention.ms" }, *values[] = { "compact", "1000" };
	char *doc = znode_topic_config_encode(names, values, 2);
	struct znode_config c;
	static const char *const bad[] = { "{\"version\":1,\"config\":{\"a\":1}}", "{\"version\":1}", "{\"config\":{}}",
					   "[1]", "{\"version\":1,\"config\":[]}" };

	(void)state;
	assert_int_equal(znode_topic_config_decode(doc, strlen(doc), &c), 0);
	assert_int_equal(c.n, 2);
	for (int i = 0; i < 2; i++) {
		int k = strcmp(c.names[i], "cleanup.policy") ? 1 : 0;

		assert_string_equal(c.names[i], names[k]);
		assert_string_equal(c.values[i], values[k]);
	}
	znode_topic_config_free(&c);
	free(doc);
	assert_int_equal(znode_topic_config_decode("{\"version\":1,\"config\":{}}", 25, &c), 0);
	assert_int_equal(c.n, 0);
	znode_topic_config_free(&c);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(znode_topic_config_decode(bad[i], strlen(bad[i]), &c), -EBADMSG);
}

/* Assignments as Kafka's versions wrote them decode; gaps, repeats and bad ids do not. */
static void test_topic_decode(void **state)
{
	const char *bad[] = {
		"{\"version\":3,\"partitions\":{\"0\":[1],\"2\":[2]}}",
		"{\"partitions\":{\"0\":[]}}",
		"{\"partitions\":{\"0\":[-1]}}",
		"{\"partitions\":{\"x\":[1]}}",
		"{\"partitions\":[[1]]}",
		"{\"version\":1}",
		"[1]",
		"{\"partitions\":{\"0\":[1,\"2\"]}}",
	};
	struct znode_topic zt;
	const char *v1 = "{\"version\":1,\"partitions\":{\"1\":[3,1],\"0\":[2,3]}}";

	(void)state;
	assert_int_equal(znode_topic_decode(v1, strlen(v1), &zt), 0);
	assert_int_equal(zt.nparts, 2);
	assert_int_equal(zt.parts[0].n, 2);
	assert_int_equal(zt.parts[0].ids[0], 2);
	assert_int_equal(zt.parts[1].ids[0], 3);
	assert_int_equal(zt.parts[1].ids[1], 1);
	znode_topic_free(&zt);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(znode_topic_decode(bad[i], strlen(bad[i]), &zt), -EBADMSG);
}

/* A partition state has Kafka's version 1 keys, round-trips, and leader -1 is allowed. */
static void test_state(void **state)
{
	struct znode_state st = { .leader = -1, .leader_epoch = 3, .controller_epoch = 2, .isr = { 1, { 5 } } }, back;
	char *doc = znode_state_encode(&st);
	json_t *got = load(doc),
	       *exp = load("{\"controller_epoch\":2,\"leader\":-1,\"version\":1,\"leader_epoch\":3,\"isr\":[5]}");
	const char *bad = "{\"controller_epoch\":2,\"leader\":-2,\"leader_epoch\":3,\"isr\":[5]}";

	(void)state;
	assert_true(json_equal(got, exp));
	assert_int_equal(znode_state_decode(doc, strlen(doc), &back), 0);
	assert_int_equal(back.leader, -1);
	assert_int_equal(back.leader_epoch, 3);
	assert_int_equal(back.controller_epoch, 2);
	assert_int_equal(back.isr.n, 1);
	assert_int_equal(back.isr.ids[0], 5);
	assert_int_equal(znode_state_decode(bad, strlen(bad), &back), -EBADMSG);
	json_decref(got);
	json_decref(exp);
	free(doc);
}

static void test_pid_block(void **state)
{
	char *doc = znode_pid_block_encode(2, 1000, 1999);
	json_t *got = load(doc),
	       *exp = load("{\"version\":1,\"broker\":2,\"block_start\":\"1000\",\"block_end\":\"1999\"}");
	const char *bad[] = {
		"{\"version\":1,\"broker\":2,\"block_start\":1000,\"block_end\":\"1999\"}",
		"{\"version\":1,\"broker\":2,\"block_start\":\"-1\",\"block_end\":\"999\"}",
		"{\"version\":1,\"broker\":2,\"block_start\":\"10\",\"block_end\":\"9\"}",
		"{\"version\":1,\"broker\":2,\"block_start\":\"1x\",\"block_end\":\"9\"}",
		"{\"version\":1,\"broker\":2,\"block_start\":\"0\",\"block_end\":\"99999999999999999999\"}",
		"[]",
	};
	int64_t start = -1, end = -1;

	(void)state;
	assert_true(json_equal(got, exp));
	assert_int_equal(znode_pid_block_decode(doc, strlen(doc), &start, &end), 0);
	assert_int_equal(start, 1000);
	assert_int_equal(end, 1999);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(znode_pid_block_decode(bad[i], strlen(bad[i]), &start, &end), -EBADMSG);
	json_decref(got);
	json_decref(exp);
	free(doc);
}

static void test_config_change(void **state)
{
	char *doc = znode_config_change_encode("topics/t1"), entity[16];
	json_t *got = load(doc), *exp = load("{\"version\":2,\"entity_path\":\"topics/t1\"}");
	const char *longer = "{\"version\":2,\"entity_path\":\"topics/a-much-longer-name\"}";
	const char *bad = "{\"version\":2,\"entity_path\":7}";

	(void)state;
	assert_true(json_equal(got, exp));
	assert_int_equal(znode_config_change_decode(doc, strlen(doc), entity, sizeof(entity)), 0);
	assert_string_equal(entity, "topics/t1");
	assert_int_equal(znode_config_change_decode(longer, strlen(longer), entity, sizeof(entity)), -EBADMSG);
	assert_int_equal(znode_config_change_decode(bad, strlen(bad), entity, sizeof(entity)), -EBADMSG);
	json_decref(got);
	json_decref(exp);
	free(doc);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_broker_encode_v5),
		cmocka_unit_test(test_broker_encode_no_plaintext_no_rack),
		cmocka_unit_test(test_broker_round_trip),
		cmocka_unit_test(test_broker_decode_older_versions),
		cmocka_unit_test(test_broker_decode_rejects),
		cmocka_unit_test(test_endpoints_parse_rejects),
		cmocka_unit_test(test_controller),
		cmocka_unit_test(test_cluster_id),
		cmocka_unit_test(test_epoch_and_ids),
		cmocka_unit_test(test_persistent_paths),
		cmocka_unit_test(test_topic_documents),
		cmocka_unit_test(test_topic_decode),
		cmocka_unit_test(test_topic_config_decode),
		cmocka_unit_test(test_state),
		cmocka_unit_test(test_pid_block),
		cmocka_unit_test(test_config_change),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
