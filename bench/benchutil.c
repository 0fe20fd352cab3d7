/* benchutil.c: the benchmarks' shared helpers (benchutil.h). */
#include "benchutil.h"

#include <errno.h>  /* program_invocation_short_name */
#include <stdio.h>  /* fprintf */
#include <stdlib.h> /* exit */
#include <time.h>   /* clock_gettime */

double wh_bench_cpu_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

double wh_bench_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

int wh_bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

_Noreturn void wh_bench_die(const char *what)
{
    fprintf(stderr, "%s: %s\n", program_invocation_short_name, what);
    exit(1);
}
