/*
 * console_records.h - the web console's message browser: the latest
 * records of one partition, read and decoded on the event loop.
 */
#ifndef GREGOR_BROKER_CONSOLE_RECORDS_H
#define GREGOR_BROKER_CONSOLE_RECORDS_H

struct broker;
struct console_job;

/*
 * Loop thread: answers CONSOLE_RECORDS with the records of offsets
 * [high watermark - limit, high watermark) still in the log (fewer where
 * compaction or transaction markers left gaps), reading at most
 * CONSOLE_READ_BYTES of log.
 */
void console_records_run(struct broker *b, struct console_job *j);

#endif
