/*
 * console_groups.h - the web console's consumer groups: their state,
 * members, assignments, committed offsets and lag, copied on the event
 * loop and turned into JSON on the HTTP thread.
 */
#ifndef GREGOR_BROKER_CONSOLE_GROUPS_H
#define GREGOR_BROKER_CONSOLE_GROUPS_H

struct broker;
struct console_job;

/* Loop thread: answers CONSOLE_GROUPS and CONSOLE_GROUP. */
void console_groups_run(struct broker *b, struct console_job *j);

#endif
