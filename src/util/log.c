/* log.c - timestamped log lines to stderr (see log.h). */
#include "util/log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

int log_level_cur = LOG_INFO;
unsigned log_debug_mask;

static const struct {
	const char *name;
	unsigned bit;
} log_cats[] = {
	{ "net", LOGC_NET }, { "proto", LOGC_PROTO },   { "log", LOGC_LOG },         { "group", LOGC_GROUP },
	{ "txn", LOGC_TXN }, { "broker", LOGC_BROKER }, { "cluster", LOGC_CLUSTER },
};

int log_set_debug(const char *list)
{
	unsigned mask = 0;
	const char *p = list;

	while (*p) {
		size_t n = strcspn(p, ",");
		bool found = false;

		if (n == 3 && !strncmp(p, "all", 3)) {
			mask = ~0u;
			found = true;
		}
		for (size_t i = 0; !found && i < sizeof(log_cats) / sizeof(log_cats[0]); i++)
			if (strlen(log_cats[i].name) == n && !strncmp(p, log_cats[i].name, n)) {
				mask |= log_cats[i].bit;
				found = true;
			}
		if (!found && n)
			return -EINVAL;
		p += n;
		if (*p == ',')
			p++;
	}
	log_debug_mask = mask;
	return 0;
}

void log_emit(enum log_level lvl, const char *cat, const char *fmt, ...)
{
	static const char *names[] = { "ERROR", "WARN", "INFO", "DEBUG" };
	char line[2048];
	struct timespec ts;
	struct tm tm;
	va_list ap;
	int n;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	n = snprintf(line, sizeof(line), "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ %s ", tm.tm_year + 1900, tm.tm_mon + 1,
		     tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000, names[lvl]);
	if (cat)
		n += snprintf(line + n, sizeof(line) - (size_t)n, "[%s] ", cat);
	va_start(ap, fmt);
	vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
	va_end(ap);
	fprintf(stderr, "%s\n", line);
}
