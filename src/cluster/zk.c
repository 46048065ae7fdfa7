/*
 * zk.c - a ZooKeeper session on the event loop (see zk.h).
 *
 * Threads: the C client's completion thread runs every completion and
 * watcher callback.  Those only copy what they were given into a struct
 * zk_msg, append it to zk->queue under zk->mu and write the eventfd; the
 * loop thread (zk_on_wake) takes the whole queue and delivers it in order.
 * ZooKeeper answers one session's requests in the order they were sent,
 * and the queue keeps that order.
 *
 * Generations: zk->gen grows at each zk_close().  A message carries the
 * generation of the session it belongs to.  An event of a session given up
 * is dropped; a reply is delivered with rc ZCLOSING and nothing else, so
 * that its caller sees it fail exactly once and frees what it waited with.
 * Each session's watcher context (struct zk_sess) lives until
 * zookeeper_close() has returned, after which the client calls nothing more.
 *
 * Outstanding requests: the multi-threaded client joins its completion
 * thread before it fails the requests still in flight, so zookeeper_close()
 * returns without having called their completions.  Every request is kept
 * on zk->outstanding from zk_call() until its completion takes it off (or
 * its submission fails); zk_close() ends those left as ZCLOSING replies,
 * so each caller still hears of its request exactly once.
 *
 * Closing a connected session first waits (bounded) until ZooKeeper has
 * answered every request sent.  The client's zookeeper_close() sends the
 * close request and closes the socket as soon as anything at all is
 * readable (its wait ends on the first byte, not on the close's reply).
 * Replies left unread make the kernel reset the connection, and a server
 * still writing replies to earlier requests then drops the connection on
 * the reset without ever reading the close: the session, and with it the
 * broker's /brokers/ids/<id> and /controller, lives on until it expires
 * (zookeeper.session.timeout.ms), so the other brokers neither see the
 * broker leave nor elect a new controller meanwhile.  A controller stopped
 * while its pass writes partition states has hundreds of them in flight.
 */
#include "cluster/zk.h"

#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>
#include <zookeeper/zookeeper.h>

#include "net/loop.h"
#include "util/clock.h"
#include "util/log.h"

#define ZK_PATH_MAX 1024
#define ZK_CLOSE_WAIT_MS 3000 /* at most this long for the replies before closing a session */

struct zk;

/* The context the client hands back to the watcher: one per session. */
struct zk_sess {
	struct zk *zk;
	unsigned gen;
};

/* A reply or an event on its way from the completion thread to the loop. */
struct zk_msg {
	struct zk_msg *next;
	struct zk_msg *out_prev, *out_next; /* on zk->outstanding (requests only) */
	struct zk *zk;
	unsigned gen;
	bool is_event;
	bool silent; /* a parent created by zk_ensure_path(): nobody waits for it */
	/* event */
	enum zk_event ev;
	char *path;
	clientid_t cid;
	int timeout_ms; /* ZK_EV_CONNECTED: the session timeout the server granted */
	/* reply */
	zk_done_fn *done;
	void *arg;
	struct zk_reply rep;
	char *data;
	char **children;
	zoo_op_result_t results[ZK_MULTI_MAX];
	struct Stat stats[ZK_MULTI_MAX];
	char bufs[ZK_MULTI_MAX][ZK_PATH_MAX];
	int nops;
};

struct zk {
	struct loop *loop;
	struct loop_io wake_io; /* eventfd written by the completion thread */
	char *hosts;            /* zookeeper.connect without the chroot */
	char *chroot;           /* "" or "/kafka" */
	int32_t session_timeout_ms;
	zk_event_fn *fn;
	void *arg;
	zhandle_t *zh; /* NULL when closed */
	struct zk_sess *sess;
	unsigned gen;
	clientid_t last_id; /* of the last session that connected (loop thread) */
	bool have_id;
	int32_t granted_timeout_ms; /* the session timeout the server granted (loop thread) */
	pthread_mutex_t mu;         /* guards queue and outstanding */
	pthread_cond_t answered;    /* signalled (under mu) when outstanding becomes empty */
	struct zk_msg *queue, **queue_tail;
	struct zk_msg *outstanding; /* requests sent whose completion has not run */
};

