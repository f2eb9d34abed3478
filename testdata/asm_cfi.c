/* asm_cfi: main -> asm_caller -> asm_spin (hand-written assembly with
 * explicit CFI, asm_cfi_impl.S) -> asm_callback (busy). */
#include "td_common.h"

#define SPIN_CALLS 64
#define CALLBACK_ITERS 4000UL

volatile unsigned long asm_sink;

/* Implemented in asm_cfi_impl.S: calls asm_callback(i) for i = n..1 and
 * returns the sum of the results. */
long asm_spin(long n);

TD_FRAME long asm_callback(long i) {
  unsigned long x = (unsigned long)i | 1;
  TD_SPIN(x, CALLBACK_ITERS);
  return (long)(x & 0xffff);
}

TD_FRAME long asm_caller(double seconds) {
  double end = td_now() + seconds;
  long acc = 0;
  do {
    acc += asm_spin(SPIN_CALLS);
  } while (td_now() < end);
  return acc;
}

int main(int argc, char **argv) {
  double secs = td_seconds(argc, argv, 1);
  asm_sink = (unsigned long)asm_caller(secs);
  return 0;
}
