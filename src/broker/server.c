/*
 * server.c - listener, accept, signals and housekeeping (see server.h).
 *
 * Threads: one event-loop thread runs every request (no locks on the
 * request path); the syncer thread does fdatasync group commits.  The
 * design allows one loop per core later; it is measured first.
 */
#include "broker/server.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "broker/api.h"
#include "broker/authz.h"
#include "broker/cshut.h"
#include "broker/fetch_park.h"
#include "broker/handlers.h"
#include "broker/interbroker.h"
#include "broker/park.h"
#include "broker/quota_zk.h"
#include "broker/registry.h"
#include "broker/replica.h"
#include "broker/cleaner.h"
#include "broker/creator.h"
#include "broker/stats.h"
#include "broker/stats_snap.h"
#include "broker/console.h"
#include "broker/syncer.h"
#include "broker/topic_zk.h"
#include "broker/tls_settings.h"
#include "broker/txn_verify.h"
#include "cluster/cluster.h"
#include "cluster/mcache.h"
#include "log/partition.h"
#include "log/segment.h"
#include "sec/sasl_plain.h"
#include "sec/scram.h"
#include "sec/tls.h"
#include "util/clock.h"
#include "util/log.h"

#define HOUSEKEEPING_MS 1000
#define ACCEPT_PAUSE_MS 100 /* after accept(2) ran out of descriptors or memory */

struct broker *api_broker;
static struct loop_io server_signal_io;
static int server_nconns;

/* Splits "PLAINTEXT://host:port" (first entry of a list). */
static int parse_listener(const char *spec, char *host, size_t hostlen, int32_t *port)
{
	const char *p = strstr(spec, "://");
	const char *colon;
	size_t n;

	p = p ? p + 3 : spec;
	n = strcspn(p, ",");
	colon = memrchr(p, ':', n);
	if (!colon)
		return -EINVAL;
	if ((size_t)(colon - p) >= hostlen)
		return -EINVAL;
	memcpy(host, p, (size_t)(colon - p));
	host[colon - p] = '\0';
	if (host[0] == '[') { /* [::1] */
		memmove(host, host + 1, strlen(host));
		host[strcspn(host, "]")] = '\0';
	}
	*port = atoi(colon + 1);
	return *port >= 0 && *port <= 65535 ? 0 : -EINVAL;
}

/* Copies the NAME of a "NAME://host:port" item (PLAINTEXT when it has none); returns 0 or -EINVAL. */
static int listener_name_of(const char *item, char *name, size_t namelen)
{
	const char *sep = strstr(item, "://");
	size_t n = sep && (size_t)(sep - item) < strcspn(item, ",") ? (size_t)(sep - item) : 0;

	if (n >= namelen)
		return -EINVAL;
	snprintf(name, namelen, "%.*s", (int)n, n ? item : "PLAINTEXT");
	return 0;
}

/*
 * The security protocol of listener name: its entry in
 * listener.security.protocol.map, else the name itself.  Returns "" when
 * unknown (copied into proto).
 */
static void listener_protocol(const struct broker *b, const char *name, char *proto, size_t protolen)
{
	const char *map = b->cfg.listener_security_protocol_map ? b->cfg.listener_security_protocol_map : "";
	size_t len = strlen(name);

	snprintf(proto, protolen, "%s", name);
	for (const char *p = map; *p;) {
		size_t n = strcspn(p, ",");

		if (n > len && p[len] == ':' && !strncasecmp(p, name, len)) {
			snprintf(proto, protolen, "%.*s", (int)(n - len - 1), p + len + 1);
			return;
		}
		p += n + (p[n] == ',');
	}
}

/*
 * Open connections per client address (max.connections.per.ip): a small
 * chained hash keyed by the address part of conn_peer() ("ip:port").
 */
#define SERVER_IP_BUCKETS 1024
struct server_ip {
	struct server_ip *next;
	int32_t n;
	char ip[64];
};
static struct server_ip *server_ips[SERVER_IP_BUCKETS];

static struct server_ip **server_ip_slot(const struct conn *c, char *ip, size_t iplen)
{
	const char *peer = conn_peer(c), *colon = strrchr(peer, ':');
	size_t n = colon ? (size_t)(colon - peer) : strlen(peer);
	uint32_t h = 2166136261u;
	struct server_ip **pp;

