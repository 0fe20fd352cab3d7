/* clock.c: CLOCK_MONOTONIC in the units the shell uses. */
#include "wh/clock.h"

#include <time.h> /* clock_gettime */

long long wh_clock_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

long wh_clock_ms(void)
{
    return (long)(wh_clock_us() / 1000);
}
