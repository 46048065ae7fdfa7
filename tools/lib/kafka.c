/* kafka.c - librdkafka plumbing shared by the tools (see kafka.h).
 *
 * State here is per process (a tool makes one or two handles): the
 * timeout, whether the user asked for librdkafka debug output, the
 * bootstrap list for messages, and the last error the error callback saw,
 * guarded by a mutex because librdkafka may call back from its threads.
 */
#include "kafka.h"

#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "opt.h"
#include "proto/kerr.h"

static int timeout_ms = KAFKA_TIMEOUT_MS_DEFAULT;
static bool debug_on;               /* user set `debug`: keep librdkafka's logger */
static char bootstrap_servers[512]; /* for messages only */
static pthread_mutex_t last_err_lock = PTHREAD_MUTEX_INITIALIZER;
static char last_err[512];
static int last_err_code; /* (last_err_lock) the error last_err names */

void kafka_die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", opt_prog());
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

int kafka_timeout_ms(void)
{
	return timeout_ms;
}

const char *kafka_last_error(void)
{
	static char copy[sizeof(last_err)];

	pthread_mutex_lock(&last_err_lock);
	memcpy(copy, last_err, sizeof(copy));
	pthread_mutex_unlock(&last_err_lock);
	return copy;
}

static void error_cb(rd_kafka_t *rk, int err, const char *reason, void *opaque)
{
	(void)rk;
	(void)opaque;
	pthread_mutex_lock(&last_err_lock);
	snprintf(last_err, sizeof(last_err), "%s: %s", kafka_err_name(err), reason);
	last_err_code = err;
	pthread_mutex_unlock(&last_err_lock);
}

/* The broker refused our credentials: retrying them cannot succeed (Java's tools fail at once too). */
static bool kafka_auth_failed(void)
{
	bool failed;

	pthread_mutex_lock(&last_err_lock);
	failed = last_err_code == RD_KAFKA_RESP_ERR__AUTHENTICATION;
	pthread_mutex_unlock(&last_err_lock);
	return failed;
}

/* Quiet logger: librdkafka's lines are noise for a command-line user; the
 * interesting ones also reach error_cb. `debug=...` restores them. */
static void log_cb(const rd_kafka_t *rk, int level, const char *fac, const char *buf)
{
	(void)rk;
	(void)level;
	(void)fac;
	(void)buf;
}

const char *kafka_err_name(rd_kafka_resp_err_t err)
{
	const char *name;

	if (err < 0 || err > INT16_MAX)
		return rd_kafka_err2name(err);
	name = kerr_name((int16_t)err);
	return strcmp(name, "UNKNOWN") ? name : rd_kafka_err2name(err);
}

rd_kafka_conf_t *kafka_conf_new(const char *bootstrap)
{
	rd_kafka_conf_t *conf = rd_kafka_conf_new();

	if (bootstrap) {
		snprintf(bootstrap_servers, sizeof(bootstrap_servers), "%s", bootstrap);
		if (kafka_conf_set(conf, "bootstrap.servers", bootstrap) != 0)
			exit(2);
	}
	if (kafka_conf_set(conf, "client.id", opt_prog()) != 0)
		exit(2);
	rd_kafka_conf_set_error_cb(conf, error_cb);
	return conf;
}

/* The value of option name ("name=\"v\"" or name=v) in a JAAS entry, into out; false if absent. */
static bool kafka_jaas_option(const char *jaas, const char *name, char *out, size_t outlen)
{
	size_t n = strlen(name), o = 0;

	for (const char *p = strstr(jaas, name); p; p = strstr(p + 1, name)) {
		const char *v = p + n;

		if ((p != jaas && !isspace((unsigned char)p[-1])) || *v != '=')
			continue;
		v++;
		if (*v == '"')
			for (v++; *v && *v != '"' && o + 1 < outlen; v++)
				out[o++] = *v == '\\' && v[1] ? *++v : *v;
		else
			for (; *v && !isspace((unsigned char)*v) && *v != ';' && o + 1 < outlen; v++)
				out[o++] = *v;
		out[o] = '\0';
		return true;
	}
	return false;
}

/*
 * Kafka's Java client property names librdkafka spells otherwise (PEM
 * files only).  Returns 1 when key was one of them (*err: 0 or -EINVAL),
 * 0 for any other key.
 */
