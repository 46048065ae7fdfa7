/* clock.h - wall-clock and monotonic milliseconds. */
#ifndef GREGOR_UTIL_CLOCK_H
#define GREGOR_UTIL_CLOCK_H

#include <stdint.h>

int64_t clock_wall_ms(void); /* milliseconds since the epoch (record timestamps) */
int64_t clock_mono_ms(void); /* monotonic milliseconds (timeouts) */
int64_t clock_mono_us(void);

#endif
