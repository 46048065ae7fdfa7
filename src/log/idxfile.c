/* idxfile.c - load, extend and truncate a fixed-size-entry index file (shape in idxfile.h). */
#include "log/idxfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void idxfile_put_be(uint8_t *p, uint64_t v, int n)
{
	for (int i = n - 1; i >= 0; i--, v >>= 8)
		p[i] = (uint8_t)v;
}

uint64_t idxfile_get_be(const uint8_t *p, int n)
{
	uint64_t v = 0;

	for (int i = 0; i < n; i++)
		v = (v << 8) | p[i];
	return v;
}

static int idxfile_grow(struct idxfile *f, int32_t want)
{
	void *ne;
	int32_t cap = f->cap ? f->cap : 64;

	while (cap < want)
		cap *= 2;
	if (cap <= f->cap)
		return 0;
	ne = realloc(f->e, (size_t)cap * f->ent_size);
	if (!ne)
		return -ENOMEM;
	f->e = ne;
	f->cap = cap;
	return 0;
}

static int idxfile_load(struct idxfile *f, int fd, idxfile_decode_fn *decode)
{
	struct stat st;
	uint8_t *raw;
	int32_t n;
	int rc = 0;

	if (fstat(fd, &st) < 0)
		return -errno;
	f->bad = st.st_size % f->disk_size != 0 || st.st_size > (int64_t)INT32_MAX;
	if (f->bad || st.st_size == 0)
		return 0;
	n = (int32_t)(st.st_size / f->disk_size);
	raw = malloc((size_t)st.st_size);
	if (!raw)
		return -ENOMEM;
	if (pread(fd, raw, (size_t)st.st_size, 0) != st.st_size) {
		f->bad = true; /* shrank under us or I/O error: rebuild */
		goto out_free;
	}
	rc = idxfile_grow(f, n);
	if (rc)
		goto out_free;
	for (int32_t i = 0; i < n; i++)
		decode(idxfile_ent(f, i), raw + (size_t)i * f->disk_size);
	f->n = n;
out_free:
	free(raw);
	return rc;
}

int idxfile_open(struct idxfile *f, const char *path, int32_t max_n, bool trunc, uint32_t ent_size, uint32_t disk_size,
		 idxfile_decode_fn *decode)
{
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | (trunc ? O_TRUNC : 0), 0644);
	int rc;

	f->ref = NULL;
	f->e = NULL;
	f->n = f->cap = 0;
	f->max_n = max_n > 0 ? max_n : 1;
	f->ent_size = ent_size;
	f->disk_size = disk_size;
	f->bad = false;
	if (fd < 0)
		return -errno;
	f->ref = fdref_new(fd);
	if (!f->ref)
		return -ENOMEM;
	rc = idxfile_load(f, fd, decode);
	if (rc)
		idxfile_close(f);
	return rc;
}

void idxfile_close(struct idxfile *f)
{
	if (f->ref && ftruncate(f->ref->fd, (off_t)f->n * f->disk_size) < 0) {
		/* harmless: a bad index is rebuilt at the next open */
	}
	fdref_put(f->ref);
	f->ref = NULL;
	free(f->e);
	f->e = NULL;
	f->n = f->cap = 0;
}

int idxfile_append(struct idxfile *f, const void *ent, const uint8_t *raw)
{
	int rc = idxfile_grow(f, f->n + 1);
	ssize_t n;

	if (rc)
		return rc;
	memcpy(idxfile_ent(f, f->n), ent, f->ent_size);
	f->n++;
	n = pwrite(f->ref->fd, raw, f->disk_size, (off_t)(f->n - 1) * f->disk_size);
	if (n < 0)
		return -errno;
	return n == (ssize_t)f->disk_size ? 0 : -ENOSPC;
}

int idxfile_reset(struct idxfile *f)
{
	f->n = 0;
	f->bad = false;
	return ftruncate(f->ref->fd, 0) < 0 ? -errno : 0;
}
