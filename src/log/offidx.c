/* offidx.c - the sparse offset index of one segment (format in offidx.h, file handling in idxfile.c). */
#include "log/offidx.h"

#include <assert.h>

static void offidx_decode(void *ent, const uint8_t *raw)
{
	struct offidx_ent *e = ent;

	e->rel = (int32_t)idxfile_get_be(raw, 4);
	e->pos = (int32_t)idxfile_get_be(raw + 4, 4);
}

int offidx_open(struct offidx *oi, const char *path, int32_t max_n, bool trunc)
{
	return idxfile_open(&oi->f, path, max_n, trunc, sizeof(struct offidx_ent), OFFIDX_ENTRY_SIZE, offidx_decode);
}

void offidx_close(struct offidx *oi)
{
	idxfile_close(&oi->f);
}

bool offidx_valid(const struct offidx *oi, int64_t log_size)
{
	if (oi->f.bad)
		return false;
	for (int32_t i = 0; i < oi->f.n; i++) {
		const struct offidx_ent *e = offidx_ent(oi, i);

		if (e->rel < 0 || e->pos < 0 || e->pos >= log_size)
			return false;
		if (i && (e->rel <= e[-1].rel || e->pos <= e[-1].pos))
			return false;
	}
	return true;
}

int offidx_append(struct offidx *oi, int32_t rel, int32_t pos)
{
	struct offidx_ent e = { .rel = rel, .pos = pos };
	uint8_t raw[OFFIDX_ENTRY_SIZE];

	assert(!oi->f.n || (rel > offidx_ent(oi, oi->f.n - 1)->rel && pos > offidx_ent(oi, oi->f.n - 1)->pos));
	idxfile_put_be(raw, (uint32_t)rel, 4);
	idxfile_put_be(raw + 4, (uint32_t)pos, 4);
	return idxfile_append(&oi->f, &e, raw);
}

int32_t offidx_lookup(const struct offidx *oi, int32_t rel)
{
	const struct offidx_ent *e = oi->f.e;
	int32_t lo = 0, hi = oi->f.n; /* first entry with e.rel > rel */

	while (lo < hi) {
		int32_t mid = lo + (hi - lo) / 2;

		if (e[mid].rel <= rel)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? e[lo - 1].pos : 0;
}