	if (n >= iplen)
		n = iplen - 1;
	memcpy(ip, peer, n);
	ip[n] = '\0';
	for (size_t i = 0; i < n; i++)
		h = (h ^ (uint8_t)ip[i]) * 16777619u;
	for (pp = &server_ips[h % SERVER_IP_BUCKETS]; *pp; pp = &(*pp)->next)
		if (!strcmp((*pp)->ip, ip))
			break;
	return pp;
}

/* Counts c against its address; returns the address's open connections (or -ENOMEM). */
static int32_t server_ip_add(const struct conn *c)
{
	char ip[64];
	struct server_ip **pp = server_ip_slot(c, ip, sizeof(ip));

	if (!*pp) {
		*pp = calloc(1, sizeof(**pp));
		if (!*pp)
			return -ENOMEM;
		snprintf((*pp)->ip, sizeof((*pp)->ip), "%s", ip);
	}
	return ++(*pp)->n;
}

static void server_ip_del(const struct conn *c)
{
	char ip[64];
	struct server_ip **pp = server_ip_slot(c, ip, sizeof(ip)), *e = *pp;

	if (e && --e->n <= 0) {
		*pp = e->next;
		free(e);
	}
}

static void server_on_closed(struct conn *c)
{
	fetch_park_conn_closed(c); /* its parked fetches are finished by the next fetch_wake */
	stats_set_connections(--server_nconns);
	stats_listener_conn(conn_listener(c), false);
	server_ip_del(c);
}

/*
 * accept(2) failed with EMFILE/ENFILE/ENOBUFS/ENOMEM: the pending connection
 * stays in the backlog and the level-triggered listener stays readable, so
 * polling it again at once would spin.  Stop polling it for ACCEPT_PAUSE_MS
 * (connections closing meanwhile free descriptors); log once per episode.
 */
static void server_accept_pause(struct broker *b, int err)
{
	if (!b->accept_paused)
		log_warn("cannot accept connections: %s; retrying every %d ms until descriptors free up", strerror(err),
			 ACCEPT_PAUSE_MS);
	b->accept_paused = true;
	for (int i = 0; i < b->nlisteners; i++)
		loop_mod(b->loop, &b->listeners[i].io, 0);
	loop_timer_set(b->loop, &b->accept_pause, clock_mono_ms() + ACCEPT_PAUSE_MS);
}

static void server_accept_resume(struct loop_timer *t)
{
	struct broker *b = (struct broker *)((char *)t - offsetof(struct broker, accept_pause));

	for (int i = 0; i < b->nlisteners; i++)
		loop_mod(b->loop, &b->listeners[i].io, EPOLLIN);
}

static void server_accept(struct loop_io *io, uint32_t events)
{
	struct broker *b = api_broker;
	struct listener *l = (struct listener *)io;
	struct conn_cfg cc = {
		.xport = l->tls ? &tls_xport : NULL,
		.xport_arg = l->tls,
		.listener = (int)(l - b->listeners),
		.auth_required = l->sasl,
		.frame_bytes_max = b->cfg.socket_request_max_bytes,
		.out_bytes_max = 64 << 20,
		.slots_max = b->cfg.queued_max_requests,
		.idle_ms_max = b->cfg.connections_max_idle_ms,
		.on_request = api_on_request,
		.on_closed = server_on_closed,
	};

	(void)events;
	for (int i = 0; i < 64; i++) {
		int fd = accept4(io->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC), one = 1;
		struct conn *c;

		if (fd < 0) {
			if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
				server_accept_pause(b, errno);
			return;
		}
		if (b->accept_paused) {
			log_info("accepting connections again");
			b->accept_paused = false;
		}
		if (server_nconns >= b->cfg.max_connections) {
			log_warn("refusing a connection: max.connections=%d reached", b->cfg.max_connections);
			close(fd);
			continue;
		}
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		if (b->cfg.socket_send_buffer_bytes > 0)
			setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &b->cfg.socket_send_buffer_bytes, sizeof(int));
		if (b->cfg.socket_receive_buffer_bytes > 0)
			setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &b->cfg.socket_receive_buffer_bytes, sizeof(int));
		if (conn_new(b->loop, fd, &cc, &c) == 0) {
			int32_t n = server_ip_add(c);

			stats_set_connections(++server_nconns); /* both undone by server_on_closed */
			stats_add(&stats_counters.connections_accepted, 1);
			stats_listener_conn(cc.listener, true);
			log_debug(LOGC_NET, "net", "%s: accepted", conn_peer(c));
			if (n < 0 || n > b->cfg.max_connections_per_ip) {
				log_warn("refusing a connection from %s: max.connections.per.ip=%d reached",
					 conn_peer(c), b->cfg.max_connections_per_ip);
				conn_close(c, NULL);
			}
		}
	}
}

