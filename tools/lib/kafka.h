/* kafka.h - librdkafka plumbing shared by every Gregor tool.
 *
 * What each tool otherwise repeats: a configuration built from
 * --bootstrap-server plus a Java-style properties file (--command-config,
 * --producer.config, --consumer.config) plus repeated k=v properties
 * (--producer-property, --consumer-property, --config); a handle whose
 * librdkafka log lines stay quiet unless the user sets `debug`; a bounded
 * wait for the broker that turns "nobody listens there" into one clear
 * line and exit status 1; Kafka's names for error codes; and waiting for an
 * Admin API result.
 *
 *     rd_kafka_conf_t *conf = kafka_conf_new(opt_str(o, "bootstrap-server", NULL));
 *     kafka_conf_apply(conf, o, "command-config", NULL);   // exits 2 on a bad property
 *     rd_kafka_t *rk = kafka_new(RD_KAFKA_PRODUCER, conf);  // takes conf; exits 1 on failure
 *     if (kafka_wait_broker(rk) != 0)                       // message already printed
 *             exit(1);
 *
 * Kafka client property files work as they are: the Java names librdkafka
 * spells otherwise are translated (ssl.truststore.location -> ssl.ca.location,
 * a PEM ssl.keystore.location -> ssl.certificate.location and ssl.key.location,
 * ssl.truststore.certificates / ssl.keystore.certificate.chain / ssl.keystore.key
 * -> ssl.ca.pem / ssl.certificate.pem / ssl.key.pem, sasl.jaas.config's
 * username and password -> sasl.username and sasl.password); non-PEM store
 * types are refused. security.protocol and sasl.mechanism are librdkafka's too.
 *
 * Timeout. Every bounded wait here (broker reachable, admin results) uses
 * kafka_timeout_ms(): 10000 ms unless a properties source sets Kafka's
 * client key `default.api.timeout.ms`, which is consumed here and not passed
 * to librdkafka (which does not know it). Admin requests also get it as
 * their request timeout.
 *
 * Messages go to stderr as "<prog>: <text>" (opt_prog()). Functions that
 * exit say so; everything else returns 0 or a negative errno.
 */
#ifndef GREGOR_TOOLS_KAFKA_H
#define GREGOR_TOOLS_KAFKA_H

#include <stdbool.h>
#include <stdint.h>
#include <librdkafka/rdkafka.h>

struct opts;

#define KAFKA_TIMEOUT_MS_DEFAULT 10000

/* A new configuration with bootstrap.servers = bootstrap (may be NULL),
 * client.id = the program name, quiet logging and the error callback
 * kafka_last_error() reads. Caller owns it (kafka_new() takes it). */
rd_kafka_conf_t *kafka_conf_new(const char *bootstrap);

/* Sets one property. Returns 0, or -EINVAL after printing librdkafka's
 * reason naming the key. `default.api.timeout.ms` sets kafka_timeout_ms(). */
int kafka_conf_set(rd_kafka_conf_t *conf, const char *key, const char *val);
/* Same from "key=value" (the first '=' splits; -EINVAL without one). */
int kafka_conf_set_kv(rd_kafka_conf_t *conf, const char *kv);
/* Loads a Java properties file: `key=value` or `key: value` lines, `#` and
 * `!` comments, blank lines, whitespace around key and value trimmed.
 * Returns 0, -errno if unreadable (printed), -EINVAL on a bad line or
 * property (printed with file:line). */
int kafka_conf_load_file(rd_kafka_conf_t *conf, const char *path);
/* Applies the options named file_opt (a properties file, last one given)
 * and then every value of prop_opt (repeatable "k=v"), either name may be
 * NULL; later settings win. Exits 2 on any error. */
void kafka_conf_apply(rd_kafka_conf_t *conf, const struct opts *o, const char *file_opt, const char *prop_opt);

/* Creates the handle; takes ownership of conf. Exits 1 on failure. */
rd_kafka_t *kafka_new(rd_kafka_type_t type, rd_kafka_conf_t *conf);

/* Waits up to kafka_timeout_ms() for a broker to answer a Metadata
 * request. Returns 0, or -ETIMEDOUT after printing
 * "<prog>: cannot reach a broker at <bootstrap> within N ms (<last error>)",
 * or -EACCES at once when the broker refused the SASL credentials
 * ("<prog>: authentication to <bootstrap> failed (<error>)"). */
int kafka_wait_broker(rd_kafka_t *rk);

/* The admin tools' handle: bootstrap.servers from --bootstrap-server with
 * the --command-config file applied over it, a producer handle (what the
 * Admin API runs on) that has reached a broker. Exits 2 on a bad
 * configuration, 1 if no broker answers within kafka_timeout_ms().
 * Caller destroys it with rd_kafka_destroy(). */
rd_kafka_t *kafka_admin_connect(const struct opts *o);

/* Kafka's name for an error code: broker codes with the Java client's names
 * (UNKNOWN_TOPIC_OR_PARTITION, TOPIC_ALREADY_EXISTS, ...), librdkafka's
 * local codes (negative) with librdkafka's name (_TRANSPORT, ...).
 * Static string. */
const char *kafka_err_name(rd_kafka_resp_err_t err);

/* The last error reported by librdkafka's error callback on any handle made
 * from kafka_conf_new(), or "" if none. Static buffer. */
const char *kafka_last_error(void);

int kafka_timeout_ms(void);

/* Admin API: options for `api` with request and operation timeouts set to
 * kafka_timeout_ms(). Caller destroys with rd_kafka_AdminOptions_destroy(). */
rd_kafka_AdminOptions_t *kafka_admin_options(rd_kafka_t *rk, rd_kafka_admin_op_t api);
/* Waits (bounded by kafka_timeout_ms() plus a margin) on q for the result
 * event of the admin call just issued. Returns the event (caller destroys
 * it with rd_kafka_event_destroy()). Exits 1 with a message on timeout or a
 * request-level error (the event's error, e.g. _TIMED_OUT, _TRANSPORT). */
rd_kafka_event_t *kafka_admin_wait(rd_kafka_queue_t *q);

/* Prints "<prog>: <formatted message>" to stderr and exits 1. */
void kafka_die(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));

/* Monotonic milliseconds, for timeouts and rates. */
int64_t kafka_now_ms(void);

#endif
