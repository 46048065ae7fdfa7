/*
 * broker.h - the broker process: configuration, event loop, listener,
 * topic registry, the fsync group-commit thread and the parked requests.
 * One struct broker per process; handlers reach it through rq->b.
 */
#ifndef GREGOR_BROKER_BROKER_H
#define GREGOR_BROKER_BROKER_H

#include <stdbool.h>
#include <stdint.h>

#include "broker/config.h"
#include "net/loop.h"

struct registry;
struct tls_ctx;
struct conn;
struct syncer;
struct cleaner;
struct creator;
struct req;
struct group_coord;
struct txn_coord;
struct txn_send;
struct fetch_session_cache;
struct cluster;
struct mcache;

#define BROKER_LISTENERS_MAX 8

/* One entry of listeners: its socket, name, advertised endpoint and TLS context. */
struct listener {
	struct loop_io io;
	char name[64];        /* PLAINTEXT, SSL, INTERNAL, ... */
	char host[256];       /* advertised host */
	int32_t port;         /* advertised port */
	struct tls_ctx *tls;  /* SSL listeners; NULL: PLAINTEXT */
	bool sasl;            /* SASL_PLAINTEXT, SASL_SSL: clients authenticate first (h_sasl.c) */
	char *plain_jaas;     /* SASL: the PLAIN users' JAAS entry (malloc()ed) */
	int sasl_mechs;       /* SASL: SASL_MECHS_* bits enabled */
	int64_t reauth_ms[3]; /* SASL: connections.max.reauth.ms by mechanism bit (0 PLAIN, enum scram_mech) */
};

/* Bits of listener.sasl_mechs: PLAIN, and 1 << enum scram_mech. */
#define SASL_MECHS_PLAIN 1

struct broker {
	struct broker_cfg cfg;
	struct loop *loop;
	struct registry *reg;
	struct syncer *syncer;
	struct cleaner *cleaner; /* NULL when log.cleaner.enable is false */
	struct creator *creator; /* makes topics and partitions off the loop */
	struct listener listeners[BROKER_LISTENERS_MAX];
	struct sasl_scram_user *scram_users; /* sasl.scram.users, derived at start (h_sasl.c) */
	int nscram_users;
	struct scram_store *scram_store; /* users' SCRAM credentials, KIP-554 (h_scram.c) */
	int nlisteners;
	struct loop_timer accept_pause; /* listener not polled until it fires (fd limit) */
	bool accept_paused;             /* since the last successful accept */
	char host[256];                 /* advertised host of the first listener */
	int32_t port;                   /* advertised port of the first listener */
	char cluster_id[64];
	int32_t node_id;
	struct loop_timer housekeeping;
	struct group_coord *groups; /* the group coordinator (h_group.c) */
	struct txn_coord *txns;     /* the transaction coordinator (h_txn.c) */
	struct txn_send *txn_send;  /* cluster mode: its markers to other brokers (txn_send.h) */
	/* incremental fetch sessions, KIP-227 (fetch_session.h) */
	struct fetch_session_cache *fetch_sessions;
	/* cluster mode (zookeeper.connect): membership, controller, live brokers; NULL on a single node */
	struct cluster *cluster;
	struct mcache *mcache;  /* cluster mode: the controller's UpdateMetadata (cluster/mcache.h); NULL otherwise */
	struct repl *repl;      /* cluster mode: partition roles, followers, fetchers (replica.h); NULL otherwise */
	char listener_name[64]; /* name of the listener served (PLAINTEXT, ...) */
	/* cluster mode: the inter-broker listener and how connections to the others' are secured (interbroker.h) */
	char inter_listener[64];
	struct nclient_sec *inter_sec; /* NULL: plaintext */
	char cluster_endpoint[512];    /* its advertised "NAME://host:port", as registered */
	int exit_code;                 /* main()'s exit status: 0, or 2 when the cluster refused this broker */
	/* what a SIGHUP reload re-reads (main.c; borrowed from main's argv) */
	const char *config_path; /* server.properties, NULL = defaults only */
	int argc;                /* the command line, for its --override values */
	char **argv;
};

/* The advertised endpoint of the listener c came through (Metadata, FindCoordinator). */
void broker_endpoint(const struct broker *b, const struct conn *c, const char **host, int32_t *port);
struct cluster_broker;
/*
 * Cluster mode: the endpoint of broker cb for the listener c came through
 * (the one registered under the same listener name), so a client on an
 * SSL listener is given the others' SSL ports; cb's default endpoint if
 * it registered no such listener.  This broker: broker_endpoint().
 */
void broker_endpoint_of(const struct broker *b, const struct conn *c, const struct cluster_broker *cb,
			const char **host, int32_t *port);
/*
 * Cluster mode: where this broker reaches broker id, as Kafka picks it:
 * its registered endpoint of the inter-broker listener (b->inter_listener,
 * interbroker.h), whatever its security protocol; never another one.
 * False if id is not registered or has no such endpoint.
 */
bool broker_endpoint_inter(const struct broker *b, int32_t id, const char **host, int32_t *port);

/* Wakes parked fetches after appends; called at the end of each loop iteration. */
void broker_after_events(void *arg);

#endif