/* Binds and listens on host:port; returns the socket or -errno (logged), *port set to the bound port. */
static int server_bind(const struct broker *b, const char *host, int32_t *port)
{
	char portstr[16];
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE };
	struct addrinfo *ai;
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	int fd, one = 1, err;

	snprintf(portstr, sizeof(portstr), "%d", *port);
	err = getaddrinfo(host[0] ? host : NULL, portstr, &hints, &ai);
	if (err) {
		log_error("listeners: cannot resolve '%s': %s", host, gai_strerror(err));
		return -EINVAL;
	}
	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (fd < 0 || bind(fd, ai->ai_addr, ai->ai_addrlen) < 0 ||
	    listen(fd, b->cfg.socket_listen_backlog_size > 0 ? b->cfg.socket_listen_backlog_size : 511) < 0) {
		err = -errno;
		log_error("cannot listen on %s:%d: %s", host, *port, strerror(errno));
		freeaddrinfo(ai);
		if (fd >= 0)
			close(fd);
		return err;
	}
	freeaddrinfo(ai);
	getsockname(fd, (struct sockaddr *)&ss, &sl);
	*port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
					       : ((struct sockaddr_in *)&ss)->sin_port);
	return fd;
}

/* The TLS context of an SSL listener from the ssl.* settings; -EINVAL (logged) when they are bad. */
static int server_tls(struct broker *b, struct listener *l)
{
	struct tls_cfg tc;
	char err[512];

	tls_settings_of(&b->cfg, l->name, &tc);
	if (tls_ctx_new(&tc, &l->tls, err, sizeof(err))) {
		log_error("listener %s: %s", l->name, err);
		return -EINVAL;
	}
	return 0;
}

/* One entry of sasl.enabled.mechanisms: its SASL_MECHS_* bit, or 0 (logged) if not served. */
static int server_sasl_mech(const struct listener *l, const char *p, size_t len)
{
	if (len == 5 && !strncmp(p, "PLAIN", 5))
		return SASL_MECHS_PLAIN;
	if (scram_mech_of(p, len))
		return 1 << scram_mech_of(p, len);
	if (len == 6 && !strncmp(p, "GSSAPI", 6))
		log_error("listener %s: sasl.enabled.mechanisms: GSSAPI (Kerberos) is not supported; use PLAIN, "
			  "SCRAM-SHA-256 or SCRAM-SHA-512",
			  l->name);
	else
		log_error("listener %s: sasl.enabled.mechanisms: %.*s is not supported (PLAIN, SCRAM-SHA-256, "
			  "SCRAM-SHA-512)",
			  l->name, (int)len, p);
	return 0;
}

/* connections.max.reauth.ms of each mechanism of l: listener.name.<l>.<mech>., then listener.name.<l>., then broker-wide. */
static int server_sasl_reauth(struct broker *b, struct listener *l)
{
	static const char *const keys[] = { "plain.connections.max.reauth.ms",
					    "scram-sha-256.connections.max.reauth.ms",
					    "scram-sha-512.connections.max.reauth.ms" };

	for (int i = 0; i < 3; i++) {
		const char *v =
			config_listener_ssl(&b->cfg, l->name, keys[i],
					    config_listener_ssl(&b->cfg, l->name, "connections.max.reauth.ms", NULL));
		char *end;

		l->reauth_ms[i] = b->cfg.connections_max_reauth_ms;
		if (!v)
			continue;
		errno = 0;
		l->reauth_ms[i] = strtoll(v, &end, 10);
		if (errno || end == v || *end || l->reauth_ms[i] < 0) {
			log_error("listener %s: connections.max.reauth.ms: '%s' is not a number of ms >= 0", l->name,
				  v);
			return -EINVAL;
		}
	}
	return 0;
}

/*
 * A SASL listener's mechanisms and users: every enabled mechanism must be
 * one served; PLAIN needs a JAAS entry that parses, SCRAM the users of
 * sasl.scram.users.
 */