static int kafka_conf_java(rd_kafka_conf_t *conf, const char *key, const char *val, int *err)
{
	static const char *const renamed[][2] = {
		{ "ssl.truststore.location", "ssl.ca.location" },
		{ "ssl.truststore.certificates", "ssl.ca.pem" },
		{ "ssl.keystore.certificate.chain", "ssl.certificate.pem" },
		{ "ssl.keystore.key", "ssl.key.pem" },
	};
	char user[256], pass[256];

	*err = 0;
	for (size_t i = 0; i < sizeof(renamed) / sizeof(renamed[0]); i++)
		if (!strcmp(key, renamed[i][0]))
			return *err = kafka_conf_set(conf, renamed[i][1], val), 1;
	if (!strcmp(key, "ssl.truststore.type") || !strcmp(key, "ssl.keystore.type")) {
		if (strcasecmp(val, "PEM")) {
			fprintf(stderr, "%s: property \"%s\": only PEM is supported, not %s\n", opt_prog(), key, val);
			*err = -EINVAL;
		}
		return 1;
	}
	if (!strcmp(key, "ssl.truststore.password"))
		return 1;                          /* a PEM truststore has none */
	if (!strcmp(key, "ssl.keystore.location")) /* PEM: the key and the certificate chain in one file */
		return *err = kafka_conf_set(conf, "ssl.certificate.location", val)
				      ?: kafka_conf_set(conf, "ssl.key.location", val),
		       1;
	if (!strcmp(key, "ssl.endpoint.identification.algorithm") && !*val)
		return *err = kafka_conf_set(conf, key, "none"), 1;
	if (!strcmp(key, "sasl.jaas.config")) {
		if (!kafka_jaas_option(val, "username", user, sizeof(user)) ||
		    !kafka_jaas_option(val, "password", pass, sizeof(pass))) {
			fprintf(stderr, "%s: property \"%s\": no username=\"...\" password=\"...\" options\n",
				opt_prog(), key);
			*err = -EINVAL;
			return 1;
		}
		*err = kafka_conf_set(conf, "sasl.username", user) ?: kafka_conf_set(conf, "sasl.password", pass);
		return 1;
	}
	return 0;
}

int kafka_conf_set(rd_kafka_conf_t *conf, const char *key, const char *val)
{
	char errstr[512];
	int err;

	if (!strcmp(key, "default.api.timeout.ms")) {
		char *end;
		long v = strtol(val, &end, 10);

		if (end == val || *end || v <= 0 || v > 3600000) {
			fprintf(stderr, "%s: invalid value \"%s\" for \"%s\"\n", opt_prog(), val, key);
			return -EINVAL;
		}
		timeout_ms = (int)v;
		return 0;
	}
	if (kafka_conf_java(conf, key, val, &err))
		return err;
	if (!strcmp(key, "debug"))
		debug_on = true;
	if (rd_kafka_conf_set(conf, key, val, errstr, sizeof(errstr)) != RD_KAFKA_CONF_OK) {
		fprintf(stderr, "%s: property \"%s\": %s\n", opt_prog(), key, errstr);
		return -EINVAL;
	}
	return 0;
}

int kafka_conf_set_kv(rd_kafka_conf_t *conf, const char *kv)
{
	const char *eq = strchr(kv, '=');
	char key[256];

	if (!eq || eq == kv || (size_t)(eq - kv) >= sizeof(key)) {
		fprintf(stderr, "%s: property \"%s\" is not of the form key=value\n", opt_prog(), kv);
		return -EINVAL;
	}
	memcpy(key, kv, (size_t)(eq - kv));
	key[eq - kv] = '\0';
	return kafka_conf_set(conf, key, eq + 1);
}

static char *trim(char *s)
{
	char *e = s + strlen(s);

	while (isspace((unsigned char)*s))
		s++;
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = '\0';
	return s;
}

int kafka_conf_load_file(rd_kafka_conf_t *conf, const char *path)
{
	FILE *fp = fopen(path, "r");
	char line[4096];
	int lineno = 0;
	int ret = 0;

	if (!fp) {
		ret = -errno;
		fprintf(stderr, "%s: cannot open properties file \"%s\": %s\n", opt_prog(), path, strerror(errno));
		return ret;
	}
	while (ret == 0 && fgets(line, sizeof(line), fp)) {
		char *key = trim(line);
		size_t n;

		lineno++;
		if (*key == '\0' || *key == '#' || *key == '!')
			continue;
		n = strcspn(key, "=: \t");
		if (key[n] == '\0') {
			fprintf(stderr, "%s: %s:%d: expected key=value\n", opt_prog(), path, lineno);
			ret = -EINVAL;
			break;
		}
		key[n] = '\0';
		char *val = trim(key + n + 1);
		if (*val == '=' || *val == ':')
			val = trim(val + 1);
		if (kafka_conf_set(conf, key, val) != 0) {
			fprintf(stderr, "%s: (in %s:%d)\n", opt_prog(), path, lineno);
			ret = -EINVAL;
		}
	}
	fclose(fp);
	return ret;
}

