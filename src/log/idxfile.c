/* idxfile.c - load, map, extend and truncate a fixed-size-entry index file (shape in idxfile.h). */
#include "log/idxfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
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

static void idxfile_init(struct idxfile *f, int32_t max_n, uint32_t disk_size)
{
	f->ref = NULL;
	f->raw = NULL;
	f->map_len = 0;
	f->n = f->cap = 0;
	f->max_n = max_n > 0 ? max_n : 1;
	f->disk_size = disk_size;
	f->bad = false;
}

static int idxfile_grow(struct idxfile *f, int32_t want)
{
	uint8_t *nr;
	int32_t cap = f->cap ? f->cap : 64;

	while (cap < want)
		cap *= 2;
	if (cap <= f->cap)
		return 0;
	nr = realloc(f->raw, (size_t)cap * f->disk_size);
	if (!nr)
		return -ENOMEM;
	f->raw = nr;
	f->cap = cap;
	return 0;
}

/* Entries in a file of size bytes, or -1 (sets bad) if the size is not a whole number of them. */
static int32_t idxfile_count(struct idxfile *f, int64_t size)
{
	f->bad = size % f->disk_size != 0 || size > (int64_t)INT32_MAX;
	return f->bad ? -1 : (int32_t)(size / f->disk_size);
}

static int idxfile_load(struct idxfile *f, int fd)
{
	struct stat st;
	int32_t n;
	int rc;

	if (fstat(fd, &st) < 0)
		return -errno;
	n = idxfile_count(f, st.st_size);
	if (n <= 0)
		return 0;
	rc = idxfile_grow(f, n);
	if (rc)
		return rc;
	if (pread(fd, f->raw, (size_t)st.st_size, 0) != st.st_size)
		f->bad = true; /* shrank under us or I/O error: rebuild */
	else
		f->n = n;
	return 0;
}

int idxfile_open(struct idxfile *f, const char *path, int32_t max_n, bool trunc, uint32_t disk_size)
{
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | (trunc ? O_TRUNC : 0), 0644);
	int rc;

	idxfile_init(f, max_n, disk_size);
	if (fd < 0)
		return -errno;
	f->ref = fdref_new(fd);
	if (!f->ref)
		return -ENOMEM;
	rc = idxfile_load(f, fd);
	if (rc)
		idxfile_close(f);
	return rc;
}

int idxfile_map(struct idxfile *f, const char *path, uint32_t disk_size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	int32_t n;
	void *p;
	int rc = 0;

	idxfile_init(f, 0, disk_size);
	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	if (fstat(fd, &st) < 0) {
		rc = -errno;
		goto out_close;
	}
	n = idxfile_count(f, st.st_size);
	if (n <= 0)
		goto out_close;
	p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		rc = -errno;
		goto out_close;
	}
	f->raw = p;
	f->map_len = (size_t)st.st_size;
	f->n = n;
out_close:
	close(fd);
	return rc;
}

void idxfile_close(struct idxfile *f)
{
	if (f->map_len) {
		munmap(f->raw, f->map_len);
		f->map_len = 0;
	} else {
		if (f->ref && ftruncate(f->ref->fd, (off_t)f->n * f->disk_size) < 0) {
			/* harmless: a bad index is rebuilt at the next open */
		}
		free(f->raw);
	}
	fdref_put(f->ref);
	f->ref = NULL;
	f->raw = NULL;
	f->n = f->cap = 0;
}

int idxfile_append(struct idxfile *f, const uint8_t *raw)
{
	int rc = idxfile_grow(f, f->n + 1);
	ssize_t n;

	if (rc)
		return rc;
	memcpy(f->raw + (size_t)f->n * f->disk_size, raw, f->disk_size);
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
