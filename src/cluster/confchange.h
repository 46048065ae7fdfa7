/*
 * confchange.h - the config change notifications of /config/changes, as
 * Kafka's brokers follow them in ZooKeeper mode.
 *
 * A broker that changes a topic's config writes /config/topics/<t> and a
 * sequential /config/changes/config_change_<n> naming "topics/<t>"
 * (confchange_write()).  Every broker watches /config/changes and, for
 * each notification newer than the last it handled, tells on_topic the
 * topic's name; the broker then reads /config/topics/<t> and applies it to
 * its replicas.  Users the same way: /config/users/<u> holds a user's SCRAM
 * credentials and quotas, "users/<u>" names it in a notification, on_user
 * and on_quota are told.  Client quotas: /config/clients/<c> and
 * /config/users/<u>/clients/<c> ("clients/<c>", "users/<u>/clients/<c>"),
 * on_quota is told.  At start (and on every new session) every
 * notification present is handled once, so a broker that was down while
 * a config changed catches up.  Notifications older than 15 minutes are
 * purged (as Kafka's brokers do), so every user's and client's znode is
 * also read at each session's start (confchange_load_users()).  Loop
 * thread only.
 */
#ifndef GREGOR_CLUSTER_CONFCHANGE_H
#define GREGOR_CLUSTER_CONFCHANGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cluster/cluster.h"

struct zk;

/* "users/" + 3 x 255 (a sanitized name) + "/clients/" + 3 x 255, and its NUL */
#define CONFCHANGE_ENTITY_MAX 1600

/*
 * A user's or client id's name as Kafka's Sanitizer puts it in a path:
 * letters, digits, '.', '-', '_' as they are, every other byte %XX (out:
 * 3 x strlen(name) + 1 bytes).  Returns its length.
 */
size_t confchange_sanitize(const char *name, char *out);
/* The name a path holds (len bytes, URL-decoded) into out; false if malformed, empty, too long or holding a NUL. */
bool confchange_desanitize(const char *s, size_t len, char *out, size_t size);

typedef void confchange_topic_fn(void *arg, const char *topic);

struct confchange {
	struct zk *zk;
	int64_t last_seq; /* the newest notification handled, -1: none */
	confchange_topic_fn *on_topic;
	void *arg;
	confchange_topic_fn *on_user; /* a user's config changed (NULL: not followed) */
	void *user_arg;
	confchange_topic_fn *on_quota; /* a quota entity's config changed: its entity path (NULL: not followed) */
	void *quota_arg;
	bool stopped;
};

void confchange_init(struct confchange *cc, struct zk *zk, confchange_topic_fn *on_topic, void *arg);
/* Lists /config/changes (watched) and handles what is new. */
void confchange_run(struct confchange *cc);
/* True for the path whose child events confchange_run() follows. */
bool confchange_watches(const char *path);
void confchange_stop(struct confchange *cc);
/*
 * Tells on_user of every user under /config/users, and on_quota of every
 * entity under /config/users and /config/clients, as a Kafka broker loads
 * them at start: notifications may have been purged, the znodes stay.
 */
void confchange_load_users(struct confchange *cc);
/* Follows users' notifications too: on_user(arg, user). */
void confchange_on_user(struct confchange *cc, confchange_topic_fn *on_user, void *arg);
/* Follows quota entities' notifications too: on_quota(arg, "users/<u>"), ("clients/<c>"), ... */
void confchange_on_quota(struct confchange *cc, confchange_topic_fn *on_quota, void *arg);
/* The outcome of a write: 0, -ENOENT (no such entity), -ENOTCONN or -EIO. */
typedef void confchange_done_fn(void *arg, int err);
/*
 * Writes topic's overrides (config: znode_topic_config_encode) and a
 * notification, in one multi-op; failures are logged, and done (unless
 * NULL) hears the outcome once, unless this returns an error.
 */
int confchange_write(struct zk *zk, const char *topic, const char *config, confchange_done_fn *done, void *arg);
/*
 * Reads /config/<entity> ("topics/<t>", "users/<u>", ...), Kafka's
 * {"version":1,"config":{...}} (null or empty data: no keys): done as
 * cluster_config_fn says.  0, or -ENOTCONN / -ENOMEM (done never runs).
 */
int confchange_read(struct zk *zk, const char *entity, cluster_config_fn *done, void *arg);
/*
 * Changes some keys of /config/<entity> and writes a notification naming
 * entity: reads the znode (created, with its parents, if missing), sets
 * names[i] to values[i] (values[i] NULL: removes it), keeps every other
 * key (a user's SCRAM credentials and quotas share one znode), and writes
 * it back at the version read with the notification in one multi-op,
 * reading again when another writer came first.  done (unless NULL) hears
 * 0, -ENOTCONN, -EBADMSG (the znode is not Kafka's) or -EIO once, unless
 * this returns an error (-ENOTCONN, -ENOMEM).
 */
int confchange_update(struct zk *zk, const char *entity, const char *const *names, const char *const *values, int n,
		      confchange_done_fn *done, void *arg);

#endif
