/*
 * confchange.h - the config change notifications of /config/changes, as
 * Kafka's brokers follow them in ZooKeeper mode.
 *
 * A broker that changes a topic's config writes /config/topics/<t> and a
 * sequential /config/changes/config_change_<n> naming "topics/<t>"
 * (confchange_write()).  Every broker watches /config/changes and, for
 * each notification newer than the last it handled, tells on_topic the
 * topic's name; the broker then reads /config/topics/<t> and applies it to
 * its replicas.  At start (and on every new session) every notification
 * present is handled once, so a broker that was down while a config
 * changed catches up.  Notifications are never purged here (Kafka removes
 * them after 15 minutes).  Loop thread only.
 */
#ifndef GREGOR_CLUSTER_CONFCHANGE_H
#define GREGOR_CLUSTER_CONFCHANGE_H

#include <stdbool.h>
#include <stdint.h>

struct zk;

typedef void confchange_topic_fn(void *arg, const char *topic);

struct confchange {
	struct zk *zk;
	int64_t last_seq; /* the newest notification handled, -1: none */
	confchange_topic_fn *on_topic;
	void *arg;
	bool stopped;
};

void confchange_init(struct confchange *cc, struct zk *zk, confchange_topic_fn *on_topic, void *arg);
/* Lists /config/changes (watched) and handles what is new. */
void confchange_run(struct confchange *cc);
/* True for the path whose child events confchange_run() follows. */
bool confchange_watches(const char *path);
void confchange_stop(struct confchange *cc);
/* Writes topic's overrides (config: znode_topic_config_encode) and a notification, in one multi-op; failures are logged. */
int confchange_write(struct zk *zk, const char *topic, const char *config);

#endif
