/*
 * console_view.h - the web console's view of the brokers, built as JSON
 * on the event loop (console.h says how asks get there; it is a few
 * entries), and the JSON string helper of the console's answers.
 */
#ifndef GREGOR_BROKER_CONSOLE_VIEW_H
#define GREGOR_BROKER_CONSOLE_VIEW_H

#include <jansson.h>
#include <stddef.h>

struct broker;
struct console_job;

/* Loop thread: answers CONSOLE_BROKERS. */
void console_view_run(struct broker *b, struct console_job *j);
/* A JSON string of p[0..len): bytes that are not valid UTF-8 make a copy with them as '?'.  NULL: out of memory. */
json_t *console_json_str(const char *p, size_t len);

#endif
