/* plt_spin: main -> plt_spin_outer -> plt_spin_inner -> labs (libc, via
 * the PLT), in a tight loop, so a good share of samples (about one in
 * ten) have their leaf pc in the PLT stub itself, where the CFA is the
 * .plt FDE's expression (rsp + 8, or + 16 past the stub's push). Built
 * with -fno-builtin so labs stays a call. The replay captures
 * (testdata/captures/plt_stub.capture) come from it. */
#include <stdlib.h>

#include "td_common.h"

volatile unsigned long plt_spin_sink;

TD_FRAME unsigned long plt_spin_inner(long seed) {
  unsigned long acc = 0;
  for (long i = 0; i < 100000; i++) acc += (unsigned long)labs(seed - i);
  return acc;
}

TD_FRAME unsigned long plt_spin_outer(double seconds) {
  double end = td_now() + seconds;
  unsigned long acc = 0;
  long seed = 1;
  do {
    acc += plt_spin_inner(seed++);
  } while (td_now() < end);
  return acc;
}

int main(int argc, char **argv) {
  plt_spin_sink = plt_spin_outer(td_seconds(argc, argv, 1));
  return 0;
}