/* ---- completion thread side ---- */

/* Takes a request off zk->outstanding (a no-op for an event).  Under zk->mu. */
static void zk_unlist(struct zk *zk, struct zk_msg *m)
{
	if (m->is_event)
		return;
	if (m->out_prev)
		m->out_prev->out_next = m->out_next;
	else if (zk->outstanding == m)
		zk->outstanding = m->out_next;
	if (m->out_next)
		m->out_next->out_prev = m->out_prev;
	m->out_prev = m->out_next = NULL;
	if (!zk->outstanding)
		pthread_cond_broadcast(&zk->answered);
}

/* Appends m to the queue the loop delivers.  Under zk->mu. */
static void zk_enqueue(struct zk *zk, struct zk_msg *m)
{
	zk_unlist(zk, m);
	m->next = NULL;
	*zk->queue_tail = m;
	zk->queue_tail = &m->next;
}

static void zk_push(struct zk *zk, struct zk_msg *m)
{
	uint64_t one = 1;
	ssize_t n;

	pthread_mutex_lock(&zk->mu);
	zk_enqueue(zk, m);
	pthread_mutex_unlock(&zk->mu);
	n = write(zk->wake_io.fd, &one, sizeof(one));
	(void)n; /* EAGAIN: a wake-up is already pending */
}

/* Frees a request nobody is told about (a silent parent, or one never submitted). */
static void zk_drop(struct zk_msg *m)
{
	pthread_mutex_lock(&m->zk->mu);
	zk_unlist(m->zk, m);
	pthread_mutex_unlock(&m->zk->mu);
	free(m);
}

static void zk_msg_free(struct zk_msg *m)
{
	for (int i = 0; m->children && i < m->rep.nchildren; i++)
		free(m->children[i]);
	free(m->children);
	free(m->data);
	free(m->path);
	free(m);
}

/* Strips the chroot from a server path (the result points into path). */
static const char *zk_relative(const struct zk *zk, const char *path)
{
	size_t n = strlen(zk->chroot);

	if (n && !strncmp(path, zk->chroot, n) && (path[n] == '/' || !path[n]))
		return path[n] ? path + n : "/";
	return path;
}

static int zk_event_of(int type, int state)
{
	if (type == ZOO_SESSION_EVENT) {
		if (state == ZOO_CONNECTED_STATE)
			return ZK_EV_CONNECTED;
		if (state == ZOO_EXPIRED_SESSION_STATE)
			return ZK_EV_EXPIRED;
		if (state == ZOO_AUTH_FAILED_STATE)
			return ZK_EV_AUTH_FAILED;
		return ZK_EV_CONNECTING;
	}
	if (type == ZOO_CREATED_EVENT)
		return ZK_EV_CREATED;
	if (type == ZOO_DELETED_EVENT)
		return ZK_EV_DELETED;
	if (type == ZOO_CHANGED_EVENT)
		return ZK_EV_CHANGED;
	if (type == ZOO_CHILD_EVENT)
		return ZK_EV_CHILD;
	return -1; /* ZOO_NOTWATCHING_EVENT: a watch removed, nothing to tell */
}

static void zk_watcher(zhandle_t *zh, int type, int state, const char *path, void *ctx)
{
	struct zk_sess *sess = ctx;
	struct zk_msg *m;
	int ev = zk_event_of(type, state);

	if (ev < 0 || !(m = calloc(1, sizeof(*m))))
		return; /* out of memory: the session event is lost, the timers recover (cluster.c) */
	m->zk = sess->zk;
	m->gen = sess->gen;
	m->is_event = true;
	m->ev = (enum zk_event)ev;
	if (ev == ZK_EV_CONNECTED) {
		m->cid = *zoo_client_id(zh);
		m->timeout_ms = zoo_recv_timeout(zh);
	}
	if (path && *path && type != ZOO_SESSION_EVENT)
		m->path = strdup(zk_relative(sess->zk, path));
	zk_push(sess->zk, m);
}

