/* epochs.c - the leader epoch cache and leader-epoch-checkpoint (format in epochs.h). */
#include "log/epochs.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log/checkpoint.h"
#include "util/durable.h"
#include "util/log.h"

#define EPOCHS_FILE "leader-epoch-checkpoint"
#define EPOCHS_FILE_MAX (1 << 20)

static int epochs_push(struct epochs *ep, int32_t epoch, int64_t start)
{
	if (ep->n == ep->cap) {
		int cap = ep->cap ? ep->cap * 2 : 8;
		struct epoch_ent *ne = realloc(ep->e, (size_t)cap * sizeof(*ne));

		if (!ne)
			return -ENOMEM;
		ep->e = ne;
		ep->cap = cap;
	}
	ep->e[ep->n].epoch = epoch;
	ep->e[ep->n].start_offset = start;
	ep->n++;
	return 0;
}

/* Parses the file text; -EBADMSG if malformed. */
static int epochs_parse(struct epochs *ep, char *text)
{
	char *p = text, *end;
	long long version, count;

	version = strtoll(p, &end, 10);
	if (end == p || *end != '\n' || version != 0)
		return -EBADMSG;
	p = end + 1;
	count = strtoll(p, &end, 10);
	if (end == p || *end != '\n' || count < 0 || count > EPOCHS_FILE_MAX / 4)
		return -EBADMSG;
	p = end + 1;
	for (long long i = 0; i < count; i++) {
		long long epoch = strtoll(p, &end, 10), start;

		if (end == p || *end != ' ' || epoch < 0 || epoch > INT32_MAX)
			return -EBADMSG;
		p = end + 1;
		start = strtoll(p, &end, 10);
		if (end == p || *end != '\n' || start < 0)
			return -EBADMSG;
		p = end + 1;
		if (ep->n && (epoch <= ep->e[ep->n - 1].epoch || start < ep->e[ep->n - 1].start_offset))
			return -EBADMSG;
		if (epochs_push(ep, (int32_t)epoch, start))
			return -ENOMEM;
	}
	return *p ? -EBADMSG : 0;
}

int epochs_load(struct epochs *ep, const char *dir)
{
	char *text = malloc(EPOCHS_FILE_MAX);
	int rc;

	memset(ep, 0, sizeof(*ep));
	if (!text)
		return -ENOMEM;
	rc = checkpoint_read(dir, EPOCHS_FILE, text, EPOCHS_FILE_MAX);
	if (rc == -ENOENT) { /* never written: the leader of epoch 0 from the start (epochs.h) */
		rc = epochs_push(ep, 0, 0);
		goto out_free;
	}
	if (rc >= 0)
		rc = epochs_parse(ep, text);
	if (rc == -EBADMSG || rc == -EFBIG) {
		log_warn("log: '%s/%s' is malformed, ignoring it", dir, EPOCHS_FILE);
		ep->n = 0;
		rc = 0;
	}
out_free:
	free(text);
	return rc;
}

void epochs_release(struct epochs *ep)
{
	free(ep->e);
	ep->e = NULL;
	ep->n = ep->cap = 0;
}

/* The file's text (malloc'd, *len bytes), or NULL without memory. */
static char *epochs_format(const struct epochs *ep, size_t *len)
{
	size_t cap = 32 + (size_t)ep->n * 34;
	char *text = malloc(cap);

	if (!text)
		return NULL;
	*len = (size_t)snprintf(text, cap, "0\n%d\n", ep->n);
	for (int i = 0; i < ep->n; i++)
		*len += (size_t)snprintf(text + *len, cap - *len, "%" PRId32 " %" PRId64 "\n", ep->e[i].epoch,
					 ep->e[i].start_offset);
	return text;
}

int epochs_write(const struct epochs *ep, int dir_fd)
{
	size_t len;
	char *text = epochs_format(ep, &len);
	int rc;

	if (!text)
		return -ENOMEM;
	rc = checkpoint_write(dir_fd, EPOCHS_FILE, text);
	free(text);
	return rc;
}

bool epochs_assign(struct epochs *ep, int32_t epoch, int64_t start_offset)
{
	if (epoch < 0 || (ep->n && epoch <= ep->e[ep->n - 1].epoch))
		return false;
	if (ep->n && start_offset < ep->e[ep->n - 1].start_offset)
		return false;
	return epochs_push(ep, epoch, start_offset) == 0;
}

bool epochs_truncate_end(struct epochs *ep, int64_t end_offset)
{
	int n = ep->n;

	while (ep->n && ep->e[ep->n - 1].start_offset >= end_offset)
		ep->n--;
	return n != ep->n;
}

bool epochs_truncate_start(struct epochs *ep, int64_t log_start)
{
	int drop = 0;

	while (drop + 1 < ep->n && ep->e[drop + 1].start_offset <= log_start)
		drop++;
	if (drop)
		memmove(ep->e, ep->e + drop, (size_t)(ep->n - drop) * sizeof(*ep->e));
	ep->n -= drop;
	if (ep->n && ep->e[0].start_offset < log_start) {
		ep->e[0].start_offset = log_start;
		return true;
	}
	return drop != 0;
}

bool epochs_end_offset(const struct epochs *ep, int32_t epoch, int64_t leo, int32_t *epoch_out, int64_t *end_out)
{
	int i = ep->n - 1;

	if (epoch < 0 || ep->n == 0 || epoch > ep->e[ep->n - 1].epoch)
		return false; /* undefined, or newer than any epoch known here */
	if (epoch == ep->e[ep->n - 1].epoch) {
		*epoch_out = epoch;
		*end_out = leo;
		return true;
	}
	while (i >= 0 && ep->e[i].epoch > epoch)
		i--;
	/* below the first known epoch: its data is gone, so it ended where the first known one starts */
	*epoch_out = i >= 0 ? ep->e[i].epoch : epoch;
	*end_out = ep->e[i + 1].start_offset;
	return true;
}

int32_t epochs_latest(const struct epochs *ep)
{
	return ep->n ? ep->e[ep->n - 1].epoch : -1;
}

bool epochs_truncation_offset(const struct epoch_reply *leader, const struct epoch_local *local, int64_t *offset_out)
{
	int64_t offset;

	if (leader->end_offset < 0) { /* the leader knows no epoch <= the one asked: keep what is fetched */
		*offset_out = local->fetch_offset < local->leo ? local->fetch_offset : local->leo;
		return true;
	}
	if (leader->epoch < 0 || !local->known || local->epoch == leader->epoch) {
		offset = leader->end_offset;
		if (local->known && local->epoch == leader->epoch && local->end_offset < offset)
			offset = local->end_offset;
		*offset_out = offset < local->leo ? offset : local->leo;
		return true;
	}
	/* the follower never saw the leader's epoch: cut back to its own epoch before it and ask again */
	*offset_out = local->end_offset < local->leo ? local->end_offset : local->leo;
	return false;
}
