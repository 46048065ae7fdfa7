/*
 * quota_zk.h - client quotas in ZooKeeper, as Kafka's brokers keep them in
 * ZooKeeper mode: the settings of quota.h cached from /config/users/<u>,
 * /config/clients/<c> and /config/users/<u>/clients/<c>, each Kafka's
 * {"version":1,"config":{"producer_byte_rate":"1048576",...}}.
 *
 * Names in paths are sanitized as Kafka's Sanitizer does them (URL
 * encoding, "%20" for a space, "%2A" for '*'), so a client id may hold a
 * '/'; the <default> entity is the name "<default>" itself.  A user's
 * znode may hold its SCRAM credentials too: writes change only the quota
 * keys (cluster_entity_config_update()).
 */
#ifndef GREGOR_BROKER_QUOTA_ZK_H
#define GREGOR_BROKER_QUOTA_ZK_H

#include <stdbool.h>
#include <stddef.h>

#include "broker/quota.h"

struct broker;

/* e's entity path ("users/<u>", "clients/<c>", "users/<u>/clients/<c>") into buf (CONFCHANGE_ENTITY_MAX). */
void quota_zk_entity(const struct quota_entity *e, char *buf, size_t size);
/* The entity an entity path names; false if it names none (or a name is too long). */
bool quota_zk_parse(const char *entity, struct quota_entity *e);

/* The outcome of quota_zk_write(): 0, or -ENOTCONN (ZooKeeper did not take it), -EBADMSG, -EIO. */
typedef void quota_zk_done_fn(void *arg, int err);
/*
 * Sets (values[k] > 0) or removes (values[k] 0) the quota keys of e for
 * which change[k] is set, in ZooKeeper, with a notification; the cache
 * follows when done hears 0.  0 (done runs once) or -ENOTCONN / -ENOMEM.
 */
int quota_zk_write(struct broker *b, const struct quota_entity *e, const bool change[QUOTA_KINDS],
		   const double values[QUOTA_KINDS], quota_zk_done_fn *done, void *arg);
/* A quota entity changed in ZooKeeper, or is there at a session's start (on_quota_config): reads it again. */
void quota_zk_changed(void *arg, const char *entity);

#endif