static int server_sasl(struct broker *b, struct listener *l)
{
	const char *mechs =
		config_listener_ssl(&b->cfg, l->name, "sasl.enabled.mechanisms", b->cfg.sasl_enabled_mechanisms);
	const char *jaas = config_listener_ssl(&b->cfg, l->name, "plain.sasl.jaas.config", b->cfg.sasl_jaas_config);
	char err[256];
	int n;

	for (const char *p = mechs ? mechs : ""; *p; p += *p == ',') {
		size_t len;
		int bit;

		p += strspn(p, " ");
		len = strcspn(p, ", ");
		bit = len ? server_sasl_mech(l, p, len) : 0;
		if (len && !bit)
			return -EINVAL;
		l->sasl_mechs |= bit;
		p += len;
		p += strspn(p, " ");
	}
	if (!l->sasl_mechs) {
		log_error("listener %s: sasl.enabled.mechanisms names no mechanism", l->name);
		return -EINVAL;
	}
	if (server_sasl_reauth(b, l))
		return -EINVAL;
	if ((l->sasl_mechs & ~SASL_MECHS_PLAIN) && sasl_scram_load(b))
		return -EINVAL;
	if (!(l->sasl_mechs & SASL_MECHS_PLAIN))
		return 0;
	n = sasl_jaas_check(jaas, err, sizeof(err));
	if (n <= 0) {
		log_error("listener %s: %s: %s", l->name, jaas ? "sasl.jaas.config" : "no sasl.jaas.config for PLAIN",
			  n < 0 ? err : "no user_<name>=\"<password>\" option");
		return -EINVAL;
	}
	l->plain_jaas = strdup(jaas);
	return l->plain_jaas ? 0 : -ENOMEM;
}

/*
 * The advertised endpoint of l: its entry in advertised.listeners (by
 * name; an entry without a name is the first listener's), else its own
 * address.  Port 0 there means the bound port.
 */
static int server_advertise(struct broker *b, struct listener *l, const char *host, int32_t port)
{
	const char *adv = b->cfg.advertised_listeners;

	snprintf(l->host, sizeof(l->host), "%s", host);
	l->port = port;
	for (const char *p = adv ? adv : ""; *p;) {
		size_t n = strcspn(p, ",");
		char name[64];
		int32_t aport;

		if (!listener_name_of(p, name, sizeof(name)) && !strcmp(name, l->name)) {
			if (parse_listener(p, l->host, sizeof(l->host), &aport) < 0) {
				log_error("advertised.listeners: cannot parse '%.*s'", (int)n, p);
				return -EINVAL;
			}
			l->port = aport ? aport : port;
			return 0;
		}
		p += n + (p[n] == ',');
	}
	if (!host[0] || !strcmp(host, "0.0.0.0") || !strcmp(host, "::"))
		gethostname(l->host, sizeof(l->host));
	return 0;
}

/* Opens one entry of listeners. */
static int server_listen_one(struct broker *b, const char *item)
{
	struct listener *l = &b->listeners[b->nlisteners];
	char host[256], proto[32];
	int32_t port;
	int fd, err;

	if (listener_name_of(item, l->name, sizeof(l->name)) || parse_listener(item, host, sizeof(host), &port) < 0) {
		log_error("listeners: cannot parse '%.*s' (expected NAME://host:port)", (int)strcspn(item, ","), item);
		return -EINVAL;
	}
	for (int i = 0; i < b->nlisteners; i++)
		if (!strcmp(b->listeners[i].name, l->name)) {
			log_error("listeners: the name %s is used twice", l->name);
			return -EINVAL;
		}
	listener_protocol(b, l->name, proto, sizeof(proto));
	l->sasl = !strcmp(proto, "SASL_PLAINTEXT") || !strcmp(proto, "SASL_SSL");
	if (strcmp(proto, "PLAINTEXT") && strcmp(proto, "SSL") && !l->sasl) {
		log_error("listener %s: no security protocol (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL) for it in "
			  "listener.security.protocol.map",
			  l->name);
		return -EINVAL;
	}
	if ((!strcmp(proto, "SSL") || !strcmp(proto, "SASL_SSL")) && server_tls(b, l))
		return -EINVAL;
	if (l->sasl && server_sasl(b, l))
		return -EINVAL;
	fd = server_bind(b, host, &port);
	if (fd < 0)
		return fd;
	l->io.fd = fd;
	l->io.fn = server_accept;
	b->nlisteners++;
	err = server_advertise(b, l, host, port);
	if (!err)
		err = loop_add(b->loop, &l->io, EPOLLIN);
	log_info("listening on %s:%d as %s (%s, advertised as %s:%d)", host[0] ? host : "0.0.0.0", port, l->name, proto,
		 l->host, l->port);
	return err;
}

