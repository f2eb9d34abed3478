/* probe_calls N M [DELAY_MS]: after DELAY_MS (default 0; a profiler
 * learns of a new process when it first sees it), main -> run_calls -> site_one calls counted_leaf N times
 * and site_two M times; each call of counted_leaf also fires the USDT probe
 * ehprof_test:leaf (sys/sdt.h). Exact counts for uprobe and USDT hits,
 * split by call site. Prints "probe_calls: N M" at the end. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/sdt.h>
#include <time.h>

#include "td_common.h"

volatile unsigned long probe_sink;

TD_FRAME unsigned long counted_leaf(unsigned long x) {
  DTRACE_PROBE1(ehprof_test, leaf, x);
  unsigned long y = x * 2654435761UL + 1;
  __asm__ volatile("" : "+r"(y));
  return y;
}

TD_FRAME unsigned long site_one(long n) {
  unsigned long acc = 0;
  for (long i = 0; i < n; i++) acc += counted_leaf((unsigned long)i);
  return acc;
}

TD_FRAME unsigned long site_two(long n) {
  unsigned long acc = 1;
  for (long i = 0; i < n; i++) acc ^= counted_leaf((unsigned long)i + 7);
  return acc;
}

TD_FRAME unsigned long run_calls(long n, long m) {
  unsigned long a = site_one(n);
  unsigned long b = site_two(m);
  return a + b;
}

int main(int argc, char **argv) {
  long n = argc > 1 ? atol(argv[1]) : 1000;
  long m = argc > 2 ? atol(argv[2]) : 500;
  long delay_ms = argc > 3 ? atol(argv[3]) : 0;
  if (delay_ms > 0) {
    struct timespec ts = {delay_ms / 1000, (delay_ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
  }
  probe_sink = run_calls(n, m);
  fprintf(stderr, "probe_calls: %ld %ld\n", n, m);
  return 0;
}
