/*
 * cleanable.c - the cleanable range, dirty ratio and choice of log of a
 * cleaning pass (see cleanable.h for the rules).
 */
#include "log/cleanable.h"

/* Index of the segment holding offset (the last with base <= offset), or 0. */
static int cleanable_seg_of(const struct cleanable_log *l, int64_t offset)
{
	int i = 0;

	while (i + 1 < l->nsegs && l->segs[i + 1].base_offset <= offset)
		i++;
	return i;
}

static int64_t cleanable_first_dirty(const struct cleanable_log *l)
{
	if (l->checkpoint >= l->log_start_offset && l->checkpoint <= l->log_end_offset)
		return l->checkpoint;
	return l->log_start_offset;
}

static int64_t cleanable_first_uncleanable(const struct cleanable_log *l, int64_t first_dirty, int64_t now_ms)
{
	int64_t end = l->segs[l->nsegs - 1].base_offset;

	if (l->first_unstable_offset < end)
		end = l->first_unstable_offset;
	if (l->min_lag_ms > 0) {
		for (int i = cleanable_seg_of(l, first_dirty); i + 1 < l->nsegs; i++) {
			const struct cleanable_seg *s = &l->segs[i];

			if (s->base_offset >= end)
				break;
			if (s->max_ts < 0 || s->max_ts > now_ms - l->min_lag_ms) {
				end = s->base_offset;
				break;
			}
		}
	}
	return end > first_dirty ? end : first_dirty;
}

void cleanable_measure(const struct cleanable_log *l, int64_t now_ms, struct cleanable *out)
{
	int first;

	*out = (struct cleanable){ 0 };
	if (l->nsegs < 1)
		return;
	out->first_dirty = cleanable_first_dirty(l);
	out->first_uncleanable = cleanable_first_uncleanable(l, out->first_dirty, now_ms);
	first = cleanable_seg_of(l, out->first_dirty);
	for (int i = 0; i + 1 < l->nsegs; i++) {
		const struct cleanable_seg *s = &l->segs[i];

		if (i < first)
			out->clean_bytes += s->size;
		else if (out->first_uncleanable > out->first_dirty && s->base_offset < out->first_uncleanable)
			out->cleanable_bytes += s->size;
	}
	if (out->clean_bytes + out->cleanable_bytes > 0)
		out->ratio = (double)out->cleanable_bytes / (double)(out->clean_bytes + out->cleanable_bytes);
	if (out->cleanable_bytes > 0 && first + 1 < l->nsegs && l->segs[first].first_ts >= 0 &&
	    l->max_lag_ms < INT64_MAX && now_ms - l->segs[first].first_ts > l->max_lag_ms)
		out->must_clean = true;
}

bool cleanable_due(const struct cleanable *c, double min_ratio)
{
	return c->cleanable_bytes > 0 && (c->must_clean || c->ratio > min_ratio);
}

int cleanable_pick(const struct cleanable_log *logs, int n, int64_t now_ms, struct cleanable *m)
{
	int best = -1;

	for (int i = 0; i < n; i++) {
		cleanable_measure(&logs[i], now_ms, &m[i]);
		if (cleanable_due(&m[i], logs[i].min_ratio) && (best < 0 || m[i].ratio > m[best].ratio))
			best = i;
	}
	return best;
}