/* Opens every entry of listeners; the first one's advertised endpoint is the broker's (cluster, groups). */
static int server_listen(struct broker *b)
{
	const char *p = b->cfg.listeners ? b->cfg.listeners : "";
	int err = 0;

	while (*p == ' ')
		p++;
	if (!*p) {
		log_error("listeners is empty");
		return -EINVAL;
	}
	for (; *p && !err; p += strcspn(p, ","), p += *p == ',') {
		if (b->nlisteners == BROKER_LISTENERS_MAX) {
			log_error("listeners: more than %d", BROKER_LISTENERS_MAX);
			return -EINVAL;
		}
		err = server_listen_one(b, p);
	}
	if (!err) {
		snprintf(b->host, sizeof(b->host), "%s", b->listeners[0].host);
		b->port = b->listeners[0].port;
	}
	return err;
}

/*
 * SIGHUP: re-reads server.properties and the --override values (which win,
 * as at start-up), applies the dynamic keys (config_update() logs each
 * change and each non-dynamic key needing a restart), then lets topic
 * configs that follow broker defaults pick up the new values.  A file that
 * no longer loads changes nothing.
 */
static void server_reload(struct broker *b)
{
	struct broker_cfg next;
	char err[1024];
	int changed;

	if (config_read(&next, b->config_path, b->argc, b->argv, err, sizeof(err))) {
		log_error("config reload of '%s' failed, keeping the running config: %s",
			  b->config_path ? b->config_path : "defaults", err);
		return;
	}
	changed = config_update(&b->cfg, &next);
	config_release(&next);
	if (registry_refresh_cfg(b->reg))
		log_error("config reload: out of memory refreshing topic configs");
	log_info("config reloaded from '%s': %d dynamic settings changed", b->config_path ? b->config_path : "defaults",
		 changed);
}

/* The controlled shutdown ended (answered or not): the clean shutdown goes on. */
static void server_after_cshut(struct broker *b)
{
	loop_stop(b->loop);
}

static void server_on_signal(struct loop_io *io, uint32_t events)
{
	struct signalfd_siginfo si;
	struct broker *b = api_broker;

	(void)events;
	while (read(io->fd, &si, sizeof(si)) == sizeof(si)) {
		if (si.ssi_signo == SIGHUP) {
			log_info("received SIGHUP, reloading the config");
			server_reload(b);
			continue;
		}
		log_info("received signal %d, shutting down", (int)si.ssi_signo);
		if (si.ssi_signo != SIGTERM || !cshut_start(b, server_after_cshut))
			loop_stop(b->loop);
	}
}

static int server_signals(struct broker *b)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	sigprocmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);
	server_signal_io.fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	if (server_signal_io.fd < 0)
		return -errno;
	server_signal_io.fn = server_on_signal;
	return loop_add(b->loop, &server_signal_io, EPOLLIN);
}

/*
 * Asks a sync round for every partition whose recovery point is behind its
 * log end offset: under the relaxed flush policy an idle partition is
 * otherwise synced only when its segment rolls, and after a crash all of
 * its tail would be read again.  Returns the round's ticket (0: none).
 */
static uint64_t server_flush_lagging(struct broker *b)
{
	struct topic **topics;
	uint64_t ticket = 0;
	int n;

	topics = registry_topics(b->reg, &n);
	for (int i = 0; i < n; i++)
		for (int32_t p = 0; p < topics[i]->nparts; p++) {
			struct part *part = topics[i]->parts[p];

			if (part && part_recovery_point(part) < part_log_end_offset(part))
				ticket = syncer_want(b->syncer, part);
		}
	return ticket;
}

/*
 * Every log.flush.offset.checkpoint.interval.ms: the lagging partitions
 * are synced, and once that round is done the recovery points are
 * checkpointed (written by a background thread, broker/ckpt.h).
 */
