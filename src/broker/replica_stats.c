/*
 * replica_stats.c - what /metrics reports of replication (replica.h,
 * replica_counts): counted over the partition states on the loop thread
 * when a scrape's snapshot is taken (stats_snap.c), so nothing is kept up
 * to date between scrapes.
 */
#include "broker/replica.h"

#include <string.h>

#include "broker/broker.h"
#include "broker/registry.h"
#include "broker/replica_int.h"
#include "log/partition.h"

static void replica_count_one(struct repl *rp, struct replica *r, void *arg)
{
	struct replica_counts *out = arg;
	struct broker *b = rp->b;
	struct topic *t;
	struct part *part;

	if (r->leader == b->node_id) {
		t = registry_find(b->reg, kstr_c(r->topic));
		out->under_replicated += r->isr.n < r->replicas.n;
		if (t && r->isr.n < t->cfg.min_insync_replicas)
			out->under_min_isr++;
		else if (t && r->isr.n == t->cfg.min_insync_replicas && r->replicas.n > 1)
			out->at_min_isr++;
		return;
	}
	part = r->leader >= 0 && r->leader_hw >= 0 ? repl_part(rp, r) : NULL;
	if (part && r->leader_hw - part_log_end_offset(part) > out->max_lag)
		out->max_lag = r->leader_hw - part_log_end_offset(part);
}

void replica_counts(struct broker *b, struct replica_counts *out)
{
	memset(out, 0, sizeof(*out));
	if (!b->repl)
		return;
	repl_foreach(b->repl, replica_count_one, out);
	out->produces_waiting = b->repl->nwaits;
}
