/* clock.h: the monotonic clock of the shell (never used by the engine). */
#ifndef WH_CLOCK_H
#define WH_CLOCK_H

/* Microseconds / milliseconds since an arbitrary start, never going back. */
long long wh_clock_us(void);
long wh_clock_ms(void);

#endif