static void zk_copy_stat(struct zk_msg *m, const struct Stat *st)
{
	if (!st)
		return;
	m->rep.version = st->version;
	m->rep.ephemeral_owner = st->ephemeralOwner;
	m->rep.czxid = st->czxid;
	m->rep.ctime_ms = st->ctime;
}

static void zk_on_string(int rc, const char *value, const void *data)
{
	struct zk_msg *m = (struct zk_msg *)data;

	(void)value;
	m->rep.rc = rc;
	if (m->silent) { /* a parent of zk_ensure_path(): the last create reports */
		zk_drop(m);
		return;
	}
	zk_push(m->zk, m);
}

/* A create: its stat gives the new node's czxid (a broker's epoch, for /brokers/ids/<id>). */
static void zk_on_string_stat(int rc, const char *value, const struct Stat *st, const void *data)
{
	struct zk_msg *m = (struct zk_msg *)data;

	(void)value;
	m->rep.rc = rc;
	zk_copy_stat(m, rc == ZOK ? st : NULL);
	zk_push(m->zk, m);
}

static void zk_on_void(int rc, const void *data)
{
	struct zk_msg *m = (struct zk_msg *)data;

	m->rep.rc = rc;
	zk_push(m->zk, m);
}

static void zk_on_data(int rc, const char *value, int len, const struct Stat *st, const void *data)
{
	struct zk_msg *m = (struct zk_msg *)data;

	m->rep.rc = rc;
	m->rep.data_len = -1;
	if (rc == ZOK && value && len >= 0 && (m->data = malloc((size_t)len + 1))) {
		memcpy(m->data, value, (size_t)len);
		m->data[len] = '\0';
		m->rep.data_len = len;
	} else if (rc == ZOK && value && len >= 0) {
		m->rep.rc = ZSYSTEMERROR; /* out of memory */
	}
	zk_copy_stat(m, rc == ZOK ? st : NULL);
	zk_push(m->zk, m);
}

static void zk_on_stat(int rc, const struct Stat *st, const void *data)
{
	struct zk_msg *m = (struct zk_msg *)data;

	m->rep.rc = rc;
	zk_copy_stat(m, rc == ZOK ? st : NULL);
	zk_push(m->zk, m);
}

static void zk_on_strings(int rc, const struct String_vector *sv, const void *data)
{
	struct zk_msg *m = (struct zk_msg *)data;

	m->rep.rc = rc;
	if (rc == ZOK && sv && sv->count > 0) {
		m->children = calloc((size_t)sv->count, sizeof(char *));
		for (int i = 0; m->children && i < sv->count; i++)
			if ((m->children[m->rep.nchildren] = strdup(sv->data[i])))
				m->rep.nchildren++;
		if (!m->children || m->rep.nchildren < sv->count)
			m->rep.rc = ZSYSTEMERROR; /* out of memory */
	}
	zk_push(m->zk, m);
}

static void zk_on_multi(int rc, const void *data)
{
	struct zk_msg *m = (struct zk_msg *)data;

	m->rep.rc = rc;
	m->rep.failed_op = -1;
	for (int i = 0; i < m->nops && rc != ZOK; i++)
		if (m->results[i].err != ZOK) {
			m->rep.failed_op = i;
			break;
		}
	zk_push(m->zk, m);
}

/* ---- loop thread side ---- */

