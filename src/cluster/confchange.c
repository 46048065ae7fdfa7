/*
 * confchange.c - writing and following /config/changes (confchange.h).
 */
#include "cluster/confchange.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zookeeper/zookeeper.h>

#include "cluster/zk.h"
#include "cluster/znode.h"
#include "util/log.h"

#define CONFCHANGE_TOPICS "topics/"

void confchange_init(struct confchange *cc, struct zk *zk, confchange_topic_fn *on_topic, void *arg)
{
	*cc = (struct confchange){ .zk = zk, .last_seq = -1, .on_topic = on_topic, .arg = arg };
}

void confchange_stop(struct confchange *cc)
{
	cc->stopped = true;
}

bool confchange_watches(const char *path)
{
	return path && !strcmp(path, ZNODE_CONFIG_CHANGES);
}

static void confchange_on_get(void *arg, const struct zk_reply *rep)
{
	struct confchange *cc = arg;
	char entity[320];

	if (cc->stopped || rep->rc != ZOK)
		return; /* gone (purged) or the session lost: the next listing sees what is left */
	if (rep->data_len < 0 || znode_config_change_decode(rep->data, (size_t)rep->data_len, entity, sizeof(entity))) {
		log_warn("a config change notification is not Kafka's; ignored");
		return;
	}
	if (!strncmp(entity, CONFCHANGE_TOPICS, strlen(CONFCHANGE_TOPICS)))
		cc->on_topic(cc->arg, entity + strlen(CONFCHANGE_TOPICS));
}

/* The sequence number of a child name, -1 if it is not a notification. */
static int64_t confchange_seq(const char *name)
{
	size_t n = strlen(ZNODE_CONFIG_CHANGE_PREFIX);
	char *end;
	long long v;

	if (strncmp(name, ZNODE_CONFIG_CHANGE_PREFIX, n) || name[n] < '0' || name[n] > '9')
		return -1;
	errno = 0;
	v = strtoll(name + n, &end, 10);
	return errno || *end ? -1 : v;
}

static void confchange_on_children(void *arg, const struct zk_reply *rep)
{
	struct confchange *cc = arg;
	int64_t newest = cc->last_seq;
	char path[128];

	if (cc->stopped || rep->rc != ZOK)
		return;
	for (int i = 0; i < rep->nchildren; i++) {
		int64_t seq = confchange_seq(rep->children[i]);

		if (seq <= cc->last_seq)
			continue;
		if (seq > newest)
			newest = seq;
		snprintf(path, sizeof(path), "%s/%s", ZNODE_CONFIG_CHANGES, rep->children[i]);
		if (zk_get(cc->zk, path, false, confchange_on_get, cc))
			return; /* not connected: the next listing handles it */
	}
	cc->last_seq = newest;
}

void confchange_run(struct confchange *cc)
{
	if (!cc->stopped && zk_children(cc->zk, ZNODE_CONFIG_CHANGES, true, confchange_on_children, cc))
		log_warn("cannot list %s (not connected)", ZNODE_CONFIG_CHANGES);
}

static void confchange_on_written(void *arg, const struct zk_reply *rep)
{
	char *topic = arg;

	if (rep->rc != ZOK && rep->rc != ZCLOSING)
		log_warn("topic '%s': cannot write its config to zookeeper: %s", topic, zerror(rep->rc));
	free(topic);
}

int confchange_write(struct zk *zk, const char *topic, const char *config)
{
	char cfg_path[320], change_path[64], entity[320], *doc, *copy = strdup(topic);
	struct zk_op ops[2] = {
		{ .type = ZK_OP_SET, .path = cfg_path, .data = config, .len = (int)strlen(config), .version = -1 },
		{ .type = ZK_OP_CREATE, .path = change_path, .sequential = true },
	};
	int rc;

	snprintf(cfg_path, sizeof(cfg_path), "%s/%s", ZNODE_TOPIC_CONFIGS, topic);
	snprintf(change_path, sizeof(change_path), "%s/%s", ZNODE_CONFIG_CHANGES, ZNODE_CONFIG_CHANGE_PREFIX);
	snprintf(entity, sizeof(entity), "%s%s", CONFCHANGE_TOPICS, topic);
	doc = znode_config_change_encode(entity);
	if (!doc || !copy) {
		free(doc);
		free(copy);
		return -ENOMEM;
	}
	ops[1].data = doc;
	ops[1].len = (int)strlen(doc);
	rc = zk_multi(zk, ops, 2, confchange_on_written, copy);
	free(doc);
	if (rc) {
		free(copy);
		return -ENOTCONN;
	}
	return 0;
}
