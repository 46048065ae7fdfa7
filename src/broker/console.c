/*
 * console.c - the web console's asks on the event loop: each queued ask
 * (console_job.c) goes to the file that answers its kind, and shutdown
 * fails those still waiting (see console.h).
 */
#include "broker/console.h"

#include <stdbool.h>

#include "broker/console_groups.h"
#include "broker/console_records.h"
#include "broker/console_topics.h"
#include "broker/console_view.h"
#include "broker/console_write.h"

void console_detach(void)
{
	console_jobs_fail_all();
	console_write_stop();
	console_jobs_wake_all();
}

/* Loop thread: runs one ask; it is answered now or, for writes, when they end. */
static void console_run(struct broker *b, struct console_job *j)
{
	switch (console_job_ask(j)->op) {
	case CONSOLE_RECORDS:
		console_records_run(b, j);
		break;
	case CONSOLE_TOPICS:
	case CONSOLE_TOPIC:
		console_topics_run(b, j);
		break;
	case CONSOLE_CREATE_TOPIC:
	case CONSOLE_RESET_OFFSETS:
		console_write_run(b, j);
		break;
	case CONSOLE_GROUPS:
	case CONSOLE_GROUP:
		console_groups_run(b, j);
		break;
	default:
		console_view_run(b, j);
		break;
	}
}

void console_on_wake(struct broker *b)
{
	struct console_job *head;

	head = console_jobs_take(false);
	while (head) {
		struct console_job *j = head;

		head = console_jobs_next(j);
		console_run(b, j);
	}
	console_write_on_wake(b);
}
