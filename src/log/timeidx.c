/* timeidx.c - the sparse time index of one segment (format in timeidx.h, file handling in idxfile.c). */
#include "log/timeidx.h"

int timeidx_open(struct timeidx *ti, const char *path, int32_t max_n, bool trunc, bool lazy)
{
	return idxfile_open(&ti->f, path, max_n, trunc, lazy, TIMEIDX_ENTRY_SIZE);
}

int timeidx_map(struct timeidx *ti, const char *path)
{
	return idxfile_map(&ti->f, path, TIMEIDX_ENTRY_SIZE);
}

void timeidx_close(struct timeidx *ti)
{
	idxfile_close(&ti->f);
}

bool timeidx_valid(const struct timeidx *ti, int64_t max_rel)
{
	struct timeidx_ent prev = { 0, 0 };

	if (ti->f.bad)
		return false;
	for (int32_t i = 0; i < ti->f.n; i++) {
		struct timeidx_ent e = timeidx_ent(ti, i);

		if (e.rel < 0 || e.rel > max_rel)
			return false;
		if (i && (e.ts <= prev.ts || e.rel < prev.rel))
			return false;
		prev = e;
	}
	return true;
}

int timeidx_maybe_append(struct timeidx *ti, int64_t ts, int32_t rel)
{
	uint8_t raw[TIMEIDX_ENTRY_SIZE];
	int rc = idxfile_wake(&ti->f); /* the last entry is read below */

	if (rc)
		return rc;
	if (ti->f.n) {
		struct timeidx_ent last = timeidx_ent(ti, ti->f.n - 1);

		if (ts <= last.ts || rel < last.rel)
			return 0;
	}
	if (ts < 0)
		return 0;
	idxfile_put_be(raw, (uint64_t)ts, 8);
	idxfile_put_be(raw + 8, (uint32_t)rel, 4);
	return idxfile_append(&ti->f, raw);
}

int32_t timeidx_lookup(const struct timeidx *ti, int64_t ts)
{
	int32_t lo = 0, hi = ti->f.n; /* first entry with e.ts > ts */

	while (lo < hi) {
		int32_t mid = lo + (hi - lo) / 2;

		if (timeidx_ent(ti, mid).ts <= ts)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? timeidx_ent(ti, lo - 1).rel : -1;
}
