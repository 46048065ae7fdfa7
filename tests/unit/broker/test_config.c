/* test_config.c - broker settings, command line and topic settings. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "broker/config.h"
#include "broker/topic_config.h"

/* Kafka 3.x config/server.properties, comments trimmed. */
static const char stock_kafka[] =
	"############################# Server Basics #############################\n"
	"# The id of the broker. This must be set to a unique integer for each broker.\n"
	"broker.id=0\n"
	"#listeners=PLAINTEXT://:9092\n"
	"#advertised.listeners=PLAINTEXT://your.host.name:9092\n"
	"#listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL\n"
	"num.network.threads=3\n"
	"num.io.threads=8\n"
	"socket.send.buffer.bytes=102400\n"
	"socket.receive.buffer.bytes=102400\n"
	"socket.request.max.bytes=104857600\n"
	"log.dirs=/tmp/kafka-logs\n"
	"num.partitions=1\n"
	"num.recovery.threads.per.data.dir=1\n"
	"offsets.topic.replication.factor=1\n"
	"transaction.state.log.replication.factor=1\n"
	"transaction.state.log.min.isr=1\n"
	"#log.flush.interval.messages=10000\n"
	"#log.flush.interval.ms=1000\n"
	"log.retention.hours=168\n"
	"#log.retention.bytes=1073741824\n"
	"log.segment.bytes=1073741824\n"
	"log.retention.check.interval.ms=300000\n"
	"zookeeper.connect=localhost:2181\n"
	"zookeeper.connection.timeout.ms=18000\n"
	"group.initial.rebalance.delay.ms=0\n";

/* Kafka 3.x/4.x KRaft config/(kraft/)server.properties, comments trimmed. */
static const char stock_kraft[] = "process.roles=broker,controller\n"
				  "node.id=1\n"
				  "controller.quorum.voters=1@localhost:9093\n"
				  "controller.quorum.bootstrap.servers=localhost:9093\n"
				  "listeners=PLAINTEXT://:9092,CONTROLLER://:9093\n"
				  "inter.broker.listener.name=PLAINTEXT\n"
				  "advertised.listeners=PLAINTEXT://localhost:9092,CONTROLLER://localhost:9093\n"
				  "controller.listener.names=CONTROLLER\n"
				  "listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SSL:SSL\n"
				  "num.network.threads=3\n"
				  "num.io.threads=8\n"
				  "socket.send.buffer.bytes=102400\n"
				  "socket.receive.buffer.bytes=102400\n"
				  "socket.request.max.bytes=104857600\n"
				  "log.dirs=/tmp/kraft-combined-logs\n"
				  "num.partitions=1\n"
				  "num.recovery.threads.per.data.dir=1\n"
				  "offsets.topic.replication.factor=1\n"
				  "share.coordinator.state.topic.replication.factor=1\n"
				  "share.coordinator.state.topic.min.isr=1\n"
				  "transaction.state.log.replication.factor=1\n"
				  "transaction.state.log.min.isr=1\n"
				  "log.retention.hours=168\n"
				  "log.segment.bytes=1073741824\n"
				  "log.retention.check.interval.ms=300000\n";

static char tmpdir[64];

static int group_setup(void **state)
{
	(void)state;
	strcpy(tmpdir, "/tmp/test_config_XXXXXX");
	return mkdtemp(tmpdir) ? 0 : -1;
}

static int group_teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

/* Writes text to tmpdir/name; returns the path (static buffer). */
static const char *write_file(const char *name, const char *text)
{
	static char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	return path;
}

static char *read_all(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf = calloc(1, 65536);

	assert_non_null(f);
	assert_non_null(buf);
	buf[fread(buf, 1, 65535, f)] = '\0';
	fclose(f);
	return buf;
}

