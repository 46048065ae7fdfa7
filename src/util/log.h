/*
 * log.h - the broker's own log lines (not to be confused with log/, the
 * partition log).  One line per event to stderr:
 *   2026-11-29T22:40:01.123Z INFO [net] accepted 127.0.0.1:50312
 * The level is checked before arguments are evaluated.  Debug lines are
 * enabled per category with log.debug=net,proto,log,group,txn,broker,cluster.
 */
#ifndef GREGOR_UTIL_LOG_H
#define GREGOR_UTIL_LOG_H

#include <stdbool.h>

enum log_level { LOG_ERROR = 0, LOG_WARN, LOG_INFO, LOG_DEBUG };

enum log_cat {
	LOGC_NET = 1 << 0,
	LOGC_PROTO = 1 << 1,
	LOGC_LOG = 1 << 2,
	LOGC_GROUP = 1 << 3,
	LOGC_TXN = 1 << 4,
	LOGC_BROKER = 1 << 5,
	LOGC_CLUSTER = 1 << 6,
};

extern int log_level_cur;
extern unsigned log_debug_mask;

/* Parses "net,proto,..." or "all"; returns -EINVAL naming nothing. */
int log_set_debug(const char *list);
void log_emit(enum log_level lvl, const char *cat, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#define log_error(...) log_emit(LOG_ERROR, NULL, __VA_ARGS__)
#define log_warn(...)                                                                                                  \
	do {                                                                                                           \
		if (log_level_cur >= LOG_WARN)                                                                         \
			log_emit(LOG_WARN, NULL, __VA_ARGS__);                                                         \
	} while (0)
#define log_info(...)                                                                                                  \
	do {                                                                                                           \
		if (log_level_cur >= LOG_INFO)                                                                         \
			log_emit(LOG_INFO, NULL, __VA_ARGS__);                                                         \
	} while (0)
#define log_debug(catbit, catname, ...)                                                                                \
	do {                                                                                                           \
		if (log_debug_mask & (catbit))                                                                         \
			log_emit(LOG_DEBUG, catname, __VA_ARGS__);                                                     \
	} while (0)

#endif
