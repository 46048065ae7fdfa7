/*
 * console.h - what the web console (ops/console_http.c) asks of the
 * broker: views of brokers, topics, groups and records, and, when
 * console.write.enable is set, creating a topic and resetting a group's
 * offsets.
 *
 * The HTTP thread never touches loop-owned state.  It fills a struct
 * console_ask and calls console_call(), which queues the ask, wakes the
 * loop and waits (at most CONSOLE_WAIT_MS); the loop runs it in its
 * wake-up callback (console_on_wake) and answers with an HTTP status and
 * a JSON body.  Writes go through the same code as the Kafka requests
 * (the creator's rounds, group_commit and a sync of __consumer_offsets),
 * so the answer comes when they have ended.  An ask the HTTP thread gave
 * up on is still finished by the loop and then freed (two references).
 */
#ifndef GREGOR_BROKER_CONSOLE_H
#define GREGOR_BROKER_CONSOLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct broker;

#define CONSOLE_WAIT_MS 10000        /* the HTTP thread's wait for an answer */
#define CONSOLE_NAME_MAX 1024        /* topic names are <= 249, group ids up to this */
#define CONSOLE_RECORDS_MAX 500      /* records one browser request may ask for */
#define CONSOLE_RECORD_BYTES 4096    /* key, value and each header value shown up to this, then cut */
#define CONSOLE_READ_BYTES (4 << 20) /* log bytes read for one browser request */
#define CONSOLE_PARTITIONS_MAX 10000 /* partitions of a topic made from the console */

enum console_op {
	CONSOLE_BROKERS,       /* this broker, and the cluster's from the metadata cache */
	CONSOLE_TOPICS,        /* every topic with its partitions */
	CONSOLE_TOPIC,         /* one topic (name) */
	CONSOLE_GROUPS,        /* every group, its state and member count */
	CONSOLE_GROUP,         /* one group (name): members, assignments, offsets, lag */
	CONSOLE_RECORDS,       /* the latest limit records of name/partition */
	CONSOLE_CREATE_TOPIC,  /* name, partitions */
	CONSOLE_RESET_OFFSETS, /* group name; topic ("" = every partition it committed); reset, offset */
};

enum console_reset { CONSOLE_RESET_EARLIEST, CONSOLE_RESET_LATEST, CONSOLE_RESET_OFFSET };

struct console_ask {
	enum console_op op;
	char name[CONSOLE_NAME_MAX + 1]; /* topic or group id (NUL-terminated) */
	char topic[256];                 /* CONSOLE_RESET_OFFSETS: only this topic's partitions */
	int32_t partition;
	int32_t limit;      /* CONSOLE_RECORDS: 1 .. CONSOLE_RECORDS_MAX */
	int32_t partitions; /* CONSOLE_CREATE_TOPIC: 1 .. CONSOLE_PARTITIONS_MAX */
	enum console_reset reset;
	int64_t offset; /* CONSOLE_RESET_OFFSET */
};

/* The broker asks are run against (server_start) / no more asks (shutdown: waiters get 503 at once). */
void console_attach(struct broker *b);
void console_detach(void);
/* Loop thread, from the broker's wake-up callback: runs the asks queued and finishes the pending ones. */
void console_on_wake(struct broker *b);
/*
 * Any thread but the loop's: runs ask on the loop.  OUT *status (an HTTP
 * status) and *body (JSON, malloc()ed, the caller frees it).  Returns 0,
 * or -ETIMEDOUT / -ESHUTDOWN / -ENOMEM with nothing set.
 */
int console_call(const struct console_ask *ask, unsigned *status, char **body);

/* For the asks' implementations (console_view.c, console_records.c, console_write.c), loop thread. */
struct console_job;
struct json_t;
const struct console_ask *console_job_ask(const struct console_job *j);
/* Answers j with status and body (takes ownership of body; NULL: out of memory, 500); j is finished. */
void console_job_answer(struct console_job *j, unsigned status, struct json_t *body);
/*
 * Answers j with status and snap, a copy of loop state (takes ownership):
 * the HTTP thread turns it into the answer with render and frees it with
 * release (either thread, if the answer is not wanted any more).  For
 * views of many partitions, so that the loop only copies.
 */
typedef struct json_t *console_render_fn(void *snap);
typedef void console_release_fn(void *snap);
void console_job_answer_snap(struct console_job *j, unsigned status, void *snap, console_render_fn *render,
			     console_release_fn *release);
/*
 * Makes room for element n of the array *v of *cap elements of size bytes
 * (doubling); false when out of memory (*v unchanged).  The copies'
 * arrays grow with it.
 */
bool console_grow(void **v, int32_t *cap, int32_t n, size_t size);
/* Answers j with status and {"error": message}. */
void console_job_error(struct console_job *j, unsigned status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* The queue itself (console_job.c), for console.c: takes every queued job (detach: forgets the broker
 * first, so no more are queued); the job after j in what it took; every queued job answered 503 (and
 * the broker forgotten); every waiting HTTP thread woken to look again. */
struct console_job *console_jobs_take(bool detach);
struct console_job *console_jobs_next(struct console_job *j);
void console_jobs_fail_all(void);
void console_jobs_wake_all(void);

#endif
