/*
 * loop.h - the event loop: epoll for file descriptors, a binary heap of
 * timers, and an eventfd so other threads (the flusher) can wake it.
 *
 * One loop runs in one thread; every callback runs in that thread.  Only
 * loop_wake() may be called from another thread.
 */
#ifndef GREGOR_NET_LOOP_H
#define GREGOR_NET_LOOP_H

#include <stdbool.h>
#include <stdint.h>

struct loop;
struct loop_io;
struct loop_timer;

typedef void loop_io_fn(struct loop_io *io, uint32_t events);
typedef void loop_timer_fn(struct loop_timer *t);
typedef void loop_wake_fn(void *arg);

struct loop_io {
	int fd;
	uint32_t events; /* EPOLLIN / EPOLLOUT currently registered */
	loop_io_fn *fn;
};

struct loop_timer {
	int64_t due_ms; /* clock_mono_ms() deadline */
	int idx;        /* position in the heap, -1 when not armed */
	loop_timer_fn *fn;
};

int loop_new(struct loop **out);
void loop_free(struct loop *loop);
int loop_add(struct loop *loop, struct loop_io *io, uint32_t events);
int loop_mod(struct loop *loop, struct loop_io *io, uint32_t events);
/* Stops watching io; an event for it still pending in this pass is dropped, so io may be freed at once. */
void loop_del(struct loop *loop, struct loop_io *io);

void loop_timer_init(struct loop_timer *t, loop_timer_fn *fn);
/* Arms (or re-arms) t to fire once at due_ms. */
void loop_timer_set(struct loop *loop, struct loop_timer *t, int64_t due_ms);
void loop_timer_cancel(struct loop *loop, struct loop_timer *t);
static inline bool loop_timer_armed(const struct loop_timer *t)
{
	return t->idx >= 0;
}

/* fn(arg) runs in the loop thread after any loop_wake() call. */
void loop_on_wake(struct loop *loop, loop_wake_fn *fn, void *arg);
void loop_wake(struct loop *loop); /* thread-safe */
/* fn(arg) runs before the loop waits again: after the events of a pass and the timers due. */
void loop_on_idle(struct loop *loop, loop_wake_fn *fn, void *arg);

/* Runs until loop_stop(); returns 0 or -errno. */
int loop_run(struct loop *loop);
void loop_stop(struct loop *loop); /* async-signal-safe */

#endif
