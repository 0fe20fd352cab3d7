/* benchutil.h: the helpers every benchmark program (bench/bench_*.c) used to
 * carry a copy of: clocks, the comparison qsort needs for medians, and the
 * exit on a failure that leaves no figure to print. Linked into every
 * wh-bench-* target (bench/CMakeLists.txt).
 *
 * Nothing here allocates or keeps state: there is nothing to free. */
#ifndef WH_BENCHUTIL_H
#define WH_BENCHUTIL_H

/* CPU time the process has used (CLOCK_PROCESS_CPUTIME_ID), in ms: the
 * figure to time on a shared machine, where other processes' load shows in
 * wall time but not here. */
double wh_bench_cpu_ms(void);

/* The monotonic clock (CLOCK_MONOTONIC), in seconds: for wall-time figures
 * (latencies, throughput, a sync's duration). */
double wh_bench_now_s(void);

/* qsort's comparison for an array of double, ascending (for medians and
 * percentiles). */
int wh_bench_cmp_double(const void *a, const void *b);

/* Prints "<program name>: <what>" on stderr and exits with status 1. */
_Noreturn void wh_bench_die(const char *what);

#endif
