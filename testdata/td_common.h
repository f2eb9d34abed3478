/* Shared helpers for the ehprof test programs.  Header-only on purpose:
 * nothing in here is part of an expected call chain. */
#ifndef EHPROF_TESTDATA_TD_COMMON_H
#define EHPROF_TESTDATA_TD_COMMON_H

#include <stdlib.h>
#include <time.h>

/* Keep a function as a real, separately named frame: no inlining, no
 * constprop/isra clones (which would rename the symbol), no identical-code
 * folding.  Tail calls are prevented in the code itself (results are used
 * after every call) and additionally with -fno-optimize-sibling-calls. */
#if defined(__clang__)
#define TD_FRAME __attribute__((noinline, used))
#else
#define TD_FRAME __attribute__((noinline, noipa, used))
#endif

static inline double td_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* argv[idx] = seconds (fractional allowed); default 2. */
static inline double td_seconds(int argc, char **argv, int idx) {
  if (argc > idx) {
    char *end = NULL;
    double s = strtod(argv[idx], &end);
    if (end != argv[idx] && s >= 0) return s;
  }
  return 2.0;
}

/* A chain of dependent multiply-adds the compiler cannot fold away. */
#define TD_SPIN(x, n)                                              \
  do {                                                             \
    for (unsigned long td_i_ = 0; td_i_ < (unsigned long)(n); td_i_++) { \
      (x) = (x) * 6364136223846793005UL + 1442695040888963407UL;   \
      __asm__ volatile("" : "+r"(x));                              \
    }                                                              \
  } while (0)

#endif
