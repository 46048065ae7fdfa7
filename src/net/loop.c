/*
 * loop.c - epoll event loop with a timer heap and an eventfd wake-up
 * (see loop.h).  Shaped like Redis' ae: one small file per mechanism.
 */
#include "net/loop.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "util/clock.h"

#define LOOP_EVENTS_MAX 256

struct loop {
	int epfd;
	struct loop_io wake_io;
	loop_wake_fn *wake_fn;
	void *wake_arg;
	loop_wake_fn *idle_fn;
	void *idle_arg;
	struct loop_timer **heap;
	int nheap, heap_cap;
	struct epoll_event *evs; /* the pass's events (loop_run), so loop_del can drop one still to come */
	int nevs;
	volatile int stop;
};

static void loop_wake_read(struct loop_io *io, uint32_t events);

int loop_new(struct loop **out)
{
	struct loop *loop = calloc(1, sizeof(*loop));
	int err;

	if (!loop)
		return -ENOMEM;
	loop->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (loop->epfd < 0) {
		err = -errno;
		goto out_free;
	}
	loop->wake_io.fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (loop->wake_io.fd < 0) {
		err = -errno;
		goto out_close_ep;
	}
	loop->wake_io.fn = loop_wake_read;
	err = loop_add(loop, &loop->wake_io, EPOLLIN);
	if (err)
		goto out_close_wake;
	*out = loop;
	return 0;
out_close_wake:
	close(loop->wake_io.fd);
out_close_ep:
	close(loop->epfd);
out_free:
	free(loop);
	return err;
}

void loop_free(struct loop *loop)
{
	if (!loop)
		return;
	close(loop->wake_io.fd);
	close(loop->epfd);
	free(loop->heap);
	free(loop);
}

static int loop_ctl(struct loop *loop, int op, struct loop_io *io, uint32_t events)
{
	struct epoll_event ev = { .events = events, .data.ptr = io };

	if (epoll_ctl(loop->epfd, op, io->fd, &ev) < 0)
		return -errno;
	io->events = events;
	return 0;
}

int loop_add(struct loop *loop, struct loop_io *io, uint32_t events)
{
	return loop_ctl(loop, EPOLL_CTL_ADD, io, events);
}

int loop_mod(struct loop *loop, struct loop_io *io, uint32_t events)
{
	if (io->events == events)
		return 0;
	return loop_ctl(loop, EPOLL_CTL_MOD, io, events);
}

void loop_del(struct loop *loop, struct loop_io *io)
{
	epoll_ctl(loop->epfd, EPOLL_CTL_DEL, io->fd, NULL);
	io->events = 0;
	/* its owner may free io once this returns: an event of this pass not yet handled must not reach it */
	for (int i = 0; i < loop->nevs; i++)
		if (loop->evs[i].data.ptr == io)
			loop->evs[i].data.ptr = NULL;
}

/* ---- timers: a binary min-heap on due_ms ---- */

void loop_timer_init(struct loop_timer *t, loop_timer_fn *fn)
{
	t->due_ms = 0;
	t->idx = -1;
	t->fn = fn;
}

static void heap_swap(struct loop *loop, int a, int b)
{
	struct loop_timer *t = loop->heap[a];

	loop->heap[a] = loop->heap[b];
	loop->heap[b] = t;
	loop->heap[a]->idx = a;
	loop->heap[b]->idx = b;
}

static void heap_up(struct loop *loop, int i)
{
	while (i > 0 && loop->heap[(i - 1) / 2]->due_ms > loop->heap[i]->due_ms) {
		heap_swap(loop, i, (i - 1) / 2);
		i = (i - 1) / 2;
	}
}

static void heap_down(struct loop *loop, int i)
{
	for (;;) {
		int l = 2 * i + 1, r = l + 1, m = i;

		if (l < loop->nheap && loop->heap[l]->due_ms < loop->heap[m]->due_ms)
			m = l;
		if (r < loop->nheap && loop->heap[r]->due_ms < loop->heap[m]->due_ms)
			m = r;
		if (m == i)
			return;
		heap_swap(loop, i, m);
		i = m;
	}
}

void loop_timer_cancel(struct loop *loop, struct loop_timer *t)
{
	int i = t->idx;

	if (i < 0)
		return;
	loop->nheap--;
	if (i != loop->nheap) {
		loop->heap[i] = loop->heap[loop->nheap];
		loop->heap[i]->idx = i;
		heap_down(loop, i);
		heap_up(loop, i);
	}
	t->idx = -1;
}

void loop_timer_set(struct loop *loop, struct loop_timer *t, int64_t due_ms)
{
	loop_timer_cancel(loop, t);
	if (loop->nheap == loop->heap_cap) {
		int cap = loop->heap_cap ? loop->heap_cap * 2 : 64;
		struct loop_timer **nh = realloc(loop->heap, (size_t)cap * sizeof(*nh));

		if (!nh)
			abort(); /* timers are bounded by connections and requests */
		loop->heap = nh;
		loop->heap_cap = cap;
	}
	t->due_ms = due_ms;
	t->idx = loop->nheap;
	loop->heap[loop->nheap++] = t;
	heap_up(loop, t->idx);
}

static int loop_run_timers(struct loop *loop)
{
	int64_t now = clock_mono_ms();

	while (loop->nheap && loop->heap[0]->due_ms <= now) {
		struct loop_timer *t = loop->heap[0];

		loop_timer_cancel(loop, t);
		t->fn(t);
	}
	if (!loop->nheap)
		return 1000;
	return (int)(loop->heap[0]->due_ms - now);
}

/* ---- wake-ups ---- */

void loop_on_wake(struct loop *loop, loop_wake_fn *fn, void *arg)
{
	loop->wake_fn = fn;
	loop->wake_arg = arg;
}

void loop_on_idle(struct loop *loop, loop_wake_fn *fn, void *arg)
{
	loop->idle_fn = fn;
	loop->idle_arg = arg;
}

void loop_wake(struct loop *loop)
{
	uint64_t one = 1;
	ssize_t n = write(loop->wake_io.fd, &one, sizeof(one));

	(void)n; /* EAGAIN means a wake-up is already pending */
}

static void loop_wake_read(struct loop_io *io, uint32_t events)
{
	struct loop *loop = (struct loop *)((char *)io - offsetof(struct loop, wake_io));
	uint64_t v;

	(void)events;
	while (read(io->fd, &v, sizeof(v)) > 0)
		;
	if (loop->wake_fn)
		loop->wake_fn(loop->wake_arg);
}

void loop_stop(struct loop *loop)
{
	loop->stop = 1;
	loop_wake(loop);
}

int loop_run(struct loop *loop)
{
	struct epoll_event evs[LOOP_EVENTS_MAX];

	while (!loop->stop) {
		int timeout = loop_run_timers(loop), n;

		if (loop->idle_fn) /* after the events of the last pass and the timers just run */
			loop->idle_fn(loop->idle_arg);
		n = epoll_wait(loop->epfd, evs, LOOP_EVENTS_MAX, timeout < 0 ? 0 : timeout);
		if (n < 0 && errno != EINTR)
			return -errno;
		loop->evs = evs;
		loop->nevs = n > 0 ? n : 0;
		for (int i = 0; i < n; i++) {
			struct loop_io *io = evs[i].data.ptr;

			if (io) /* NULL: loop_del'd by an earlier handler of this pass */
				io->fn(io, evs[i].events);
		}
		loop->nevs = 0;
	}
	return 0;
}
