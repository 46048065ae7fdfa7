/*
 * console_topics.h - the web console's topics with their partitions:
 * copied on the event loop, turned into JSON on the HTTP thread.
 */
#ifndef GREGOR_BROKER_CONSOLE_TOPICS_H
#define GREGOR_BROKER_CONSOLE_TOPICS_H

struct broker;
struct console_job;

/* Loop thread: answers CONSOLE_TOPICS and CONSOLE_TOPIC. */
void console_topics_run(struct broker *b, struct console_job *j);

#endif
