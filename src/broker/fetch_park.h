/*
 * fetch_park.h - long-poll fetches waiting for data: who to wake when a
 * partition is appended to.
 *
 * A fetch that finds fewer than MinBytes is parked with one watch per
 * partition it asked for.  Watches hang in chains hashed by partition, so
 * an append (fetch_park_notify) touches only the fetches parked on that
 * partition, and marks each one ready once (a doubly linked ready list);
 * the event loop then fills only the ready fetches again (h_fetch.c,
 * fetch_wake).  Every parked fetch is also on its connection's list
 * (conn_user()), so a closed connection makes its fetches ready at once
 * instead of holding them until MaxWaitMs.  Removing a fetch
 * (fetch_park_remove) costs its own watches, whatever else is parked.
 * Threading: the event-loop thread only.
 */
#ifndef GREGOR_BROKER_FETCH_PARK_H
#define GREGOR_BROKER_FETCH_PARK_H

#include <stdbool.h>
#include <stdint.h>

struct conn;
struct part;
struct req;
struct fetch_park;

/* One parked fetch's interest in one partition. */
struct fetch_watch {
	const struct part *part; /* compared, never dereferenced */
	struct fetch_park *fp;
	struct fetch_watch *next, **pprev;
};

/* A parked fetch; embedded in the fetch's own state, memory from its arena. */
struct fetch_park {
	struct req *rq;
	struct conn *c;
	struct fetch_watch *watches;
	int32_t nwatches;
	bool parked;
	struct fetch_park *ready_next, **ready_pprev; /* ready_pprev != NULL: on the ready list */
	struct fetch_park *conn_next, **conn_pprev;
};

/*
 * Parks fp for rq on connection c, watching parts[0..n) (NULL entries and
 * repeats allowed); watches is n entries of caller memory that must live
 * until fetch_park_remove().  Uses conn_user(c) as the connection's list.
 */
void fetch_park_add(struct fetch_park *fp, struct req *rq, struct conn *c, struct fetch_watch *watches,
		    struct part *const *parts, int32_t n);
/* Unparks fp (no-op if not parked): off every chain and list. */
void fetch_park_remove(struct fetch_park *fp);
/* part was appended to: every fetch parked on it becomes ready. */
void fetch_park_notify(const struct part *part);
/* c is closing: every fetch parked on it becomes ready (to be finished). */
void fetch_park_conn_closed(struct conn *c);
/* Takes the next ready fetch off the ready list (it stays parked); NULL when none. */
struct fetch_park *fetch_park_next_ready(void);
/* Fetches parked now (the Fetch purgatory size for /metrics). */
int32_t fetch_park_count(void);

#endif
