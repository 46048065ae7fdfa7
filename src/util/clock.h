/* clock.h - wall-clock and monotonic milliseconds. */
#ifndef GREGOR_UTIL_CLOCK_H
#define GREGOR_UTIL_CLOCK_H

#include <pthread.h>
#include <stdint.h>
#include <time.h>

int64_t clock_wall_ms(void); /* milliseconds since the epoch (record timestamps) */
int64_t clock_mono_ms(void); /* monotonic milliseconds (timeouts) */
int64_t clock_mono_us(void);

/* Initialises cv so that its timed waits run on the monotonic clock (unaffected by wall-clock steps). */
void clock_cond_init(pthread_cond_t *cv);
/* The monotonic time ms from now (ms < 0: now), for pthread_cond_timedwait on such a cv. */
struct timespec clock_mono_deadline(int64_t ms);

#endif
