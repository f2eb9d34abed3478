/* inline_work: main -> work_outer, whose hot loop is spin_inlined, always
 * inlined into it. A symbolizer must report spin_inlined, at this file's
 * line marked HOT, as an inline frame of work_outer; pprof's -lines and
 * -list views show those lines (tests/record_pprof_priv_test.cc).
 * argv[1] = seconds (default 2). */
#include "td_common.h"

#define SPIN_CHUNK 100000UL

volatile unsigned long inline_sink;

static inline __attribute__((always_inline)) unsigned long spin_inlined(unsigned long x) {
  TD_SPIN(x, SPIN_CHUNK); /* HOT */
  return x;
}

TD_FRAME unsigned long work_outer(double seconds) {
  double end = td_now() + seconds;
  unsigned long x = 7;
  do {
    x = spin_inlined(x);
  } while (td_now() < end);
  return x;
}

int main(int argc, char **argv) {
  inline_sink = work_outer(td_seconds(argc, argv, 1));
  return 0;
}
