/* offidx.c - the sparse offset index of one segment (format in offidx.h, file handling in idxfile.c). */
#include "log/offidx.h"

#include <assert.h>

int offidx_open(struct offidx *oi, const char *path, int32_t max_n, bool trunc, bool lazy)
{
	return idxfile_open(&oi->f, path, max_n, trunc, lazy, OFFIDX_ENTRY_SIZE);
}

int offidx_map(struct offidx *oi, const char *path)
{
	return idxfile_map(&oi->f, path, OFFIDX_ENTRY_SIZE);
}

void offidx_close(struct offidx *oi)
{
	idxfile_close(&oi->f);
}

bool offidx_valid(const struct offidx *oi, int64_t log_size)
{
	struct offidx_ent prev = { 0, 0 };

	if (oi->f.bad)
		return false;
	for (int32_t i = 0; i < oi->f.n; i++) {
		struct offidx_ent e = offidx_ent(oi, i);

		if (e.rel < 0 || e.pos < 0 || e.pos >= log_size)
			return false;
		if (i && (e.rel <= prev.rel || e.pos <= prev.pos))
			return false;
		prev = e;
	}
	return true;
}

bool offidx_valid_last(const struct offidx *oi, int64_t log_size)
{
	struct offidx_ent e;

	if (oi->f.bad || !oi->f.n)
		return !oi->f.bad;
	e = offidx_ent(oi, oi->f.n - 1);
	return e.rel >= 0 && e.pos >= 0 && e.pos < log_size;
}

int offidx_append(struct offidx *oi, int32_t rel, int32_t pos)
{
	uint8_t raw[OFFIDX_ENTRY_SIZE];
	int rc = idxfile_wake(&oi->f); /* the last entry is read below */

	if (rc)
		return rc;
	assert(!oi->f.n || (rel > offidx_ent(oi, oi->f.n - 1).rel && pos > offidx_ent(oi, oi->f.n - 1).pos));
	idxfile_put_be(raw, (uint32_t)rel, 4);
	idxfile_put_be(raw + 4, (uint32_t)pos, 4);
	return idxfile_append(&oi->f, raw);
}

int32_t offidx_lookup(const struct offidx *oi, int32_t rel)
{
	int32_t lo = 0, hi = oi->f.n; /* first entry with e.rel > rel */

	while (lo < hi) {
		int32_t mid = lo + (hi - lo) / 2;

		if (offidx_ent(oi, mid).rel <= rel)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? offidx_ent(oi, lo - 1).pos : 0;
}