static void zk_deliver(struct zk *zk, struct zk_msg *m)
{
	bool stale = m->gen != zk->gen || !zk->zh; /* from a session given up since */

	if (!m->is_event) {
		struct zk_reply r = m->rep;

		r.data = m->data;
		r.children = m->children;
		if (stale) /* its caller may own memory it waits to free: tell it, once */
			r = (struct zk_reply){ .rc = ZCLOSING, .data_len = -1, .failed_op = -1 };
		m->done(m->arg, &r);
		return;
	}
	if (stale)
		return;
	if (m->ev == ZK_EV_CONNECTED) {
		zk->last_id = m->cid;
		zk->have_id = true;
		zk->granted_timeout_ms = m->timeout_ms;
	}
	zk->fn(zk->arg, m->ev, m->path, zk->have_id ? zk->last_id.client_id : 0);
}

static void zk_on_wake(struct loop_io *io, uint32_t events)
{
	struct zk *zk = (struct zk *)((char *)io - offsetof(struct zk, wake_io));
	struct zk_msg *m, *next;
	uint64_t v;

	(void)events;
	while (read(io->fd, &v, sizeof(v)) > 0)
		;
	pthread_mutex_lock(&zk->mu);
	m = zk->queue;
	zk->queue = NULL;
	zk->queue_tail = &zk->queue;
	pthread_mutex_unlock(&zk->mu);
	for (; m; m = next) {
		next = m->next;
		zk_deliver(zk, m);
		zk_msg_free(m);
	}
}

/* Splits "h:p,h:p/chroot" into hosts and chroot ("" when none). */
static int zk_split(struct zk *zk, const char *connect)
{
	const char *slash = strchr(connect, '/');
	size_t n = slash ? (size_t)(slash - connect) : strlen(connect);

	zk->hosts = strndup(connect, n);
	zk->chroot = strdup(slash ? slash : "");
	if (!zk->hosts || !zk->chroot)
		return -ENOMEM;
	n = strlen(zk->chroot);
	if (n && zk->chroot[n - 1] == '/')
		zk->chroot[n - 1] = '\0'; /* "/kafka/" is "/kafka"; "/" is no chroot */
	if (!*zk->hosts || strstr(zk->chroot, "//") || strlen(zk->chroot) >= ZK_PATH_MAX / 2)
		return -EINVAL;
	return 0;
}

int zk_new(struct loop *loop, const char *connect, int32_t session_timeout_ms, zk_event_fn *fn, void *arg,
	   struct zk **out)
{
	struct zk *zk = calloc(1, sizeof(*zk));
	int err;

	if (!zk)
		return -ENOMEM;
	zk->loop = loop;
	zk->session_timeout_ms = session_timeout_ms;
	zk->fn = fn;
	zk->arg = arg;
	zk->queue_tail = &zk->queue;
	pthread_mutex_init(&zk->mu, NULL);
	clock_cond_init(&zk->answered);
	zk->wake_io.fd = -1;
	err = zk_split(zk, connect);
	if (err)
		goto out_free;
	zk->wake_io.fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (zk->wake_io.fd < 0) {
		err = -errno;
		goto out_free;
	}
	zk->wake_io.fn = zk_on_wake;
	err = loop_add(loop, &zk->wake_io, EPOLLIN);
	if (err)
		goto out_close_fd;
	*out = zk;
	return 0;
out_close_fd:
	close(zk->wake_io.fd);
	zk->wake_io.fd = -1;
out_free:
	zk_free(zk);
	return err;
}

void zk_free(struct zk *zk)
{
	struct zk_msg *m, *next;

	if (!zk)
		return;
	zk_close(zk);
	zk_on_wake(&zk->wake_io, 0); /* the replies still queued end with ZCLOSING */
	if (zk->wake_io.fd >= 0) {   /* only once it is in the loop */
		loop_del(zk->loop, &zk->wake_io);
		close(zk->wake_io.fd);
	}
	for (m = zk->queue; m; m = next) {
		next = m->next;
		zk_msg_free(m);
	}
	pthread_cond_destroy(&zk->answered);
	pthread_mutex_destroy(&zk->mu);
	free(zk->hosts);
	free(zk->chroot);
	free(zk);
}