static void server_checkpoint(struct broker *b, int64_t now)
{
	static int64_t last_ckpt = -1;
	static uint64_t ticket;
	static bool pending;

	if (last_ckpt < 0)
		last_ckpt = now; /* like Kafka, the first one waits one interval */
	if (now - last_ckpt >= b->cfg.log_flush_offset_checkpoint_interval_ms && !pending) {
		ticket = server_flush_lagging(b);
		pending = true;
		last_ckpt = now;
	}
	if (pending && syncer_done(b->syncer) >= ticket) {
		registry_checkpoint(b->reg);
		pending = false;
	}
}

static void server_housekeeping(struct loop_timer *t)
{
	struct broker *b = (struct broker *)((char *)t - offsetof(struct broker, housekeeping));
	static int64_t last_retain = -1;
	int64_t now = clock_mono_ms();

	if (last_retain < 0)
		last_retain = now; /* like Kafka, the first pass of each waits one interval */
	if (now - last_retain >= b->cfg.log_retention_check_interval_ms) {
		registry_retain(b->reg, clock_wall_ms());
		last_retain = now;
	}
	server_checkpoint(b, now);
	produce_flush_policy(b, now);
	replica_tick(b, now);
	conn_close_idle(now); /* connections.max.idle.ms */
	/* min.incremental.fetch.session.eviction.ms */
	fetch_sessions_expire(b, now);
	loop_timer_set(b->loop, t, now + HOUSEKEEPING_MS);
}

static void server_on_wake(void *arg)
{
	struct broker *b = arg;

	syncer_note_wake(b->syncer);                      /* how long the round's end took to reach us */
	park_on_synced(b);                                /* acks=all produce, OffsetCommit */
	txns_on_synced(b);                                /* transaction markers and their completion */
	syncer_take_synced(b->syncer, fetch_park_notify); /* their high watermarks moved */
	cleaner_on_wake(b->cleaner);                      /* a compaction pass finished */
	creator_on_wake(b->creator);                      /* topics and partitions made */
	replica_on_made(b);                               /* their roles, if a LeaderAndIsr came first */
	stats_on_wake(b);                                 /* /metrics asked for a snapshot */
	console_on_wake(b);                               /* the web console's asks */
}

/* The syncer thread saw a sync fail: nothing in the log dir is trusted any more. */
static void server_on_sync_fail(void *arg, int err)
{
	struct broker *b = arg;

	registry_fail_dir(b->reg, err);
}

void broker_after_events(void *arg)
{
	struct broker *b = arg;

	if (replica_after_events(b)) /* acks=all waits on moved high watermarks, fetches whose sync is done */
		txns_on_synced(b);   /* transactions whose markers wait for __transaction_state's high watermark */
	syncer_kick(b->syncer);      /* one round for everything this pass appended */
	creator_kick(b->creator);    /* one round for every topic and partition this pass asked for */
	fetch_wake(b);               /* only the fetches made ready by appends, syncs or closes */
	conn_resume();
	conn_reap();
	stats_note_member(b); /* /health/ready: registered, with metadata */
}

/*
 * Raises the soft descriptor limit to the hard one: the broker needs one
 * descriptor per partition, up to log.segment.fd.cache.size for sealed
 * segments being read and one per connection (docs/operations.md,
 * "Descriptor budget"), and the soft limit a service starts with (often
 * 1024) is only a default.  Logs the budget either way.
 */
static void server_raise_nofile(const struct broker *b)
{
	struct rlimit rl;
	unsigned long long was;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return;
	was = (unsigned long long)rl.rlim_cur;
	if (rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &rl) < 0) {
			log_warn("descriptors: cannot raise the soft limit %llu to the hard limit: %s", was,
				 strerror(errno));
			rl.rlim_cur = (rlim_t)was;
		}
	}
	log_info("descriptors: limit %llu (soft limit was %llu, hard %llu); budget: 1 per partition, up to %d for "
		 "sealed segments (log.segment.fd.cache.size), 1 per connection",
		 (unsigned long long)rl.rlim_cur, was, (unsigned long long)rl.rlim_max,
		 b->cfg.log_segment_fd_cache_size);
}

/* The cluster layer found this broker cannot join (its broker.id is taken): stop with code. */
static void server_on_cluster_fatal(void *arg, int code)
{
	struct broker *b = arg;

	b->exit_code = code;
	loop_stop(b->loop);
}