/* Runs config_parse_args with stdout and stderr captured into *out. */
static int run_args(int argc, char **argv, struct broker_cfg *cfg, const char **path, char **out)
{
	char cap[256];
	int fd, o1 = dup(1), o2 = dup(2), rc;

	snprintf(cap, sizeof(cap), "%s/captured", tmpdir);
	fd = open(cap, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	fflush(stdout);
	fflush(stderr);
	dup2(fd, 1);
	dup2(fd, 2);
	rc = config_parse_args(argc, argv, cfg, path);
	fflush(stdout);
	fflush(stderr);
	dup2(o1, 1);
	dup2(o2, 2);
	close(o1);
	close(o2);
	close(fd);
	*out = read_all(cap);
	return rc;
}

static void test_defaults(void **state)
{
	struct broker_cfg cfg;
	char buf[128], err[256];
	int src;

	(void)state;
	assert_int_equal(config_init(&cfg), 0);
	assert_int_equal(config_finalize(&cfg, err, sizeof(err)), 0);
	assert_int_equal(cfg.node_id, 0);
	assert_string_equal(cfg.listeners, "PLAINTEXT://127.0.0.1:9092");
	assert_null(cfg.advertised_listeners);
	assert_string_equal(config_advertised_listeners(&cfg), "PLAINTEXT://127.0.0.1:9092");
	assert_string_equal(cfg.log_dirs, "./data");
	assert_int_equal(cfg.num_partitions, 1);
	assert_int_equal(cfg.default_replication_factor, 1);
	assert_true(cfg.auto_create_topics_enable);
	assert_true(cfg.delete_topic_enable);
	assert_int_equal(cfg.message_max_bytes, 1048588);
	assert_int_equal(cfg.socket_request_max_bytes, 104857600);
	assert_int_equal(cfg.socket_send_buffer_bytes, -1);
	assert_int_equal(cfg.max_connections, INT32_MAX);
	assert_true(cfg.queued_max_request_bytes == 256LL << 20);
	assert_int_equal(cfg.log_segment_bytes, 1073741824);
	assert_true(config_retention_ms(&cfg) == 168LL * 3600 * 1000);
	assert_true(config_roll_ms(&cfg) == 168LL * 3600 * 1000);
	assert_true(config_roll_jitter_ms(&cfg) == 0);
	assert_true(cfg.log_retention_bytes == -1);
	assert_true(cfg.log_flush_interval_messages == INT64_MAX);
	assert_true(cfg.log_flush_interval_ms == -1);
	assert_int_equal(cfg.log_message_timestamp_type, CONFIG_TS_CREATE_TIME);
	assert_int_equal(cfg.offsets_topic_num_partitions, 50);
	assert_int_equal(cfg.offsets_retention_minutes, 10080);
	assert_int_equal(cfg.group_initial_rebalance_delay_ms, 3000);
	assert_int_equal(cfg.transaction_max_timeout_ms, 900000);
	assert_int_equal(cfg.transactional_id_expiration_ms, 604800000);
	assert_int_equal(cfg.producer_id_expiration_ms, 86400000);
	assert_int_equal(cfg.transaction_state_log_num_partitions, 50);
	assert_int_equal(cfg.min_insync_replicas, 1);
	assert_string_equal(cfg.cluster_id, "");
	assert_string_equal(cfg.log_debug, "");
	assert_true(cfg.log_cleaner_enable);
	assert_int_equal(cfg.log_cleaner_threads, 1);
	assert_true(cfg.log_cleaner_backoff_ms == 15000);
	assert_true(cfg.log_cleaner_dedupe_buffer_size == 134217728);
	assert_true(strtod(cfg.log_cleaner_io_max_bytes_per_second, NULL) == DBL_MAX);
	assert_true(cfg.log_cleaner_delete_retention_ms == 86400000);
	assert_true(cfg.log_cleaner_min_compaction_lag_ms == 0);
	assert_true(cfg.log_cleaner_max_compaction_lag_ms == INT64_MAX);
	assert_string_equal(cfg.log_cleaner_min_cleanable_ratio, "0.5");
	assert_int_equal(config_get(&cfg, "log.retention.ms", buf, sizeof(buf), &src), 1);
	assert_int_equal(src, CONFIG_SOURCE_DEFAULT);
	assert_int_equal(config_get(&cfg, "num.partitions", buf, sizeof(buf), &src), 0);
	assert_string_equal(buf, "1");
	assert_int_equal(config_get(&cfg, "nope", buf, sizeof(buf), NULL), -ENOENT);
	config_release(&cfg);
}

static void test_table_sane(void **state)
{
	const struct conf_table *t = config_table();

	(void)state;
	for (size_t i = 0; i < t->ndefs; i++) {
		const struct conf_def *d = &t->defs[i];

		assert_non_null(d->doc);
		assert_true(strlen(d->doc) > 0);
		assert_int_equal(conf_index(t, d->name), (int)i); /* no duplicates */
		assert_true(config_kafka_type(d) != CONFIG_KTYPE_UNKNOWN);
	}
	t = topic_cfg_table();
	for (size_t i = 0; i < t->ndefs; i++) {
		const char *syn = topic_cfg_synonym(t->defs[i].name);

		assert_int_equal(conf_index(t, t->defs[i].name), (int)i);
		if (syn)
			assert_non_null(conf_find(config_table(), syn));
	}
}

static void test_stock_files(void **state)
{
	struct broker_cfg cfg;
	char err[256];
	const char *path;

	(void)state;
	assert_int_equal(config_init(&cfg), 0);
	path = write_file("kafka.properties", stock_kafka);
	assert_int_equal(config_load(&cfg, path, err, sizeof(err)), 0);
	assert_int_equal(config_finalize(&cfg, err, sizeof(err)), 0);
	assert_string_equal(cfg.log_dirs, "/tmp/kafka-logs");
	assert_int_equal(cfg.socket_send_buffer_bytes, 102400);
	assert_int_equal(cfg.group_initial_rebalance_delay_ms, 0);
	assert_string_equal(cfg.zookeeper_connect, "localhost:2181");
	config_release(&cfg);

	assert_int_equal(config_init(&cfg), 0);
	path = write_file("kraft.properties", stock_kraft);
	assert_int_equal(config_load(&cfg, path, err, sizeof(err)), 0);
	assert_int_equal(config_finalize(&cfg, err, sizeof(err)), 0);
	assert_int_equal(cfg.node_id, 1);
	assert_int_equal(cfg.broker_id, 1);
	assert_string_equal(cfg.listeners, "PLAINTEXT://:9092,CONTROLLER://:9093");
	assert_string_equal(config_advertised_listeners(&cfg),
			    "PLAINTEXT://localhost:9092,CONTROLLER://localhost:9093");
	config_release(&cfg);
}

static void test_shipped_config(void **state)
{
	struct broker_cfg cfg;
	char err[256];

	(void)state;
	if (access("config/server.properties", R_OK))
		skip();
	assert_int_equal(config_init(&cfg), 0);
	assert_int_equal(config_load(&cfg, "config/server.properties", err, sizeof(err)), 0);
	assert_int_equal(config_finalize(&cfg, err, sizeof(err)), 0);
	assert_string_equal(cfg.listeners, "PLAINTEXT://127.0.0.1:9092");
	assert_string_equal(cfg.log_dirs, "./data");
	config_release(&cfg);
}

/* listener.name.<name>.ssl.* overrides one listener's ssl.* value; other prefixed keys are unknown. */
static void test_listener_ssl(void **state)
{
	struct broker_cfg cfg;
	char err[256];

	(void)state;
	assert_int_equal(config_init(&cfg), 0);
	assert_int_equal(config_set(&cfg, "ssl.client.auth", "none", err, sizeof(err)), 0);
	assert_int_equal(config_set(&cfg, "listener.name.EXTERNAL.ssl.client.auth", "requested", err, sizeof(err)), 0);
	assert_int_equal(config_set(&cfg, "listener.name.external.ssl.client.auth", "required", err, sizeof(err)), 0);
	assert_string_equal(config_listener_ssl(&cfg, "EXTERNAL", "ssl.client.auth", "none"), "required");
	assert_string_equal(config_listener_ssl(&cfg, "INTERNAL", "ssl.client.auth", "none"), "none");
	assert_int_equal(cfg.nlistener_ssl, 1);
	assert_int_equal(config_set(&cfg, "listener.name.external.ssl.bogus", "x", err, sizeof(err)), -ENOENT);
	assert_int_equal(config_set(&cfg, "listener.name.external.log.dirs", "x", err, sizeof(err)), -ENOENT);
	assert_int_equal(config_set(&cfg, "listener.name..ssl.client.auth", "x", err, sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, "unknown setting"));
	config_release(&cfg);
}

static void test_retention_precedence(void **state)
{
	struct broker_cfg cfg;
	char err[256];

	(void)state;
	assert_int_equal(config_init(&cfg), 0);
	assert_int_equal(config_set(&cfg, "log.retention.hours", "1", err, sizeof(err)), 0);
	assert_true(config_retention_ms(&cfg) == 3600000);
	assert_int_equal(config_set(&cfg, "log.retention.minutes", "2", err, sizeof(err)), 0);
	assert_true(config_retention_ms(&cfg) == 120000);
	assert_int_equal(config_set(&cfg, "log.retention.ms", "1500", err, sizeof(err)), 0);
	assert_true(config_retention_ms(&cfg) == 1500);
	assert_int_equal(config_set(&cfg, "log.retention.hours", "5", err, sizeof(err)), 0);
	assert_true(config_retention_ms(&cfg) == 1500); /* ms still wins */
	assert_int_equal(config_set(&cfg, "log.retention.ms", "-1", err, sizeof(err)), 0);
	assert_true(config_retention_ms(&cfg) == -1);
	assert_int_equal(config_set(&cfg, "log.retention.ms", "-2", err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "invalid value '-2' for 'log.retention.ms': expected an integer of at least -1");
	assert_int_equal(config_set(&cfg, "log.roll.hours", "2", err, sizeof(err)), 0);
	assert_true(config_roll_ms(&cfg) == 7200000);
	assert_int_equal(config_set(&cfg, "log.roll.ms", "100", err, sizeof(err)), 0);
	assert_true(config_roll_ms(&cfg) == 100);
	config_release(&cfg);

	assert_int_equal(config_init(&cfg), 0);
	assert_int_equal(config_set(&cfg, "log.retention.hours", "-1", err, sizeof(err)), 0);
	assert_true(config_retention_ms(&cfg) == -1);
	config_release(&cfg);
}

static void test_aliases(void **state)
{
	struct broker_cfg cfg;
	char err[256];

	(void)state;
	assert_int_equal(config_init(&cfg), 0);
	assert_int_equal(config_set(&cfg, "broker.id", "7", err, sizeof(err)), 0);
	assert_int_equal(config_set(&cfg, "log.dir", "/x", err, sizeof(err)), 0);
	assert_int_equal(config_finalize(&cfg, err, sizeof(err)), 0);
	assert_int_equal(cfg.node_id, 7);
	assert_string_equal(cfg.log_dirs, "/x");
	config_release(&cfg);

	assert_int_equal(config_init(&cfg), 0);
	assert_int_equal(config_set(&cfg, "log.dir", "/x", err, sizeof(err)), 0);
	assert_int_equal(config_set(&cfg, "log.dirs", "/y,/z", err, sizeof(err)), 0);
	assert_int_equal(config_set(&cfg, "node.id", "3", err, sizeof(err)), 0);
	assert_int_equal(config_finalize(&cfg, err, sizeof(err)), 0);
	assert_string_equal(cfg.log_dirs, "/y,/z"); /* log.dirs wins */
	assert_int_equal(cfg.broker_id, 3);
	config_release(&cfg);

	assert_int_equal(config_init(&cfg), 0);
	assert_int_equal(config_set(&cfg, "broker.id", "1", err, sizeof(err)), 0);
	assert_int_equal(config_set(&cfg, "node.id", "2", err, sizeof(err)), 0);
	assert_int_equal(config_finalize(&cfg, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "broker.id (1) and node.id (2) differ");
	config_release(&cfg);

	assert_int_equal(config_init(&cfg), 0);
	assert_int_equal(config_set(&cfg, "log.debug", "net,bogus", err, sizeof(err)), 0);
	assert_int_equal(config_finalize(&cfg, err, sizeof(err)), -EINVAL);
	config_release(&cfg);
}

static void test_file_errors(void **state)
{
	struct broker_cfg cfg;
	char err[512], want[600];
	const char *path;

	(void)state;
	assert_int_equal(config_init(&cfg), 0);
	path = write_file("bad.properties", "# hello\nnum.partitions=2\nfoo.bar=1\n");
	assert_int_equal(config_load(&cfg, path, err, sizeof(err)), -EINVAL);
	snprintf(want, sizeof(want), "%s:3: unknown setting 'foo.bar'", path);
	assert_string_equal(err, want);
	path = write_file("bad2.properties", "\n\nnum.partitions = 0\n");
	assert_int_equal(config_load(&cfg, path, err, sizeof(err)), -EINVAL);
	snprintf(want, sizeof(want),
		 "%s:3: invalid value '0' for 'num.partitions': expected an integer between 1 and 1000000", path);
	assert_string_equal(err, want);
	config_release(&cfg);
}

/* Finalizes a default config with key=value set; returns config_finalize's result and its message in err. */
static int finalize_with(const char *key, const char *value, char *err, size_t errlen)
{
	struct broker_cfg cfg;
	int rc;

	assert_int_equal(config_init(&cfg), 0);
	err[0] = 0;
	rc = config_set(&cfg, key, value, err, errlen);
	if (!rc)
		rc = config_finalize(&cfg, err, errlen);
	config_release(&cfg);
	return rc;
}

static void test_cleaner_values(void **state)
{
	char err[256];

	(void)state;
	assert_int_equal(finalize_with("log.cleaner.threads", "1", err, sizeof(err)), 0);
	assert_int_equal(finalize_with("log.cleaner.threads", "2", err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "log.cleaner.threads is 2: only 1 cleaner thread is supported");
	assert_int_equal(finalize_with("log.cleaner.threads", "0", err, sizeof(err)), -EINVAL);
	assert_int_equal(finalize_with("log.cleaner.min.cleanable.ratio", "0.01", err, sizeof(err)), 0);
	assert_int_equal(finalize_with("log.cleaner.min.cleanable.ratio", "1", err, sizeof(err)), 0);
	assert_int_equal(finalize_with("log.cleaner.min.cleanable.ratio", "1.5", err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "invalid value '1.5' for 'log.cleaner.min.cleanable.ratio': expected a number "
				 "between 0 and 1");
	assert_int_equal(finalize_with("log.cleaner.min.cleanable.ratio", "half", err, sizeof(err)), -EINVAL);
	assert_int_equal(finalize_with("log.cleaner.io.max.bytes.per.second", "1048576", err, sizeof(err)), 0);
	assert_int_equal(finalize_with("log.cleaner.io.max.bytes.per.second", "1e6", err, sizeof(err)), 0);
	assert_int_equal(finalize_with("log.cleaner.io.max.bytes.per.second", "0", err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "invalid value '0' for 'log.cleaner.io.max.bytes.per.second': expected a number "
				 "above 0");
	assert_int_equal(finalize_with("log.cleaner.io.max.bytes.per.second", "1e999", err, sizeof(err)), -EINVAL);
	assert_int_equal(finalize_with("log.cleaner.backoff.ms", "50", err, sizeof(err)), 0);
	assert_int_equal(finalize_with("log.cleaner.backoff.ms", "-1", err, sizeof(err)), -EINVAL);
	assert_int_equal(finalize_with("log.cleaner.dedupe.buffer.size", "1023", err, sizeof(err)), -EINVAL);
	assert_int_equal(finalize_with("log.cleaner.dedupe.buffer.size", "1048576", err, sizeof(err)), 0);
}

/* Cluster keys: inter.broker.listener.name names a listener; zookeeper.connect is not empty. */
static void test_cluster_values(void **state)
{
	char err[256];

	(void)state;
	assert_int_equal(finalize_with("inter.broker.listener.name", "PLAINTEXT", err, sizeof(err)), 0);
	assert_int_equal(finalize_with("inter.broker.listener.name", "PLAIN", err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "inter.broker.listener.name 'PLAIN' is not the name of a listener in listeners "
				 "'PLAINTEXT://127.0.0.1:9092'");
	assert_int_equal(finalize_with("inter.broker.listener.name", "PLAINTEXT://", err, sizeof(err)), -EINVAL);
	assert_int_equal(finalize_with("zookeeper.connect", "127.0.0.1:2181/kafka", err, sizeof(err)), 0);
	assert_int_equal(finalize_with("zookeeper.connect", "", err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "zookeeper.connect is empty (leave it out for a single node)");
	assert_int_equal(finalize_with("zookeeper.session.timeout.ms", "0", err, sizeof(err)), -EINVAL);
	assert_int_equal(finalize_with("controlled.shutdown.enable", "false", err, sizeof(err)), 0);
}

static void test_args(void **state)
{
	struct broker_cfg cfg;
	const char *path;
	char *out;
	int src;
	char buf[64];

	(void)state;
	{
		char *argv[] = { "gregor", "--help", NULL };
		assert_int_equal(run_args(2, argv, &cfg, &path, &out), 0);
		assert_non_null(strstr(out, "usage: gregor"));
		free(out);
	}
	{
		char *argv[] = { "gregor", "--version", NULL };
		assert_int_equal(run_args(2, argv, &cfg, &path, &out), 0);
		assert_string_equal(out, "gregor " GREGOR_VERSION "\n");
		free(out);
	}
	{
		char *argv[] = { "gregor", "--frobnicate", NULL };
		assert_int_equal(run_args(2, argv, &cfg, &path, &out), 2);
		assert_non_null(strstr(out, "gregor: unknown option '--frobnicate'"));
		assert_non_null(strstr(out, "usage:"));
		free(out);
	}
	{
		char *argv[] = { "gregor", "--override", NULL };
		assert_int_equal(run_args(2, argv, &cfg, &path, &out), 2);
		assert_non_null(strstr(out, "--override needs a key=value argument"));
		free(out);
	}
	{
		char *argv[] = { "gregor", "--override", "num.partitions=abc", NULL };
		assert_int_equal(run_args(3, argv, &cfg, &path, &out), 2);
		assert_non_null(strstr(out, "--override num.partitions=abc: invalid value 'abc' for "
					    "'num.partitions'"));
		free(out);
	}
	{
		char *argv[] = { "gregor", "--override", "what.ever=1", NULL };
		assert_int_equal(run_args(3, argv, &cfg, &path, &out), 2);
		assert_non_null(strstr(out, "unknown setting 'what.ever'"));
		free(out);
	}
	{
		char *argv[] = { "gregor", "a.properties", "b.properties", NULL };
		assert_int_equal(run_args(3, argv, &cfg, &path, &out), 2);
		assert_non_null(strstr(out, "more than one config file"));
		free(out);
	}
	{
		char *argv[] = { "gregor", "/nonexistent/x.properties", NULL };
		assert_int_equal(run_args(2, argv, &cfg, &path, &out), 2);
		assert_non_null(strstr(out, "/nonexistent/x.properties: No such file or directory"));
		free(out);
	}
	{
		char want[600];
		char *argv[] = { "gregor", NULL, NULL };
		argv[1] = (char *)write_file("unk.properties", "num.partitions=3\nlog.segmnet.bytes=1\n");
		snprintf(want, sizeof(want), "%s:2: unknown setting 'log.segmnet.bytes'", argv[1]);
		assert_int_equal(run_args(2, argv, &cfg, &path, &out), 2);
		assert_non_null(strstr(out, want));
		free(out);
	}
	{
		/* overrides win over the file, wherever they are */
		char *argv[] = { "gregor", "--override", "num.partitions=5", NULL, "--override=log.retention.ms=10",
				 NULL };
		argv[3] = (char *)write_file("ok.properties", "num.partitions=3\nlog.retention.ms=20\nnode.id=4\n");
		assert_int_equal(run_args(5, argv, &cfg, &path, &out), CONFIG_ARGS_RUN);
		free(out);
		assert_string_equal(path, argv[3]);
		assert_int_equal(cfg.num_partitions, 5);
		assert_true(config_retention_ms(&cfg) == 10);
		assert_int_equal(cfg.node_id, 4);
		assert_int_equal(config_get(&cfg, "num.partitions", buf, sizeof(buf), &src), 0);
		assert_int_equal(src, CONFIG_SOURCE_STATIC_BROKER);
		config_release(&cfg);
	}
	{
		char *argv[] = { "gregor", NULL };
		assert_int_equal(run_args(1, argv, &cfg, &path, &out), CONFIG_ARGS_RUN);
		free(out);
		assert_null(path);
		assert_int_equal(cfg.num_partitions, 1);
		config_release(&cfg);
	}
	{
		char *argv[] = { "gregor", "--print-config-doc", NULL };
		char *doc = NULL;
		size_t len = 0;
		FILE *f;

		assert_int_equal(run_args(2, argv, &cfg, &path, &out), CONFIG_ARGS_PRINT_DOC);
		assert_string_equal(out, "");
		free(out);
		f = open_memstream(&doc, &len);
		assert_non_null(f);
		assert_int_equal(config_write_doc(f), 0);
		fclose(f);
		assert_non_null(strstr(doc, "| `num.partitions` | int | `1` |"));
		assert_non_null(strstr(doc, "| `retention.ms` | long | `604800000` |"));
		free(doc);
	}
}

static void test_topic_defaults(void **state)
{
	struct broker_cfg cfg;
	struct topic_cfg t;
	char buf[64], err[256];
	int src;
	bool dflt;

	(void)state;
	assert_int_equal(config_init(&cfg), 0);
	assert_int_equal(config_set(&cfg, "log.retention.minutes", "5", err, sizeof(err)), 0);
	assert_int_equal(config_set(&cfg, "message.max.bytes", "2000", err, sizeof(err)), 0);
	assert_int_equal(topic_cfg_init(&t, &cfg), 0);
	assert_true(t.retention_ms == 300000);
	assert_int_equal(t.max_message_bytes, 2000);
	assert_true(t.segment_ms == 168LL * 3600 * 1000);
	assert_int_equal(t.segment_bytes, 1073741824);
	assert_true(t.flush_ms == INT64_MAX);
	assert_true(t.flush_messages == INT64_MAX);
	assert_int_equal(t.cleanup_policy, CONFIG_CLEANUP_DELETE);
	assert_int_equal(t.compression_type, CONFIG_COMPRESSION_PRODUCER);
	assert_string_equal(t.min_cleanable_dirty_ratio, "0.5");

	assert_int_equal(topic_cfg_get(&t, "retention.ms", buf, sizeof(buf), &src, &dflt), 0);
	assert_string_equal(buf, "300000");
	assert_int_equal(src, CONFIG_SOURCE_STATIC_BROKER);
	assert_false(dflt);
	assert_int_equal(topic_cfg_get(&t, "max.message.bytes", buf, sizeof(buf), &src, &dflt), 0);
	assert_int_equal(src, CONFIG_SOURCE_STATIC_BROKER);
	assert_int_equal(topic_cfg_get(&t, "segment.bytes", buf, sizeof(buf), &src, &dflt), 0);
	assert_string_equal(buf, "1073741824");
	assert_int_equal(src, CONFIG_SOURCE_DEFAULT);
	assert_true(dflt);
	assert_int_equal(topic_cfg_get(&t, "cleanup.policy", buf, sizeof(buf), &src, &dflt), 0);
	assert_string_equal(buf, "delete");
	assert_int_equal(topic_cfg_get(&t, "bogus", buf, sizeof(buf), &src, &dflt), -ENOENT);
	assert_string_equal(topic_cfg_synonym("retention.ms"), "log.retention.ms");
	assert_string_equal(topic_cfg_synonym("max.message.bytes"), "message.max.bytes");
	assert_null(topic_cfg_synonym("leader.replication.throttled.replicas"));

	/* a broker change reaches keys the topic does not set */
	assert_int_equal(topic_cfg_set(&t, "segment.bytes", "1048576", err, sizeof(err)), 0);
	assert_int_equal(config_set(&cfg, "log.segment.bytes", "2097152", err, sizeof(err)), 0);
	assert_int_equal(config_set(&cfg, "log.retention.ms", "1000", err, sizeof(err)), 0);
	assert_int_equal(topic_cfg_refresh(&t, &cfg), 0);
	assert_int_equal(t.segment_bytes, 1048576);
	assert_true(t.retention_ms == 1000);
	topic_cfg_release(&t);
	config_release(&cfg);
}

/* SIGHUP: dynamic keys move over (value and set flag), others stay. */
static void test_update(void **state)
{
	struct broker_cfg cur, next;
	char err[256];

	(void)state;
	assert_int_equal(config_init(&cur), 0);
	assert_int_equal(config_set(&cur, "log.retention.ms", "5000", err, sizeof(err)), 0);
	assert_int_equal(config_init(&next), 0);
	assert_int_equal(config_set(&next, "log.retention.bytes", "8000", err, sizeof(err)), 0);
	assert_int_equal(config_set(&next, "log.debug", "net,txn", err, sizeof(err)), 0);
	assert_int_equal(config_set(&next, "socket.request.max.bytes", "1000", err, sizeof(err)), 0);
	assert_int_equal(config_set(&next, "log.dirs", "/elsewhere", err, sizeof(err)), 0);
	/* log.retention.ms unset in next: back to null, the hours apply again */
	assert_int_equal(config_update(&cur, &next), 3);
	assert_true(cur.log_retention_bytes == 8000);
	assert_true(config_is_set(&cur, "log.retention.bytes"));
	assert_true(cur.log_retention_ms == CONF_UNSET64);
	assert_false(config_is_set(&cur, "log.retention.ms"));
	assert_true(config_retention_ms(&cur) == 168LL * 3600 * 1000);
	assert_string_equal(cur.log_debug, "net,txn");
	assert_int_equal(cur.socket_request_max_bytes, 104857600);
	assert_false(config_is_set(&cur, "socket.request.max.bytes"));
	assert_string_equal(cur.log_dirs, "./data");
	config_release(&next); /* holds what was not taken (and cur's old strings) */
	assert_int_equal(config_init(&next), 0);
	assert_int_equal(config_set(&next, "log.retention.bytes", "8000", err, sizeof(err)), 0);
	assert_int_equal(config_set(&next, "log.debug", "net,txn", err, sizeof(err)), 0);
	assert_int_equal(config_update(&cur, &next), 0); /* the same file again: no change */
	config_release(&next);
	config_release(&cur);
}

static void test_topic_set_delete(void **state)
{
	struct broker_cfg cfg;
	struct topic_cfg t, copy;
	char buf[64], err[256];
	int src;
	bool dflt;

	(void)state;
	assert_int_equal(config_init(&cfg), 0);
	assert_int_equal(topic_cfg_init(&t, &cfg), 0);
	assert_int_equal(topic_cfg_set(&t, "retention.ms", "60000", err, sizeof(err)), 0);
	assert_true(t.retention_ms == 60000);
	assert_true(topic_cfg_is_set(&t, "retention.ms"));
	assert_int_equal(topic_cfg_get(&t, "retention.ms", buf, sizeof(buf), &src, &dflt), 0);
	assert_string_equal(buf, "60000");
	assert_int_equal(src, CONFIG_SOURCE_DYNAMIC_TOPIC);
	assert_false(dflt);
	assert_int_equal(topic_cfg_set(&t, "cleanup.policy", "compact", err, sizeof(err)), 0);
	assert_int_equal(t.cleanup_policy, CONFIG_CLEANUP_COMPACT);
	assert_int_equal(topic_cfg_set(&t, "message.timestamp.type", "LogAppendTime", err, sizeof(err)), 0);
	assert_int_equal(t.message_timestamp_type, CONFIG_TS_LOG_APPEND_TIME);
	assert_int_equal(topic_cfg_set(&t, "compression.type", "zstd", err, sizeof(err)), 0);
	assert_int_equal(t.compression_type, CONFIG_COMPRESSION_ZSTD);

	assert_int_equal(topic_cfg_set(&t, "retention.mss", "1", err, sizeof(err)), -ENOENT);
	assert_string_equal(err, "unknown setting 'retention.mss'");
	assert_int_equal(topic_cfg_set(&t, "segment.bytes", "10", err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "invalid value '10' for 'segment.bytes': expected an integer of at least 14");
	assert_int_equal(topic_cfg_set(&t, "compression.type", "brotli", err, sizeof(err)), -EINVAL);
	assert_int_equal(t.compression_type, CONFIG_COMPRESSION_ZSTD);

	assert_int_equal(topic_cfg_copy(&copy, &t), 0);
	assert_true(copy.retention_ms == 60000);
	assert_true(topic_cfg_is_set(&copy, "retention.ms"));
	topic_cfg_release(&copy);

	assert_int_equal(topic_cfg_delete(&t, "retention.ms", &cfg), 0);
	assert_true(t.retention_ms == 604800000);
	assert_false(topic_cfg_is_set(&t, "retention.ms"));
	assert_int_equal(topic_cfg_get(&t, "retention.ms", buf, sizeof(buf), &src, &dflt), 0);
	assert_int_equal(src, CONFIG_SOURCE_DEFAULT);
	assert_true(dflt);
	assert_int_equal(topic_cfg_delete(&t, "nope", &cfg), -ENOENT);
	assert_int_equal(topic_cfg_reset(&t, &cfg), 0);
	assert_int_equal(t.cleanup_policy, CONFIG_CLEANUP_DELETE);
	assert_false(topic_cfg_is_set(&t, "compression.type"));
	topic_cfg_release(&t);
	config_release(&cfg);
}

static void test_topic_save_load(void **state)
{
	struct broker_cfg cfg;
	struct topic_cfg t, u;
	char path[256], err[512], *text;
	int src;
	char buf[300];

	(void)state;
	snprintf(path, sizeof(path), "%s/topic.properties", tmpdir);
	assert_int_equal(config_init(&cfg), 0);
	assert_int_equal(topic_cfg_init(&t, &cfg), 0);
	assert_int_equal(topic_cfg_load(&t, path, err, sizeof(err)), -ENOENT);
	assert_int_equal(topic_cfg_set(&t, "retention.ms", "12345", err, sizeof(err)), 0);
	assert_int_equal(topic_cfg_set(&t, "cleanup.policy", "compact", err, sizeof(err)), 0);
	assert_int_equal(topic_cfg_set(&t, "leader.replication.throttled.replicas", " 0:1 , 1:1 ", err, sizeof(err)),
			 0);
	assert_int_equal(topic_cfg_set(&t, "message.format.version", " a\\b\n c ", err, sizeof(err)), 0);
	assert_string_equal(t.message_format_version, "a\\b\n c");
	assert_int_equal(topic_cfg_save(&t, path), 0);

	text = read_all(path);
	assert_non_null(strstr(text, "retention.ms=12345\n"));
	assert_non_null(strstr(text, "cleanup.policy=compact\n"));
	assert_null(strstr(text, "segment.bytes"));
	free(text);
	snprintf(buf, sizeof(buf), "%s.tmp", path);
	assert_int_not_equal(access(buf, F_OK), 0);

	assert_int_equal(topic_cfg_init(&u, &cfg), 0);
	assert_int_equal(topic_cfg_load(&u, path, err, sizeof(err)), 0);
	assert_true(u.retention_ms == 12345);
	assert_int_equal(u.cleanup_policy, CONFIG_CLEANUP_COMPACT);
	assert_string_equal(u.leader_replication_throttled_replicas, "0:1,1:1");
	assert_string_equal(u.message_format_version, "a\\b\n c");
	assert_int_equal(topic_cfg_get(&u, "retention.ms", buf, sizeof(buf), &src, NULL), 0);
	assert_int_equal(src, CONFIG_SOURCE_DYNAMIC_TOPIC);
	assert_false(topic_cfg_is_set(&u, "segment.bytes"));
	topic_cfg_release(&u);

	/* overwrite with fewer keys */
	assert_int_equal(topic_cfg_reset(&t, &cfg), 0);
	assert_int_equal(topic_cfg_set(&t, "segment.ms", "1000", err, sizeof(err)), 0);
	assert_int_equal(topic_cfg_save(&t, path), 0);
	assert_int_equal(topic_cfg_init(&u, &cfg), 0);
	assert_int_equal(topic_cfg_load(&u, path, err, sizeof(err)), 0);
	assert_true(u.segment_ms == 1000);
	assert_true(u.retention_ms == 604800000);
	assert_false(topic_cfg_is_set(&u, "retention.ms"));
	topic_cfg_release(&u);

	/* corrupt file: error with line */
	write_file("topic.properties", "retention.ms=1\nretention.ms=x\n");
	assert_int_equal(topic_cfg_init(&u, &cfg), 0);
	assert_int_equal(topic_cfg_load(&u, path, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "topic.properties:2: invalid value 'x' for 'retention.ms'"));
	topic_cfg_release(&u);

	topic_cfg_release(&t);
	config_release(&cfg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_table_sane),
		cmocka_unit_test(test_stock_files),
		cmocka_unit_test(test_shipped_config),
		cmocka_unit_test(test_listener_ssl),
		cmocka_unit_test(test_retention_precedence),
		cmocka_unit_test(test_aliases),
		cmocka_unit_test(test_file_errors),
		cmocka_unit_test(test_cleaner_values),
		cmocka_unit_test(test_cluster_values),
		cmocka_unit_test(test_args),
		cmocka_unit_test(test_topic_defaults),
		cmocka_unit_test(test_update),
		cmocka_unit_test(test_topic_set_delete),
		cmocka_unit_test(test_topic_save_load),
	};
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