/* The C client's own log lines, routed to ours (debug category "cluster"). */
static void zk_client_log(const char *msg)
{
	log_debug(LOGC_CLUSTER, "cluster", "zookeeper client: %s", msg);
}

int zk_open(struct zk *zk, bool resume)
{
	struct zk_sess *sess = calloc(1, sizeof(*sess));

	if (!sess)
		return -ENOMEM;
	zk_close(zk);
	sess->zk = zk;
	sess->gen = zk->gen;
	zoo_set_debug_level((log_debug_mask & LOGC_CLUSTER) ? ZOO_LOG_LEVEL_INFO : ZOO_LOG_LEVEL_WARN);
	errno = 0;
	zk->zh = zookeeper_init2(zk->hosts, zk_watcher, zk->session_timeout_ms,
				 resume && zk->have_id ? &zk->last_id : NULL, sess, 0, zk_client_log);
	if (!zk->zh) {
		int err = errno ? -errno : -EINVAL;

		free(sess);
		return err;
	}
	zk->sess = sess;
	return 0;
}

/* The requests zookeeper_close() left without a completion: ZCLOSING replies (silent ones freed). */
static void zk_fail_outstanding(struct zk *zk)
{
	uint64_t one = 1;
	ssize_t n;

	pthread_mutex_lock(&zk->mu);
	while (zk->outstanding) {
		struct zk_msg *m = zk->outstanding;

		if (m->silent) {
			zk_unlist(zk, m);
			free(m);
			continue;
		}
		m->rep = (struct zk_reply){ .rc = ZCLOSING, .data_len = -1, .failed_op = -1 };
		zk_enqueue(zk, m);
	}
	pthread_mutex_unlock(&zk->mu);
	n = write(zk->wake_io.fd, &one, sizeof(one));
	(void)n;
}

/*
 * A connected session: waits up to ZK_CLOSE_WAIT_MS until every request
 * sent has its reply (header comment: a close behind unread replies can be
 * lost).  The loop thread waits here, so nothing new is sent meanwhile; a
 * connection lost meanwhile fails the requests at once.
 */
static void zk_await_replies(struct zk *zk)
{
	int64_t t0 = clock_mono_ms();
	struct timespec until;
	int left = 0, rc = 0;

	if (zoo_state(zk->zh) != ZOO_CONNECTED_STATE)
		return;
	until = clock_mono_deadline(ZK_CLOSE_WAIT_MS);
	pthread_mutex_lock(&zk->mu);
	while (zk->outstanding && rc != ETIMEDOUT)
		rc = pthread_cond_timedwait(&zk->answered, &zk->mu, &until);
	for (struct zk_msg *m = zk->outstanding; m; m = m->out_next)
		left++;
	pthread_mutex_unlock(&zk->mu);
	if (left)
		log_warn("closing the zookeeper session with %d requests still unanswered after %lld ms: it may "
			 "outlive this broker until it expires",
			 left, (long long)(clock_mono_ms() - t0));
}

void zk_close(struct zk *zk)
{
	if (!zk->zh)
		return;
	zk_await_replies(zk);
	zk->gen++; /* everything still queued or yet to come from it is dropped */
	zookeeper_close(zk->zh);
	zk->zh = NULL;
	free(zk->sess);
	zk->sess = NULL;
	zk_fail_outstanding(zk);
}

void zk_forget_session(struct zk *zk)
{
	zk->have_id = false;
}

bool zk_is_open(const struct zk *zk)
{
	return zk->zh != NULL;
}

const char *zk_hosts(const struct zk *zk)
{
	return zk->hosts;
}

int32_t zk_session_timeout_ms(const struct zk *zk)
{
	return zk->granted_timeout_ms;
}

