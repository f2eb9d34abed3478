/* libdlwork.so: dlwork_entry -> dlwork_inner (busy).  Loaded by
 * dlopen_main with dlopen/dlsym. */
#include "td_common.h"

volatile unsigned long dlwork_sink;

TD_FRAME unsigned long dlwork_inner(unsigned long n) {
  unsigned long x = n | 1;
  TD_SPIN(x, n);
  return x;
}

TD_FRAME unsigned long dlwork_entry(double seconds) {
  double end = td_now() + seconds;
  unsigned long acc = 0;
  do {
    acc += dlwork_inner(100000);
  } while (td_now() < end);
  dlwork_sink = acc;
  return acc;
}