void kafka_conf_apply(rd_kafka_conf_t *conf, const struct opts *o, const char *file_opt, const char *prop_opt)
{
	if (file_opt && opt_has(o, file_opt) && kafka_conf_load_file(conf, opt_str(o, file_opt, NULL)) != 0)
		exit(2);
	if (!prop_opt)
		return;
	for (int i = 0; i < opt_count(o, prop_opt); i++) {
		if (kafka_conf_set_kv(conf, opt_nth(o, prop_opt, i)) != 0)
			exit(2);
	}
}

rd_kafka_t *kafka_new(rd_kafka_type_t type, rd_kafka_conf_t *conf)
{
	char errstr[512];
	rd_kafka_t *rk;

	if (!debug_on)
		rd_kafka_conf_set_log_cb(conf, log_cb);
	rk = rd_kafka_new(type, conf, errstr, sizeof(errstr));
	if (!rk) {
		rd_kafka_conf_destroy(conf);
		kafka_die("cannot create client: %s", errstr);
	}
	return rk;
}

int64_t kafka_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int kafka_wait_broker(rd_kafka_t *rk)
{
	int64_t deadline = kafka_now_ms() + timeout_ms;
	rd_kafka_resp_err_t err = RD_KAFKA_RESP_ERR__TIMED_OUT;
	const char *why;

	for (int64_t left; (left = deadline - kafka_now_ms()) > 0;) {
		const struct rd_kafka_metadata *md;

		err = rd_kafka_metadata(rk, 0, NULL, &md, (int)(left < 500 ? left : 500));
		if (err == RD_KAFKA_RESP_ERR_NO_ERROR) {
			rd_kafka_metadata_destroy(md);
			return 0;
		}
		rd_kafka_poll(rk, 0); /* serves error_cb */
		if (kafka_auth_failed()) {
			fprintf(stderr, "%s: authentication to %s failed (%s)\n", opt_prog(), bootstrap_servers,
				kafka_last_error());
			return -EACCES;
		}
	}
	why = kafka_last_error();
	fprintf(stderr, "%s: cannot reach a broker at %s within %d ms (%s)\n", opt_prog(),
		bootstrap_servers[0] ? bootstrap_servers : "(no bootstrap.servers)", timeout_ms,
		*why ? why : rd_kafka_err2str(err));
	return -ETIMEDOUT;
}

rd_kafka_t *kafka_admin_connect(const struct opts *o)
{
	rd_kafka_conf_t *conf = kafka_conf_new(opt_str(o, "bootstrap-server", NULL));
	rd_kafka_t *rk;

	kafka_conf_apply(conf, o, "command-config", NULL);
	rk = kafka_new(RD_KAFKA_PRODUCER, conf);
	if (kafka_wait_broker(rk) != 0)
		exit(1);
	return rk;
}

rd_kafka_AdminOptions_t *kafka_admin_options(rd_kafka_t *rk, rd_kafka_admin_op_t api)
{
	rd_kafka_AdminOptions_t *ao = rd_kafka_AdminOptions_new(rk, api);
	char errstr[256];

	rd_kafka_AdminOptions_set_request_timeout(ao, timeout_ms, errstr, sizeof(errstr));
	if (api == RD_KAFKA_ADMIN_OP_CREATETOPICS || api == RD_KAFKA_ADMIN_OP_DELETETOPICS ||
	    api == RD_KAFKA_ADMIN_OP_CREATEPARTITIONS)
		rd_kafka_AdminOptions_set_operation_timeout(ao, timeout_ms, errstr, sizeof(errstr));
	return ao;
}

rd_kafka_event_t *kafka_admin_wait(rd_kafka_queue_t *q)
{
	rd_kafka_event_t *ev = rd_kafka_queue_poll(q, timeout_ms + 5000);

	if (!ev)
		kafka_die("timed out after %d ms waiting for the broker's answer", timeout_ms);
	if (rd_kafka_event_error(ev)) {
		rd_kafka_resp_err_t err = rd_kafka_event_error(ev);
		const char *s = rd_kafka_event_error_string(ev);

		kafka_die("%s (%s)", s ? s : rd_kafka_err2str(err), kafka_err_name(err));
	}
	return ev;
}
