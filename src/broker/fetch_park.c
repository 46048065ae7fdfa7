/*
 * fetch_park.c - per-partition waiter chains of parked fetches (see
 * fetch_park.h).
 *
 * The chains are a fixed table of FETCH_PARK_BUCKETS heads indexed by a
 * hash of the partition's address; a chain may hold watches of several
 * partitions, which notify skips by comparing the pointer.  Nothing here
 * allocates: watches and park records live in the parked request's arena.
 */
#include "broker/fetch_park.h"

#include <stddef.h>
#include <stdint.h>

#include "net/conn.h"

#define FETCH_PARK_BUCKETS 4096

static struct fetch_watch *fetch_park_chains[FETCH_PARK_BUCKETS];
static struct fetch_park *fetch_park_ready;
static int32_t fetch_park_n; /* parked now */

static struct fetch_watch **fetch_park_chain(const struct part *part)
{
	uint64_t h = (uint64_t)(uintptr_t)part * 0x9e3779b97f4a7c15ull;

	return &fetch_park_chains[(h >> 32) % FETCH_PARK_BUCKETS];
}

static void fetch_park_set_ready(struct fetch_park *fp)
{
	if (fp->ready_pprev)
		return;
	fp->ready_next = fetch_park_ready;
	if (fetch_park_ready)
		fetch_park_ready->ready_pprev = &fp->ready_next;
	fetch_park_ready = fp;
	fp->ready_pprev = &fetch_park_ready;
}

static void fetch_park_unready(struct fetch_park *fp)
{
	if (!fp->ready_pprev)
		return;
	*fp->ready_pprev = fp->ready_next;
	if (fp->ready_next)
		fp->ready_next->ready_pprev = fp->ready_pprev;
	fp->ready_next = NULL;
	fp->ready_pprev = NULL;
}

void fetch_park_add(struct fetch_park *fp, struct req *rq, struct conn *c, struct fetch_watch *watches,
		    struct part *const *parts, int32_t n)
{
	struct fetch_park *head = conn_user(c);

	*fp = (struct fetch_park){ .rq = rq, .c = c, .watches = watches, .parked = true };
	fetch_park_n++;
	for (int32_t i = 0; i < n; i++) {
		struct fetch_watch *w;
		struct fetch_watch **chain;

		if (!parts[i])
			continue;
		w = &watches[fp->nwatches++];
		chain = fetch_park_chain(parts[i]);
		*w = (struct fetch_watch){ parts[i], fp, *chain, chain };
		if (*chain)
			(*chain)->pprev = &w->next;
		*chain = w;
	}
	fp->conn_next = head;
	if (head)
		head->conn_pprev = &fp->conn_next;
	fp->conn_pprev = NULL; /* the head: conn_user(c) points at it */
	conn_set_user(c, fp);
}

void fetch_park_remove(struct fetch_park *fp)
{
	if (!fp->parked)
		return;
	for (int32_t i = 0; i < fp->nwatches; i++) {
		struct fetch_watch *w = &fp->watches[i];

		*w->pprev = w->next;
		if (w->next)
			w->next->pprev = w->pprev;
	}
	fp->nwatches = 0;
	fetch_park_unready(fp);
	if (fp->conn_pprev)
		*fp->conn_pprev = fp->conn_next;
	else
		conn_set_user(fp->c, fp->conn_next);
	if (fp->conn_next)
		fp->conn_next->conn_pprev = fp->conn_pprev;
	fp->parked = false;
	fetch_park_n--;
}

void fetch_park_notify(const struct part *part)
{
	for (struct fetch_watch *w = *fetch_park_chain(part); w; w = w->next)
		if (w->part == part)
			fetch_park_set_ready(w->fp);
}

void fetch_park_conn_closed(struct conn *c)
{
	for (struct fetch_park *fp = conn_user(c); fp; fp = fp->conn_next)
		fetch_park_set_ready(fp);
}

struct fetch_park *fetch_park_next_ready(void)
{
	struct fetch_park *fp = fetch_park_ready;

	if (fp)
		fetch_park_unready(fp);
	return fp;
}

int32_t fetch_park_count(void)
{
	return fetch_park_n;
}
