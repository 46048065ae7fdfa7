/*
 * deleter.c - removing the znodes of topics marked for deletion (deleter.h).
 *
 * For one topic: list /brokers/topics/<t>/partitions, then send the
 * deletes children first - each .../<p>/state and .../<p>, .../partitions,
 * the topic - and, once the topic's node is gone, its config and the mark.
 * ZooKeeper applies one session's requests in order, so the deletes are
 * pipelined and only the topic's and the mark's replies are looked at; a
 * node already gone (ZNONODE) counts as deleted.
 */
#include "cluster/deleter.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zookeeper/zookeeper.h>

#include "cluster/znode.h"
#include "util/log.h"

struct deleter_topic {
	struct deleter *d;
	char name[];
};

static void deleter_ignore(void *arg, const struct zk_reply *rep)
{
	(void)arg;
	(void)rep;
}

static void deleter_on_mark(void *arg, const struct zk_reply *rep)
{
	struct deleter_topic *dt = arg;

	if (rep->rc == ZOK)
		log_info("topic '%s' deleted from zookeeper", dt->name);
	else if (rep->rc != ZNONODE && rep->rc != ZCLOSING)
		log_warn("topic '%s': removing its deletion mark: %s", dt->name, zerror(rep->rc));
	free(dt);
}

/* The topic's node is gone: its config and, last, the mark; takes dt. */
static void deleter_on_topic(void *arg, const struct zk_reply *rep)
{
	struct deleter_topic *dt = arg;
	char path[384];

	if (rep->rc != ZOK && rep->rc != ZNONODE) {
		if (rep->rc != ZCLOSING)
			log_warn("topic '%s': deleting %s/%s: %s; the mark stays for the next controller run", dt->name,
				 ZNODE_TOPICS, dt->name, zerror(rep->rc));
		free(dt);
		return;
	}
	snprintf(path, sizeof(path), "%s/%s", ZNODE_TOPIC_CONFIGS, dt->name);
	zk_delete(dt->d->zk, path, -1, deleter_ignore, NULL);
	snprintf(path, sizeof(path), "%s/%s", ZNODE_DELETE_TOPICS, dt->name);
	if (zk_delete(dt->d->zk, path, -1, deleter_on_mark, dt))
		free(dt);
}

/* After the partitions' deletes: .../partitions and the topic (children first); takes dt. */
static void deleter_finish(struct deleter_topic *dt)
{
	char path[384];

	snprintf(path, sizeof(path), "%s/%s/partitions", ZNODE_TOPICS, dt->name);
	zk_delete(dt->d->zk, path, -1, deleter_ignore, NULL);
	snprintf(path, sizeof(path), "%s/%s", ZNODE_TOPICS, dt->name);
	if (zk_delete(dt->d->zk, path, -1, deleter_on_topic, dt))
		free(dt);
}

/* Listing of the topic's partitions: their states and nodes go first. */
static void deleter_on_partitions(void *arg, const struct zk_reply *rep)
{
	struct deleter_topic *dt = arg;
	char path[384];

	if (rep->rc == ZCLOSING) {
		free(dt);
		return;
	}
	for (int i = 0; rep->rc == ZOK && i < rep->nchildren; i++) {
		snprintf(path, sizeof(path), "%s/%s/partitions/%s/state", ZNODE_TOPICS, dt->name, rep->children[i]);
		zk_delete(dt->d->zk, path, -1, deleter_ignore, NULL);
		*strrchr(path, '/') = '\0';
		zk_delete(dt->d->zk, path, -1, deleter_ignore, NULL);
	}
	if (rep->rc == ZOK && rep->nchildren > 0 && dt->d->on_delete)
		dt->d->on_delete(dt->d->on_delete_arg, dt->name, rep->nchildren);
	deleter_finish(dt);
}

static void deleter_on_marks(void *arg, const struct zk_reply *rep)
{
	struct deleter *d = arg;

	for (int i = 0; rep->rc == ZOK && !d->stopping && i < rep->nchildren; i++) {
		size_t n = strlen(rep->children[i]);
		struct deleter_topic *dt = calloc(1, sizeof(*dt) + n + 1);
		char path[384];

		if (!dt)
			continue;
		dt->d = d;
		memcpy(dt->name, rep->children[i], n + 1);
		log_info("topic '%s' is marked for deletion; removing its znodes", dt->name);
		snprintf(path, sizeof(path), "%s/%s/partitions", ZNODE_TOPICS, dt->name);
		if (zk_children(d->zk, path, false, deleter_on_partitions, dt))
			free(dt);
	}
}

void deleter_init(struct deleter *d, struct zk *zk)
{
	memset(d, 0, sizeof(*d));
	d->zk = zk;
}

void deleter_run(struct deleter *d)
{
	if (!d->stopping)
		zk_children(d->zk, ZNODE_DELETE_TOPICS, true, deleter_on_marks, d);
}

bool deleter_watches(const char *path)
{
	return path && !strcmp(path, ZNODE_DELETE_TOPICS);
}

void deleter_stop(struct deleter *d)
{
	d->stopping = true;
}
