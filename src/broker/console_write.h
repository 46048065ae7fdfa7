/*
 * console_write.h - the web console's writes (console.write.enable):
 * creating a topic and resetting a group's committed offsets, through the
 * code CreateTopics and OffsetCommit use.
 */
#ifndef GREGOR_BROKER_CONSOLE_WRITE_H
#define GREGOR_BROKER_CONSOLE_WRITE_H

struct broker;
struct console_job;

/*
 * Loop thread: begins CONSOLE_CREATE_TOPIC (answered when the creator's
 * round has made it: 201) or CONSOLE_RESET_OFFSETS (answered once the
 * offsets are synced in __consumer_offsets: 200).  Only an Empty group's
 * offsets are reset (409 otherwise), as Kafka's consumer-groups tool
 * requires.
 */
void console_write_run(struct broker *b, struct console_job *j);
/* Loop thread, on each wake-up: answers the resets whose sync round has completed. */
void console_write_on_wake(struct broker *b);
/* Shutdown: answers the resets still waiting for their sync with 503. */
void console_write_stop(void);

#endif
