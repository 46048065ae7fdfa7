/*
 * zk.h - one ZooKeeper session, driven from the broker's event loop.
 *
 * The multithreaded C client (libzookeeper_mt) runs its own I/O and
 * completion threads.  Every completion and watch event is copied into a
 * queue on the completion thread and handed to the loop through an eventfd
 * of this module, so every zk_done_fn and zk_event_fn runs in the loop
 * thread and nothing here ever blocks the loop on the network.
 *
 * Paths are relative to the chroot of zookeeper.connect
 * ("h1:2181,h2:2181/kafka"): the chroot is prefixed here and stripped from
 * event paths, and zk_ensure_path() creates it like any other parent (as
 * Kafka does), so it need not exist beforehand.
 *
 * Sessions: zk_open() starts one (asynchronously: ZK_EV_CONNECTED tells
 * when it is up), zk_close() ends it.  Each session has a generation:
 * events of a session closed meanwhile are dropped, and its requests'
 * replies come back with rc ZCLOSING and no data, so a callback that sees
 * ZCLOSING must only clean up.
 */
#ifndef GREGOR_CLUSTER_ZK_H
#define GREGOR_CLUSTER_ZK_H

#include <stdbool.h>
#include <stdint.h>

struct loop;
struct zk;

/* Session and watch events (zk_event_fn). */
enum zk_event {
	ZK_EV_CONNECTED,   /* session established or connection re-established */
	ZK_EV_CONNECTING,  /* connection lost; the client is reconnecting */
	ZK_EV_EXPIRED,     /* the server expired the session: its ephemerals are gone */
	ZK_EV_AUTH_FAILED, /* authentication failed: the session is unusable */
	ZK_EV_CREATED,     /* watched node created (path set) */
	ZK_EV_DELETED,     /* watched node deleted */
	ZK_EV_CHANGED,     /* watched node's data changed */
	ZK_EV_CHILD,       /* watched node's children changed */
};

/* What a request came back with; valid during the zk_done_fn call only. */
struct zk_reply {
	int rc;                  /* ZOK, ZNONODE, ZNODEEXISTS, ZBADVERSION, ZCONNECTIONLOSS, ... (zookeeper.h) */
	const char *data;        /* get: the node's data, NUL-terminated (NULL if the node holds null) */
	int data_len;            /* -1 for null data */
	int32_t version;         /* get/exists/set: stat.version */
	int64_t ephemeral_owner; /* get/exists: stat.ephemeralOwner (0: persistent) */
	int64_t czxid;           /* get/exists/create: stat.czxid, the zxid that created the node */
	int64_t ctime_ms;        /* get/exists/create: stat.ctime, when it was created (server's wall clock) */
	char **children;         /* children: names (not paths) */
	int nchildren;
	int failed_op; /* multi: index of the first op that failed, -1 if none */
};

typedef void zk_done_fn(void *arg, const struct zk_reply *rep);
/* path: relative to the chroot; NULL for session events.  session_id: of the current session. */
typedef void zk_event_fn(void *arg, enum zk_event ev, const char *path, int64_t session_id);

/*
 * connect is zookeeper.connect ("host:port[,host:port...][/chroot]").
 * Returns 0 or -EINVAL (bad chroot) / -ENOMEM / -errno; nothing connects yet.
 */
int zk_new(struct loop *loop, const char *connect, int32_t session_timeout_ms, zk_event_fn *fn, void *arg,
	   struct zk **out);
/* Closes the session (if open) and frees zk. */
void zk_free(struct zk *zk);

/*
 * Starts a session.  resume: ask to resume the last session this zk had
 * (it may still be valid on the server after a connection that was given
 * up with zk_close()); if the server expired it meanwhile, ZK_EV_EXPIRED
 * follows.  Returns 0, or -errno when the client refuses at once
 * (unresolvable host: try again later).
 */
int zk_open(struct zk *zk, bool resume);
/* Ends the handle; pending requests and events are dropped.  A connected
 * session is closed on the server (its ephemerals vanish at once). */
void zk_close(struct zk *zk);
/* Forgets the id of the last session so that the next zk_open() makes a new one. */
void zk_forget_session(struct zk *zk);
bool zk_is_open(const struct zk *zk);
/* Hosts part of zookeeper.connect, for log lines. */
const char *zk_hosts(const struct zk *zk);
/* The session timeout the server granted at the last connection (it bounds the one asked for). */
int32_t zk_session_timeout_ms(const struct zk *zk);

/*
 * Requests.  Each returns 0 once queued (done then runs exactly once in the
 * loop thread, with rc ZCLOSING if the session was closed first, at the
 * latest in zk_free()) or -errno (done never runs).
 * watch: leave a one-shot watch reported through zk_event_fn.
 * data NULL with len -1 stores null data, as Kafka's persistent paths hold.
 */
int zk_create(struct zk *zk, const char *path, const char *data, int len, bool ephemeral, zk_done_fn *done, void *arg);
/* Deletes path if its version is version (-1: any); ZNOTEMPTY while it has children. */
int zk_delete(struct zk *zk, const char *path, int32_t version, zk_done_fn *done, void *arg);
int zk_get(struct zk *zk, const char *path, bool watch, zk_done_fn *done, void *arg);
int zk_exists(struct zk *zk, const char *path, bool watch, zk_done_fn *done, void *arg);
int zk_children(struct zk *zk, const char *path, bool watch, zk_done_fn *done, void *arg);
/* Creates path and each missing parent (and the chroot) with null data; done gets
 * ZOK whether or not it existed. */
int zk_ensure_path(struct zk *zk, const char *path, zk_done_fn *done, void *arg);

/* One operation of zk_multi(): all apply or none. */
struct zk_op {
	enum { ZK_OP_CREATE, ZK_OP_SET, ZK_OP_CHECK } type; /* CHECK: path is at version */
	const char *path;
	const char *data;
	int len;
	bool ephemeral;  /* ZK_OP_CREATE */
	bool sequential; /* ZK_OP_CREATE: the server appends a 10-digit sequence number to path */
	int32_t version; /* ZK_OP_SET, ZK_OP_CHECK: expected version, -1 any */
};
#define ZK_MULTI_MAX 4
int zk_multi(struct zk *zk, const struct zk_op *ops, int n, zk_done_fn *done, void *arg);

#endif
