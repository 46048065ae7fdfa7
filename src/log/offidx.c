/* offidx.c - the sparse offset index of one segment (format in offidx.h). */
#include "log/offidx.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static void put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static int offidx_grow(struct offidx *oi, int32_t want)
{
	struct offidx_ent *ne;
	int32_t cap = oi->cap ? oi->cap : 64;

	while (cap < want)
		cap *= 2;
	if (cap <= oi->cap)
		return 0;
	ne = realloc(oi->e, (size_t)cap * sizeof(*ne));
	if (!ne)
		return -ENOMEM;
	oi->e = ne;
	oi->cap = cap;
	return 0;
}

static int offidx_load(struct offidx *oi, int fd)
{
	struct stat st;
	uint8_t *raw;
	int32_t n;
	int rc = 0;

	if (fstat(fd, &st) < 0)
		return -errno;
	oi->bad = st.st_size % OFFIDX_ENTRY_SIZE != 0 || st.st_size > (int64_t)INT32_MAX;
	if (oi->bad || st.st_size == 0)
		return 0;
	n = (int32_t)(st.st_size / OFFIDX_ENTRY_SIZE);
	raw = malloc((size_t)st.st_size);
	if (!raw)
		return -ENOMEM;
	if (pread(fd, raw, (size_t)st.st_size, 0) != st.st_size) {
		oi->bad = true; /* shrank under us or I/O error: rebuild */
		goto out_free;
	}
	rc = offidx_grow(oi, n);
	if (rc)
		goto out_free;
	for (int32_t i = 0; i < n; i++) {
		oi->e[i].rel = (int32_t)get32(raw + 8 * i);
		oi->e[i].pos = (int32_t)get32(raw + 8 * i + 4);
	}
	oi->n = n;
out_free:
	free(raw);
	return rc;
}

int offidx_open(struct offidx *oi, const char *path, int32_t max_n, bool trunc)
{
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | (trunc ? O_TRUNC : 0), 0644);
	int rc;

	oi->ref = NULL;
	oi->e = NULL;
	oi->n = oi->cap = 0;
	oi->max_n = max_n > 0 ? max_n : 1;
	oi->bad = false;
	if (fd < 0)
		return -errno;
	oi->ref = fdref_new(fd);
	if (!oi->ref)
		return -ENOMEM;
	rc = offidx_load(oi, fd);
	if (rc)
		offidx_close(oi);
	return rc;
}

void offidx_close(struct offidx *oi)
{
	if (oi->ref && ftruncate(oi->ref->fd, (off_t)oi->n * OFFIDX_ENTRY_SIZE) < 0) {
		/* harmless: a bad index is rebuilt at the next open */
	}
	fdref_put(oi->ref);
	oi->ref = NULL;
	free(oi->e); oi->e = NULL;
	oi->n = oi->cap = 0;
}

bool offidx_valid(const struct offidx *oi, int64_t log_size)
{
	if (oi->bad)
		return false;
	for (int32_t i = 0; i < oi->n; i++) {
		if (oi->e[i].rel < 0 || oi->e[i].pos < 0 || oi->e[i].pos >= log_size)
			return false;
		if (i && (oi->e[i].rel <= oi->e[i - 1].rel || oi->e[i].pos <= oi->e[i - 1].pos))
			return false;
	}
	return true;
}

int offidx_append(struct offidx *oi, int32_t rel, int32_t pos)
{
	uint8_t raw[OFFIDX_ENTRY_SIZE];
	int rc = offidx_grow(oi, oi->n + 1);
	ssize_t n;

	if (rc)
		return rc;
	assert(!oi->n || (rel > oi->e[oi->n - 1].rel && pos > oi->e[oi->n - 1].pos));
	oi->e[oi->n].rel = rel;
	oi->e[oi->n].pos = pos;
	oi->n++;
	put32(raw, (uint32_t)rel);
	put32(raw + 4, (uint32_t)pos);
	n = pwrite(oi->ref->fd, raw, sizeof(raw), (off_t)(oi->n - 1) * OFFIDX_ENTRY_SIZE);
	if (n < 0)
		return -errno;
	return n == (ssize_t)sizeof(raw) ? 0 : -ENOSPC;
}

int32_t offidx_lookup(const struct offidx *oi, int32_t rel)
{
	int32_t lo = 0, hi = oi->n; /* first entry with e.rel > rel */

	while (lo < hi) {
		int32_t mid = lo + (hi - lo) / 2;

		if (oi->e[mid].rel <= rel)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? oi->e[lo - 1].pos : 0;
}

int offidx_reset(struct offidx *oi)
{
	oi->n = 0;
	oi->bad = false;
	return ftruncate(oi->ref->fd, 0) < 0 ? -errno : 0;
}