/* A reply slot for one request of the current session; NULL when closed or out of memory. */
static struct zk_msg *zk_call(struct zk *zk, zk_done_fn *done, void *arg)
{
	struct zk_msg *m;

	if (!zk->zh || !(m = calloc(1, sizeof(*m))))
		return NULL;
	m->zk = zk;
	m->gen = zk->gen;
	m->done = done;
	m->arg = arg;
	m->rep.failed_op = -1;
	pthread_mutex_lock(&zk->mu);
	m->out_next = zk->outstanding;
	if (m->out_next)
		m->out_next->out_prev = m;
	zk->outstanding = m;
	pthread_mutex_unlock(&zk->mu);
	return m;
}

/* chroot + path into full; -ENAMETOOLONG. */
static int zk_full(const struct zk *zk, const char *path, char *full)
{
	int n = snprintf(full, ZK_PATH_MAX, "%s%s", zk->chroot, strcmp(path, "/") || !*zk->chroot ? path : "");

	return n < 0 || n >= ZK_PATH_MAX ? -ENAMETOOLONG : 0;
}

/* A reply slot for a request on path, whose full name goes into full; -errno. */
static int zk_begin(struct zk *zk, const char *path, char *full, zk_done_fn *done, void *arg, struct zk_msg **m)
{
	if (zk_full(zk, path, full))
		return -ENAMETOOLONG;
	*m = zk_call(zk, done, arg);
	return *m ? 0 : zk->zh ? -ENOMEM : -ENOTCONN;
}

/* Ends a request whose submission failed at once (the completion will never run). */
static int zk_submitted(struct zk_msg *m, int zrc)
{
	if (zrc == ZOK)
		return 0;
	zk_drop(m);
	return zrc == ZINVALIDSTATE ? -ENOTCONN : zrc == ZBADARGUMENTS ? -EINVAL : -EIO;
}

int zk_create(struct zk *zk, const char *path, const char *data, int len, bool ephemeral, zk_done_fn *done, void *arg)
{
	struct zk_msg *m;
	char full[ZK_PATH_MAX];
	int err = zk_begin(zk, path, full, done, arg, &m);

	if (err)
		return err;
	return zk_submitted(m, zoo_acreate2(zk->zh, full, data, len, &ZOO_OPEN_ACL_UNSAFE,
					    ephemeral ? ZOO_EPHEMERAL : ZOO_PERSISTENT, zk_on_string_stat, m));
}

int zk_delete(struct zk *zk, const char *path, int32_t version, zk_done_fn *done, void *arg)
{
	struct zk_msg *m;
	char full[ZK_PATH_MAX];
	int err = zk_begin(zk, path, full, done, arg, &m);

	if (err)
		return err;
	return zk_submitted(m, zoo_adelete(zk->zh, full, version, zk_on_void, m));
}

/* get, exists and children: the same shape, one client call each. */
enum zk_read { ZK_READ_GET, ZK_READ_EXISTS, ZK_READ_CHILDREN };

static int zk_read(struct zk *zk, enum zk_read what, const char *path, bool watch, zk_done_fn *done, void *arg)
{
	struct zk_msg *m;
	char full[ZK_PATH_MAX];
	int zrc = zk_begin(zk, path, full, done, arg, &m);

	if (zrc)
		return zrc;
	if (what == ZK_READ_GET)
		zrc = zoo_aget(zk->zh, full, watch, zk_on_data, m);
	else if (what == ZK_READ_EXISTS)
		zrc = zoo_aexists(zk->zh, full, watch, zk_on_stat, m);
	else
		zrc = zoo_aget_children(zk->zh, full, watch, zk_on_strings, m);
	return zk_submitted(m, zrc);
}

int zk_get(struct zk *zk, const char *path, bool watch, zk_done_fn *done, void *arg)
{
	return zk_read(zk, ZK_READ_GET, path, watch, done, arg);
}

