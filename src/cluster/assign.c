/*
 * assign.c - Kafka's replica assignment for new partitions (assign.h).
 *
 * Partition p's first replica is broker (p + start) % n of the (possibly
 * rack-alternated) list; its j-th follower is 1 + (shift + j) % (n - 1)
 * places further, and shift grows by one each time p wraps around the
 * list, so followers of consecutive rounds land on different brokers.
 */
#include "cluster/assign.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static int assign_cmp(const void *a, const void *b)
{
	const struct assign_broker *x = a, *y = b;
	int c = x->rack && y->rack ? strcmp(x->rack, y->rack) : 0;

	return c ? c : (x->id > y->id) - (x->id < y->id);
}

/* Index of the j-th follower after first among n brokers. */
static int assign_follower(int first, uint32_t shift, int j, int n)
{
	return (int)((first + 1 + (int)((shift + (uint32_t)j) % (uint32_t)(n - 1))) % n);
}

/*
 * Sorted by rack then id, into Kafka's rack-alternated order: the first
 * broker of each rack (racks in name order), then the second of each, ...
 * out[n]; returns the number of racks.
 */
static int assign_alternate(const struct assign_broker *sorted, int n, struct assign_broker *out)
{
	int nracks = 0, *head = malloc(sizeof(*head) * (size_t)n), *end = malloc(sizeof(*end) * (size_t)n);

	if (!head || !end) {
		free(head);
		free(end);
		return -ENOMEM;
	}
	for (int i = 0; i < n; i++) {
		if (i == 0 || strcmp(sorted[i].rack, sorted[i - 1].rack))
			head[nracks++] = i;
		end[nracks - 1] = i + 1;
	}
	for (int k = 0, r = 0; k < n; r = (r + 1) % nracks)
		if (head[r] < end[r])
			out[k++] = sorted[head[r]++];
	free(head);
	free(end);
	return nracks;
}

static const char *assign_rack_of(const struct assign_broker *list, int n, int32_t id)
{
	for (int i = 0; i < n; i++)
		if (list[i].id == id)
			return list[i].rack;
	return "";
}

/* A follower of rack-aware assignment: a new rack and a new broker, unless every one already holds a replica. */
static int32_t assign_rack_follower(const struct assign_broker *list, int n, int nracks, int first, uint32_t shift,
				    int *k, const int32_t *chosen, int nchosen)
{
	int racks_used = 0;

	for (int c = 0; c < nchosen; c++) {
		bool seen = false;

		for (int d = 0; d < c; d++)
			seen |= !strcmp(assign_rack_of(list, n, chosen[d]), assign_rack_of(list, n, chosen[c]));
		racks_used += !seen;
	}
	for (;; (*k)++) {
		const struct assign_broker *b = &list[assign_follower(first, shift * (uint32_t)nracks, *k, n)];
		bool rack_used = false, broker_used = false;

		for (int c = 0; c < nchosen; c++) {
			broker_used |= chosen[c] == b->id;
			rack_used |= !strcmp(assign_rack_of(list, n, chosen[c]), b->rack);
		}
		if ((!rack_used || racks_used == nracks) && (!broker_used || nchosen == n)) {
			(*k)++;
			return b->id;
		}
	}
}

int assign_replicas(const struct assign_broker *brokers, int nbrokers, int32_t first, int32_t nparts, int32_t rf,
		    uint32_t start, uint32_t shift, int32_t *out)
{
	struct assign_broker *sorted, *list;
	int n = nbrokers, nracked = 0, nracks = 1;

	if (rf < 1 || rf > n || nparts < 1 || first < 0)
		return -EINVAL;
	for (int i = 0; i < n; i++)
		nracked += brokers[i].rack != NULL;
	if (nracked && nracked != n)
		return -EXDEV;
	sorted = malloc(sizeof(*sorted) * (size_t)n * 2);
	if (!sorted)
		return -ENOMEM;
	memcpy(sorted, brokers, sizeof(*sorted) * (size_t)n);
	qsort(sorted, (size_t)n, sizeof(*sorted), assign_cmp);
	list = sorted;
	if (nracked) {
		list = sorted + n;
		nracks = assign_alternate(sorted, n, list);
		if (nracks < 0) {
			free(sorted);
			return nracks;
		}
	}
	start %= (uint32_t)n;
	shift %= (uint32_t)n;
	for (int32_t p = first; p < first + nparts; p++) {
		int32_t *rep = out + (size_t)(p - first) * (size_t)rf;
		int f = (int)((uint32_t)p % (uint32_t)n + start) % n, k = 0;

		if (p > 0 && p % n == 0)
			shift++;
		rep[0] = list[f].id;
		for (int j = 1; j < rf; j++)
			rep[j] = nracked ? assign_rack_follower(list, n, nracks, f, shift, &k, rep, j)
					 : list[assign_follower(f, shift, j - 1, n)].id;
	}
	free(sorted);
	return 0;
}
