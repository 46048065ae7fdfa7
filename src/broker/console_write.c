/*
 * console_write.c - the web console's writes (see console_write.h).
 *
 * Creating a topic begins a build with the creator like CreateTopics does
 * on a single node (creator_create queues the build: its files are made
 * off the loop, the answer comes from the build's done callback).  In
 * cluster mode topics are created by the controller from ZooKeeper, which
 * the console does not drive: it answers 501 and the Kafka admin API is
 * the way.
 *
 * Resetting offsets commits them like a simple consumer's OffsetCommit
 * (group_commit_check with no member and generation -1, which only an
 * Empty group accepts, then group_commit) and answers once the syncer's
 * round has made the commit durable, as an OffsetCommit is answered.
 * The offsets are clamped to [log start, high watermark], as Kafka's tool
 * clamps them.
 */
#include "broker/console_write.h"

#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "broker/broker.h"
#include "broker/console.h"
#include "broker/creator.h"
#include "broker/registry.h"
#include "broker/syncer.h"
#include "coord/group.h"
#include "coord/group_store.h"
#include "log/partition.h"
#include "util/clock.h"
#include "util/log.h"

/* A reset waiting for its sync round. */
struct write_wait {
	struct write_wait *next;
	struct console_job *j;
	uint64_t ticket;
	json_t *answer; /* owned */
};

static struct write_wait *write_waits; /* loop thread */

static void write_created(void *waiter, int32_t slot, int err)
{
	struct console_job *j = waiter;
	const struct console_ask *a = console_job_ask(j);

	(void)slot;
	if (err)
		console_job_error(j, err == -EEXIST ? 409 : 500, "cannot create topic '%s': %s", a->name,
				  strerror(-err));
	else
		console_job_answer(j, 201, json_pack("{ss si}", "name", a->name, "partitions", a->partitions));
}

static void write_create(struct broker *b, struct console_job *j)
{
	const struct console_ask *a = console_job_ask(j);
	struct kstr name = kstr_c(a->name);
	struct topic_cfg tcfg;
	struct reg_build *build;
	int rc;

	if (b->cluster) {
		console_job_error(j, 501, "in cluster mode create topics with the Kafka admin API (CreateTopics)");
		return;
	}
	if (!topic_name_valid(name) || topic_name_internal(name)) {
		console_job_error(j, 400, "illegal topic name '%s': 1 to 249 of [a-zA-Z0-9._-], not internal", a->name);
		return;
	}
	if (registry_find(b->reg, name)) {
		console_job_error(j, 409, "topic '%s' already exists", a->name);
		return;
	}
	if (topic_cfg_init(&tcfg, &b->cfg) < 0) {
		console_job_error(j, 500, "out of memory");
		return;
	}
	rc = creator_create(b->creator, name, a->partitions, &tcfg, &build);
	topic_cfg_release(&tcfg);
	if (rc < 0) {
		console_job_error(j, rc == -EEXIST ? 409 : 500, "cannot create topic '%s': %s", a->name, strerror(-rc));
		return;
	}
	log_info("console: creating topic '%s' with %d partitions", a->name, a->partitions);
	build->done = write_created;
	build->waiter = j;
	build->slot = 0; /* creator_create queued it: the round comes at the end of this loop pass */
}

/* The offset a reset moves partition part to. */
static int64_t write_target(const struct console_ask *a, struct part *part)
{
	int64_t lo = part_log_start_offset(part), hi = part_high_watermark(part);

	if (a->reset == CONSOLE_RESET_EARLIEST)
		return lo;
	if (a->reset == CONSOLE_RESET_LATEST)
		return hi;
	return a->offset < lo ? lo : a->offset > hi ? hi : a->offset;
}

/*
 * The partitions to reset: every one of a->topic, or every one grp has
 * committed (grp may be NULL).  OUT *offs (malloc()ed, the topic names
 * borrowed).  Returns their count, or -1 with j answered.
 */