/* /cluster/id: kept in meta.properties the first time, refused if another is kept there. */
static int server_on_cluster_id(void *arg, const char *id)
{
	struct broker *b = arg;
	int err = registry_set_cluster_id(b->reg, id);

	if (err && err != -EINVAL)
		log_error("cannot write the cluster id to meta.properties: %s", strerror(-err));
	if (!err)
		snprintf(b->cluster_id, sizeof(b->cluster_id), "%s", id);
	return err;
}

/*
 * Cluster mode: registers the listener served, under its name and with
 * the advertised host and port server_listen() settled on.
 */
static int server_cluster_start(struct broker *b)
{
	struct cluster_cfg cc = {
		.zookeeper_connect = b->cfg.zookeeper_connect,
		.session_timeout_ms = b->cfg.zookeeper_session_timeout_ms,
		.connection_timeout_ms = b->cfg.zookeeper_connection_timeout_ms,
		.broker_id = b->node_id,
		.rack = b->cfg.broker_rack,
		.endpoints = b->cluster_endpoint,
		.protocol_map = b->cfg.listener_security_protocol_map,
		.client_listener = b->listener_name,
		.inter_listener = b->inter_listener,
		.on_fatal = server_on_cluster_fatal,
		.fatal_arg = b,
		.on_cluster_id = server_on_cluster_id,
		.on_topic_config = topic_zk_config_changed,
		.topic_config_arg = b,
		.unclean_leader_election_enable = b->cfg.unclean_leader_election_enable,
		.auto_leader_rebalance_enable = b->cfg.auto_leader_rebalance_enable,
		.leader_imbalance_check_interval_ms = b->cfg.leader_imbalance_check_interval_seconds * 1000,
		.leader_imbalance_per_broker_percentage = b->cfg.leader_imbalance_per_broker_percentage,
		.on_acls = authz_on() ? authz_zk_loaded : NULL,
		.on_user_config = scram_users_changed,
		.user_config_arg = b,
		.on_quota_config = quota_zk_changed,
		.quota_config_arg = b,
	};
	size_t at = 0;

	if (!b->cfg.zookeeper_connect)
		return 0;
	snprintf(b->listener_name, sizeof(b->listener_name), "%s", b->listeners[0].name);
	if (interbroker_start(b))
		return -EINVAL;
	cc.inter_sec = b->inter_sec;
	for (int i = 0; i < b->nlisteners; i++) {
		struct listener *l = &b->listeners[i];
		bool v6;

		if (!l->host[0]) /* advertised.listeners with an empty host: the other brokers need a name */
			gethostname(l->host, sizeof(l->host));
		v6 = strchr(l->host, ':') != NULL;
		at += (size_t)snprintf(b->cluster_endpoint + at, sizeof(b->cluster_endpoint) - at, "%s%s://%s%s%s:%d",
				       i ? "," : "", l->name, v6 ? "[" : "", l->host, v6 ? "]" : "", l->port);
		if (at >= sizeof(b->cluster_endpoint)) {
			log_error("listeners: the advertised endpoints are too long to register");
			return -EINVAL;
		}
	}
	snprintf(b->host, sizeof(b->host), "%s", b->listeners[0].host);
	if (!(b->mcache = malloc(sizeof(*b->mcache))))
		return -ENOMEM;
	mcache_init(b->mcache);
	registry_set_mcache(b->reg, b->mcache, b->node_id);
	if (replica_start(b))
		return -ENOMEM;
	registry_set_leader_fn(b->reg, replica_leader, b);
	return cluster_start(b->loop, &cc, &b->cluster);
}

