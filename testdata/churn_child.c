/* churn_child: a short-lived process for the churn test, exec'd (stripped)
 * by churn_load: main -> child_outer -> child_inner (busy for argv[1]
 * microseconds, default 1000), then exits. */
#include <stdlib.h>

#include "td_common.h"

volatile unsigned long child_sink;

TD_FRAME unsigned long child_inner(unsigned long n) {
  unsigned long x = n | 1;
  TD_SPIN(x, n);
  return x;
}

TD_FRAME unsigned long child_outer(double seconds) {
  double end = td_now() + seconds;
  unsigned long acc = 0;
  do {
    acc += child_inner(2000);
  } while (td_now() < end);
  return acc;
}

int main(int argc, char **argv) {
  double us = argc > 1 ? strtod(argv[1], NULL) : 1000;
  child_sink = child_outer(us * 1e-6);
  return 0;
}
