/* timeidx.c - the sparse time index of one segment (format in timeidx.h). */
#include "log/timeidx.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static void put_be(uint8_t *p, uint64_t v, int n)
{
	for (int i = n - 1; i >= 0; i--, v >>= 8)
		p[i] = (uint8_t)v;
}

static uint64_t get_be(const uint8_t *p, int n)
{
	uint64_t v = 0;

	for (int i = 0; i < n; i++)
		v = (v << 8) | p[i];
	return v;
}

static int timeidx_grow(struct timeidx *ti, int32_t want)
{
	struct timeidx_ent *ne;
	int32_t cap = ti->cap ? ti->cap : 64;

	while (cap < want)
		cap *= 2;
	if (cap <= ti->cap)
		return 0;
	ne = realloc(ti->e, (size_t)cap * sizeof(*ne));
	if (!ne)
		return -ENOMEM;
	ti->e = ne;
	ti->cap = cap;
	return 0;
}

static int timeidx_load(struct timeidx *ti, int fd)
{
	struct stat st;
	uint8_t *raw;
	int32_t n;
	int rc = 0;

	if (fstat(fd, &st) < 0)
		return -errno;
	ti->bad = st.st_size % TIMEIDX_ENTRY_SIZE != 0 || st.st_size > (int64_t)INT32_MAX;
	if (ti->bad || st.st_size == 0)
		return 0;
	n = (int32_t)(st.st_size / TIMEIDX_ENTRY_SIZE);
	raw = malloc((size_t)st.st_size);
	if (!raw)
		return -ENOMEM;
	if (pread(fd, raw, (size_t)st.st_size, 0) != st.st_size) {
		ti->bad = true;
		goto out_free;
	}
	rc = timeidx_grow(ti, n);
	if (rc)
		goto out_free;
	for (int32_t i = 0; i < n; i++) {
		ti->e[i].ts = (int64_t)get_be(raw + 12 * i, 8);
		ti->e[i].rel = (int32_t)get_be(raw + 12 * i + 8, 4);
	}
	ti->n = n;
out_free:
	free(raw);
	return rc;
}

int timeidx_open(struct timeidx *ti, const char *path, int32_t max_n, bool trunc)
{
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | (trunc ? O_TRUNC : 0), 0644);
	int rc;

	ti->ref = NULL;
	ti->e = NULL;
	ti->n = ti->cap = 0;
	ti->max_n = max_n > 0 ? max_n : 1;
	ti->bad = false;
	if (fd < 0)
		return -errno;
	ti->ref = fdref_new(fd);
	if (!ti->ref)
		return -ENOMEM;
	rc = timeidx_load(ti, fd);
	if (rc)
		timeidx_close(ti);
	return rc;
}

void timeidx_close(struct timeidx *ti)
{
	if (ti->ref && ftruncate(ti->ref->fd, (off_t)ti->n * TIMEIDX_ENTRY_SIZE) < 0) {
		/* harmless: a bad index is rebuilt at the next open */
	}
	fdref_put(ti->ref);
	ti->ref = NULL;
	free(ti->e); ti->e = NULL;
	ti->n = ti->cap = 0;
}

bool timeidx_valid(const struct timeidx *ti, int64_t max_rel)
{
	if (ti->bad)
		return false;
	for (int32_t i = 0; i < ti->n; i++) {
		if (ti->e[i].rel < 0 || ti->e[i].rel > max_rel)
			return false;
		if (i && (ti->e[i].ts <= ti->e[i - 1].ts || ti->e[i].rel < ti->e[i - 1].rel))
			return false;
	}
	return true;
}

int timeidx_maybe_append(struct timeidx *ti, int64_t ts, int32_t rel)
{
	uint8_t raw[TIMEIDX_ENTRY_SIZE];
	ssize_t n;
	int rc;

	if (ts < 0 || (ti->n && (ts <= ti->e[ti->n - 1].ts || rel < ti->e[ti->n - 1].rel)))
		return 0;
	rc = timeidx_grow(ti, ti->n + 1);
	if (rc)
		return rc;
	ti->e[ti->n].ts = ts;
	ti->e[ti->n].rel = rel;
	ti->n++;
	put_be(raw, (uint64_t)ts, 8);
	put_be(raw + 8, (uint32_t)rel, 4);
	n = pwrite(ti->ref->fd, raw, sizeof(raw), (off_t)(ti->n - 1) * TIMEIDX_ENTRY_SIZE);
	if (n < 0)
		return -errno;
	return n == (ssize_t)sizeof(raw) ? 0 : -ENOSPC;
}

int32_t timeidx_lookup(const struct timeidx *ti, int64_t ts)
{
	int32_t lo = 0, hi = ti->n; /* first entry with e.ts > ts */

	while (lo < hi) {
		int32_t mid = lo + (hi - lo) / 2;

		if (ti->e[mid].ts <= ts)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? ti->e[lo - 1].rel : -1;
}

int timeidx_reset(struct timeidx *ti)
{
	ti->n = 0;
	ti->bad = false;
	return ftruncate(ti->ref->fd, 0) < 0 ? -errno : 0;
}