int server_start(struct broker *b)
{
	int err;

	api_broker = b;
	b->node_id = b->cfg.node_id;
	conn_set_queued_max(b->cfg.queued_max_request_bytes);
	seg_cache_resize(b->cfg.log_segment_fd_cache_size);
	server_raise_nofile(b);
	err = loop_new(&b->loop);
	if (!err) /* before any thread exists, so every thread blocks them */
		err = server_signals(b);
	if (!err)
		err = registry_open(&b->cfg, &b->reg);
	if (err)
		return err;
	snprintf(b->cluster_id, sizeof(b->cluster_id), "%s", registry_cluster_id(b->reg));
	err = syncer_start(b->loop, server_on_sync_fail, b, &b->syncer);
	if (!err)
		err = creator_start(b->loop, b->reg, &b->creator);
	if (!err)
		err = groups_start(b); /* h_group.c: loads __consumer_offsets */
	if (!err)
		err = txns_start(b); /* h_txn.c: loads __transaction_state, finishes Prepare* */
	if (!err)
		err = cleaner_start(b, &b->cleaner);
	if (!err)
		err = fetch_sessions_start(b);
	if (!err)
		err = quotas_start(b);
	if (!err)
		err = authz_start(b);
	if (!err)
		err = scram_users_start(b);
	if (!err && (err = server_listen(b)) == -EINVAL)
		b->exit_code = 2; /* bad listeners or ssl.* settings (logged) */
	if (!err)
		err = server_cluster_start(b);
	if (err)
		return err;
	loop_on_wake(b->loop, server_on_wake, b);
	stats_attach(b);
	console_attach(b);
	stats_set_ready(true); /* log dirs loaded, listener up */
	loop_on_idle(b->loop, broker_after_events, b);
	loop_timer_init(&b->accept_pause, server_accept_resume);
	loop_timer_init(&b->housekeeping, server_housekeeping);
	loop_timer_set(b->loop, &b->housekeeping, clock_mono_ms() + HOUSEKEEPING_MS);
	return 0;
}

int server_run(struct broker *b)
{
	return loop_run(b->loop);
}

/* One line of what group commit achieved (bench/compare reads it: answers per round). */
static void server_log_sync_stats(struct broker *b)
{
	struct syncer_stats st;
	uint64_t wait_us, answered = park_answered(&wait_us);

	syncer_stats(b->syncer, &st);
	log_info("sync rounds: %llu, partitions synced %llu (at most %llu in a round), %.1f ms syncing, "
		 "%llu answers waited for a round (%.2f per round, %.0f us on average); "
		 "wake-ups: syncer %.0f us, loop %.0f us on average",
		 (unsigned long long)st.rounds, (unsigned long long)st.part_syncs, (unsigned long long)st.max_parts,
		 (double)st.busy_us / 1000.0, (unsigned long long)answered,
		 st.rounds ? (double)answered / (double)st.rounds : 0.0,
		 answered ? (double)wait_us / (double)answered : 0.0,
		 st.wakes ? (double)st.wake_us / (double)st.wakes : 0.0,
		 st.handbacks ? (double)st.handback_us / (double)st.handbacks : 0.0);
}

void server_stop(struct broker *b)
{
	int64_t t0 = clock_mono_ms();

	stats_set_ready(false);
	stats_detach(); /* a scrape from now on gets the last snapshot at once */
	console_detach();
	loop_timer_cancel(b->loop, &b->accept_pause);
	cshut_stop();
	cluster_stop(b->cluster); /* first: the registration and /controller go at once */
	b->cluster = NULL;
	registry_set_leader_fn(b->reg, NULL, NULL);
	replica_stop(b); /* fetchers, parked acks=all produces, replication-offset-checkpoint */
	if (b->mcache) {
		registry_set_mcache(b->reg, NULL, b->node_id);
		mcache_free(b->mcache);
		free(b->mcache);
		b->mcache = NULL;
	}
	for (int i = 0; i < b->nlisteners; i++) {
		close(b->listeners[i].io.fd);
		tls_ctx_free(b->listeners[i].tls);
		free(b->listeners[i].plain_jaas);
	}
	sasl_scram_free(b);
	conn_close_all();
	fetch_wake(b);            /* parked fetches see their connection closed */
	cleaner_stop(b->cleaner); /* a pass in progress is cancelled */
	creator_stop(b->creator); /* a round under way is finished, the rest cancelled */
	server_log_sync_stats(b);
	syncer_stop(b->syncer); /* syncs what is still dirty */
	park_drop();            /* their connections are gone */
	txn_verify_stop(b);     /* produces waiting for a coordinator on another broker */
	req_drop_held();        /* replies held for a throttle time */
	sasl_closing_drop(b);   /* connections of failed bare SASL tokens */
	groups_stop(b);         /* answers parked JoinGroup/SyncGroup */
	txns_stop(b);
	conn_reap();
	fetch_sessions_stop(b); /* after the last parked fetch is answered */
	quotas_stop();
	authz_stop();
	scram_users_stop(b);
	registry_close(b->reg);
	interbroker_stop(b); /* after the last inter-broker connection */
	close(server_signal_io.fd);
	loop_free(b->loop);
	log_info("clean shutdown complete in %lld ms", (long long)(clock_mono_ms() - t0));
}
