/* itest.h - tiny helpers for C integration tests (tests/integration/NNNN-*.c).
 *
 * Header-only so the Makefile needs no extra rule: a C test includes it as
 * `#include "../lib/itest.h"`. The test binary gets the broker's bootstrap
 * address as argv[1] (its driver - see tests/README.md - starts the broker),
 * prints what it checks to stdout, and exits 0 on success, 1 on any failed
 * check. Checks compare exact values and print both sides.
 */
#ifndef ITEST_H
#define ITEST_H

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <librdkafka/rdkafka.h>

/* Prints "FAIL: <file>:<line>: <message>" and exits 1. */
#define ITEST_FAIL(...) itest_fail_at(__FILE__, __LINE__, __VA_ARGS__)

/* Fails unless cond holds. */
#define ITEST_CHECK(cond, ...)                                                                                         \
	do {                                                                                                           \
		if (!(cond))                                                                                           \
			ITEST_FAIL(__VA_ARGS__);                                                                       \
	} while (0)

/* Fails unless two integers are equal; names both sides. */
#define ITEST_EQ_INT(got, want, what) itest_eq_int(__FILE__, __LINE__, (int64_t)(got), (int64_t)(want), (what))

static inline void itest_fail_at(const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4), noreturn));

static inline void itest_fail_at(const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fprintf(stderr, "FAIL: %s:%d: ", file, line);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static inline void itest_eq_int(const char *file, int line, int64_t got, int64_t want, const char *what)
{
	if (got != want)
		itest_fail_at(file, line, "%s: got %" PRId64 ", want %" PRId64, what, got, want);
}

/* Monotonic milliseconds. */
static inline int64_t itest_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Timestamped progress line on stdout. */
#define ITEST_LOG(...)                                                                                                 \
	do {                                                                                                           \
		printf("[itest] " __VA_ARGS__);                                                                        \
		putchar('\n');                                                                                         \
		fflush(stdout);                                                                                        \
	} while (0)

/* rd_kafka_conf_set or fail. */
static inline void itest_conf_set(rd_kafka_conf_t *conf, const char *name, const char *value)
{
	char errstr[512];

	if (rd_kafka_conf_set(conf, name, value, errstr, sizeof(errstr)) != RD_KAFKA_CONF_OK)
		ITEST_FAIL("conf %s=%s: %s", name, value, errstr);
}

/* A new conf with bootstrap.servers set and librdkafka's debug off. */
static inline rd_kafka_conf_t *itest_conf_new(const char *bootstrap)
{
	rd_kafka_conf_t *conf = rd_kafka_conf_new();

	itest_conf_set(conf, "bootstrap.servers", bootstrap);
	return conf;
}

#endif /* ITEST_H */