int zk_exists(struct zk *zk, const char *path, bool watch, zk_done_fn *done, void *arg)
{
	return zk_read(zk, ZK_READ_EXISTS, path, watch, done, arg);
}

int zk_children(struct zk *zk, const char *path, bool watch, zk_done_fn *done, void *arg)
{
	return zk_read(zk, ZK_READ_CHILDREN, path, watch, done, arg);
}

/* The create of zk_ensure_path() reports ZOK when the node was already there. */
struct zk_ensure {
	zk_done_fn *done;
	void *arg;
};

static void zk_ensure_done(void *arg, const struct zk_reply *rep)
{
	struct zk_ensure *e = arg;
	struct zk_reply r = *rep;

	if (r.rc == ZNODEEXISTS)
		r.rc = ZOK;
	e->done(e->arg, &r);
	free(e);
}

int zk_ensure_path(struct zk *zk, const char *path, zk_done_fn *done, void *arg)
{
	char full[ZK_PATH_MAX];
	struct zk_ensure *e;
	struct zk_msg *m;
	int err;

	if (zk_full(zk, path, full) || !*path)
		return -EINVAL;
	/* the parents, first to last: ZooKeeper applies one session's requests in order */
	for (char *s = strchr(full + 1, '/'); s; s = strchr(s + 1, '/')) {
		if (!(m = zk_call(zk, NULL, NULL)))
			return zk->zh ? -ENOMEM : -ENOTCONN;
		m->silent = true;
		*s = '\0';
		err = zk_submitted(
			m, zoo_acreate(zk->zh, full, NULL, -1, &ZOO_OPEN_ACL_UNSAFE, ZOO_PERSISTENT, zk_on_string, m));
		*s = '/';
		if (err)
			return err;
	}
	if (!(e = malloc(sizeof(*e))))
		return -ENOMEM;
	e->done = done;
	e->arg = arg;
	if (!(m = zk_call(zk, zk_ensure_done, e))) {
		free(e);
		return zk->zh ? -ENOMEM : -ENOTCONN;
	}
	err = zk_submitted(m,
			   zoo_acreate(zk->zh, full, NULL, -1, &ZOO_OPEN_ACL_UNSAFE, ZOO_PERSISTENT, zk_on_string, m));
	if (err)
		free(e);
	return err;
}

int zk_multi(struct zk *zk, const struct zk_op *ops, int n, zk_done_fn *done, void *arg)
{
	struct zk_msg *m = zk_call(zk, done, arg);
	char full[ZK_MULTI_MAX][ZK_PATH_MAX];
	zoo_op_t zops[ZK_MULTI_MAX];

	if (!m)
		return zk->zh ? -ENOMEM : -ENOTCONN;
	if (n < 1 || n > ZK_MULTI_MAX) {
		zk_drop(m);
		return -EINVAL;
	}
	m->nops = n;
	for (int i = 0; i < n; i++) {
		if (zk_full(zk, ops[i].path, full[i])) {
			zk_drop(m);
			return -ENAMETOOLONG;
		}
		if (ops[i].type == ZK_OP_CREATE)
			zoo_create_op_init(&zops[i], full[i], ops[i].data, ops[i].len, &ZOO_OPEN_ACL_UNSAFE,
					   (ops[i].ephemeral ? ZOO_EPHEMERAL : ZOO_PERSISTENT) |
						   (ops[i].sequential ? ZOO_SEQUENCE : 0),
					   m->bufs[i], sizeof(m->bufs[i]));
		else if (ops[i].type == ZK_OP_SET)
			zoo_set_op_init(&zops[i], full[i], ops[i].data, ops[i].len, ops[i].version, &m->stats[i]);
		else
			zoo_check_op_init(&zops[i], full[i], ops[i].version);
	}
	return zk_submitted(m, zoo_amulti(zk->zh, n, zops, m->results, zk_on_multi, m));
}
