/*
 * quota.h - client quotas (KIP-13, KIP-55, KIP-124, KIP-546): the quota
 * settings per entity, which one applies to a request, and how long a
 * client over its quota is throttled.
 *
 * An entity is a user, a client-id, or both; each component is a name or
 * the <default> entity.  Three keys: producer_byte_rate and
 * consumer_byte_rate (bytes per second) and request_percentage (percent
 * of one thread's time).  Each key is resolved on its own, in Kafka's
 * order of the eight combinations (quota_resolve()).  Users are all
 * ANONYMOUS until the broker authenticates them.
 *
 * The settings live in <first log dir>/client-quotas, replaced whole with
 * durable_replace() on every change, so they survive a restart.  In
 * cluster mode they are a cache of ZooKeeper's (quota_zk.h) and the file
 * is not used.
 */
#ifndef GREGOR_BROKER_QUOTA_H
#define GREGOR_BROKER_QUOTA_H

#include <stdbool.h>
#include <stdint.h>

#include "proto/codec.h"

enum quota_kind { QUOTA_PRODUCE = 0, QUOTA_FETCH, QUOTA_REQUEST, QUOTA_KINDS };
/* An entity component: not part of the entity, the <default> entity, or a name. */
enum quota_comp { QUOTA_ABSENT = 0, QUOTA_DEFAULT, QUOTA_NAME };

#define QUOTA_USER_ANONYMOUS "ANONYMOUS"
#define QUOTA_NAME_MAX 255
#define QUOTA_ENTRIES_MAX 100000 /* entities with settings; AlterClientQuotas refuses more */

struct quota_entity {
	uint8_t user, client; /* enum quota_comp */
	char user_name[QUOTA_NAME_MAX + 1];
	char client_name[QUOTA_NAME_MAX + 1];
};

/* The setting's name for kind ("producer_byte_rate", ...); kind from a name, -1 if unknown. */
const char *quota_key(int kind);
int quota_kind_of(const char *key, int len);

/* Loads <dir>/client-quotas (absent: none).  0 or -errno (a corrupt file is -EINVAL). */
int quota_open(const char *dir);
void quota_close(void);

/*
 * Sets (remove false) or removes kind's value on entity e, in memory;
 * quota_save() then writes every setting.  Values are checked by the caller.
 */
void quota_set(const struct quota_entity *e, int kind, double value, bool remove);
/*
 * A copy of every setting, taken before a change; quota_restore() puts it
 * back (put_back, when quota_save() failed) or just frees it.
 */
struct quota_backup;
struct quota_backup *quota_backup(void);
void quota_restore(struct quota_backup *b, bool put_back);
/* Whether e has any setting. */
bool quota_has(const struct quota_entity *e);
int quota_save(void);

/* The i-th entity with at least one setting (0 <= i < quota_count()); has[k] false where unset. */
int quota_count(void);
void quota_get(int i, struct quota_entity *e, double vals[QUOTA_KINDS], bool has[QUOTA_KINDS]);

/*
 * The quota of kind for a request from (user, client_id), first match in
 * Kafka's order: user+client, user+<default> client, user, <default>
 * user+client, <default> user+<default> client, <default> user, client,
 * <default> client.  False when none applies.  *e is the entity matched,
 * with <default> components replaced by the request's own names: the key
 * its rate is measured under (clients sharing a default quota each get
 * their own rate; a user quota is shared by all that user's clients).
 */
bool quota_resolve(int kind, const char *user, const char *client_id, double *bound, struct quota_entity *e);

/*
 * Records value (bytes, or percent-seconds of thread time) against the
 * rate of (kind, e) at now_ms and returns the throttle time in ms (0 when
 * within bound), as Kafka computes it: (rate - bound) / bound x the window
 * the rate was measured over (quota.window.num x quota.window.size.seconds).
 */
int64_t quota_record(int kind, const struct quota_entity *e, double value, double bound, int64_t now_ms);
/* Adds throttle_ms to the throttle time reported for (kind, e). */
void quota_note_throttle(int kind, const struct quota_entity *e, int64_t throttle_ms);

/* quota.window.num and quota.window.size.seconds (forgets every rate measured so far). */
void quota_windows_set(int num, int size_s);
/* Forgets every rate measured (shutdown). */
void quota_rates_clear(void);

/* One measured client, for /metrics: quota_metric(i, ...) for 0 <= i < quota_metric_count(). */
struct quota_metric {
	int kind;
	char user[QUOTA_NAME_MAX + 1];
	char client_id[QUOTA_NAME_MAX + 1];
	double rate;        /* bytes/s, or percent for QUOTA_REQUEST */
	double throttle_ms; /* mean throttle time over the window */
};
int quota_metric_count(void);
void quota_metric_get(int i, int64_t now_ms, struct quota_metric *m);

#endif
