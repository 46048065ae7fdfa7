/*
 * pid.c - producer id blocks persisted in the log directory (see pid.h).
 */
#include "coord/pid.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log/checkpoint.h"
#include "util/log.h"

struct pid_alloc {
	char *dir;
	int dir_fd;
	int64_t next;      /* the next id to hand out */
	int64_t block_end; /* persisted: ids below it may be in use */
	struct pid_epoch {
		int64_t id; /* -1: empty slot */
		int16_t epoch;
	} * epochs; /* PID_EPOCHS slots, by id % PID_EPOCHS */
};

static int pid_read(struct pid_alloc *pa)
{
	char buf[64], *end;
	long long v;
	int rc = checkpoint_read(pa->dir, PID_FILE, buf, sizeof(buf));

	if (rc == -ENOENT)
		return 0;
	if (rc < 0)
		return rc;
	errno = 0;
	if (strncmp(buf, "0\n", 2) || (v = strtoll(buf + 2, &end, 10)) < 0 || errno || end == buf + 2 ||
	    strcmp(end, "\n")) {
		log_error("'%s/%s' is malformed: refusing to reuse producer ids", pa->dir, PID_FILE);
		return -EBADMSG;
	}
	pa->next = pa->block_end = v;
	return 0;
}

int pid_open(const char *dir, struct pid_alloc **out)
{
	struct pid_alloc *pa = calloc(1, sizeof(*pa));
	int rc;

	if (!pa)
		return -ENOMEM;
	pa->dir_fd = -1;
	pa->dir = strdup(dir);
	pa->epochs = malloc(PID_EPOCHS * sizeof(*pa->epochs));
	if (!pa->dir || !pa->epochs) {
		rc = -ENOMEM;
		goto out_free;
	}
	pa->dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (pa->dir_fd < 0) {
		rc = -errno;
		goto out_free;
	}
	for (int i = 0; i < PID_EPOCHS; i++)
		pa->epochs[i].id = -1;
	rc = pid_read(pa);
	if (rc)
		goto out_free;
	*out = pa;
	return 0;
out_free:
	pid_close(pa);
	return rc;
}

void pid_close(struct pid_alloc *pa)
{
	if (pa->dir_fd >= 0)
		close(pa->dir_fd);
	free(pa->epochs);
	free(pa->dir);
	free(pa);
}

int pid_next(struct pid_alloc *pa, int64_t *id)
{
	if (pa->next == pa->block_end) {
		char text[64];
		int rc;

		if (pa->block_end > INT64_MAX - PID_BLOCK_SIZE)
			return -EOVERFLOW;
		snprintf(text, sizeof(text), "0\n%" PRId64 "\n", pa->block_end + PID_BLOCK_SIZE);
		rc = checkpoint_write(pa->dir_fd, PID_FILE, text);
		if (rc) {
			log_error("cannot reserve producer ids in '%s/%s': %s", pa->dir, PID_FILE, strerror(-rc));
			return rc;
		}
		pa->block_end += PID_BLOCK_SIZE;
		log_debug(LOGC_TXN, "txn", "reserved producer ids %" PRId64 "..%" PRId64, pa->next, pa->block_end - 1);
	}
	*id = pa->next++;
	return 0;
}

bool pid_issued(const struct pid_alloc *pa, int64_t id)
{
	return id >= 0 && id < pa->next;
}

void pid_epoch_set(struct pid_alloc *pa, int64_t id, int16_t epoch)
{
	assert(id >= 0);
	pa->epochs[id % PID_EPOCHS] = (struct pid_epoch){ id, epoch };
}

bool pid_epoch_current(const struct pid_alloc *pa, int64_t id, int16_t epoch)
{
	const struct pid_epoch *e = id >= 0 ? &pa->epochs[id % PID_EPOCHS] : NULL;

	return e && e->id == id && e->epoch == epoch;
}
