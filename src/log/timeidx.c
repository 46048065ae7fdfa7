/* timeidx.c - the sparse time index of one segment (format in timeidx.h, file handling in idxfile.c). */
#include "log/timeidx.h"

static void timeidx_decode(void *ent, const uint8_t *raw)
{
	struct timeidx_ent *e = ent;

	e->ts = (int64_t)idxfile_get_be(raw, 8);
	e->rel = (int32_t)idxfile_get_be(raw + 8, 4);
}

int timeidx_open(struct timeidx *ti, const char *path, int32_t max_n, bool trunc)
{
	return idxfile_open(&ti->f, path, max_n, trunc, sizeof(struct timeidx_ent), TIMEIDX_ENTRY_SIZE, timeidx_decode);
}

void timeidx_close(struct timeidx *ti)
{
	idxfile_close(&ti->f);
}

bool timeidx_valid(const struct timeidx *ti, int64_t max_rel)
{
	if (ti->f.bad)
		return false;
	for (int32_t i = 0; i < ti->f.n; i++) {
		const struct timeidx_ent *e = timeidx_ent(ti, i);

		if (e->rel < 0 || e->rel > max_rel)
			return false;
		if (i && (e->ts <= e[-1].ts || e->rel < e[-1].rel))
			return false;
	}
	return true;
}

int timeidx_maybe_append(struct timeidx *ti, int64_t ts, int32_t rel)
{
	struct timeidx_ent e = { .ts = ts, .rel = rel };
	const struct timeidx_ent *last = ti->f.n ? timeidx_ent(ti, ti->f.n - 1) : NULL;
	uint8_t raw[TIMEIDX_ENTRY_SIZE];

	if (ts < 0 || (last && (ts <= last->ts || rel < last->rel)))
		return 0;
	idxfile_put_be(raw, (uint64_t)ts, 8);
	idxfile_put_be(raw + 8, (uint32_t)rel, 4);
	return idxfile_append(&ti->f, &e, raw);
}

int32_t timeidx_lookup(const struct timeidx *ti, int64_t ts)
{
	const struct timeidx_ent *e = ti->f.e;
	int32_t lo = 0, hi = ti->f.n; /* first entry with e.ts > ts */

	while (lo < hi) {
		int32_t mid = lo + (hi - lo) / 2;

		if (e[mid].ts <= ts)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? e[lo - 1].rel : -1;
}