static int write_collect(struct broker *b, struct console_job *j, const struct group *grp, struct group_offset **offs)
{
	const struct console_ask *a = console_job_ask(j);
	struct topic *t = a->topic[0] ? registry_find(b->reg, kstr_c(a->topic)) : NULL;
	const struct group_offsets *go = grp ? group_offsets(grp) : NULL;
	int n = t ? t->nparts : go ? go->n : 0, k = 0;
	int64_t now = clock_wall_ms();

	if (a->topic[0] && (!t || t->creating)) {
		console_job_error(j, 404, "unknown topic '%s'", a->topic);
		return -1;
	}
	if (!n) {
		console_job_error(j, 400, "group '%s' has no committed offsets: name a topic", a->name);
		return -1;
	}
	*offs = calloc((size_t)n, sizeof(**offs));
	for (int i = 0; *offs && i < n; i++) {
		const char *topic = t ? t->name : go->v[i].topic;
		int32_t p = t ? i : go->v[i].partition;
		struct topic *pt = t ? t : registry_find(b->reg, kstr_c(topic));
		struct part *part = pt ? registry_part(pt, p) : NULL;

		if (part)
			(*offs)[k++] =
				(struct group_offset){ (char *)topic, p, write_target(a, part), -1, (char *)"", now };
	}
	if (!*offs || !k) {
		free(*offs);
		console_job_error(j, *offs ? 409 : 500,
				  *offs ? "none of the partitions is held by this broker" : "out of memory");
		return -1;
	}
	return k;
}

static json_t *write_reset_answer(const char *group, const struct group_offset *offs, int n)
{
	json_t *a = json_array();

	for (int i = 0; i < n; i++)
		json_array_append_new(a, json_pack("{ss si sI}", "topic", offs[i].topic, "partition", offs[i].partition,
						   "offset", (json_int_t)offs[i].offset));
	return json_pack("{ss so}", "group_id", group, "offsets", a);
}

static void write_reset(struct broker *b, struct console_job *j)
{
	const struct console_ask *a = console_job_ask(j);
	struct group *grp =
		b->groups && group_coord_attached(b->groups) ? group_find(b->groups, kstr_c(a->name)) : NULL;
	struct group_offset *offs = NULL;
	struct write_wait *w;
	struct part *part = NULL;
	int16_t err;
	int n;

	if (!b->groups || !group_coord_attached(b->groups)) {
		console_job_error(j, 503, "the group coordinator is not available on this broker");
		return;
	}
	if (grp && group_state(grp) != GROUP_EMPTY) {
		console_job_error(j, 409,
				  "group '%s' is %s: offsets are reset only while it is Empty (stop its consumers)",
				  a->name, group_state_name(group_state(grp)));
		return;
	}
	n = write_collect(b, j, grp, &offs);
	if (n < 0)
		return;
	err = group_commit_check(b->groups, kstr_c(a->name), KSTR(""), KSTR_NULL, -1, &grp);
	if (err || group_commit(b->groups, grp, offs, n, &part) < 0) {
		free(offs);
		console_job_error(j, err ? 409 : 500, "cannot commit the offsets of group '%s' (error %d)", a->name,
				  err);
		return;
	}
	log_info("console: offsets of group '%s' reset (%d partitions)", a->name, n);
	w = calloc(1, sizeof(*w));
	if (!w) {
		free(offs);
		console_job_error(j, 500, "out of memory");
		return;
	}
	*w = (struct write_wait){ write_waits, j, part ? syncer_want(b->syncer, part) : 0,
				  write_reset_answer(a->name, offs, n) };
	write_waits = w;
	free(offs);
	console_write_on_wake(b);
}

void console_write_run(struct broker *b, struct console_job *j)
{
	if (console_job_ask(j)->op == CONSOLE_CREATE_TOPIC)
		write_create(b, j);
	else
		write_reset(b, j);
}

void console_write_on_wake(struct broker *b)
{
	uint64_t done = syncer_done(b->syncer);

	for (struct write_wait **pw = &write_waits; *pw;) {
		struct write_wait *w = *pw;

		if (w->ticket > done) {
			pw = &w->next;
			continue;
		}
		*pw = w->next;
		if (w->ticket && syncer_failed(b->syncer, w->ticket)) {
			json_decref(w->answer);
			console_job_error(w->j, 500, "the sync of __consumer_offsets failed");
		} else {
			console_job_answer(w->j, 200, w->answer);
		}
		free(w);
	}
}

void console_write_stop(void)
{
	while (write_waits) {
		struct write_wait *w = write_waits;

		write_waits = w->next;
		json_decref(w->answer);
		console_job_error(w->j, 503, "the broker is shutting down before the offsets were synced");
		free(w);
	}
}
