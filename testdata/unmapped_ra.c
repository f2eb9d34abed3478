/* unmapped_ra [SECONDS]: spins in a leaf whose caller's return address,
 * by its CFI, is 0x1000, an address no process maps (as a crafted or
 * garbage stack has it): every sample's walk stops at "pc outside known
 * mappings" at once. A hostile process's way to ask for a stack copy with
 * every sample (tests/record_deferred_priv_test.cc). */
#include <unistd.h>

#include "td_common.h"

static double unmapped_end;
volatile unsigned long unmapped_sink;

TD_FRAME void unmapped_spin(void) {
  unsigned long x = 1;
  do {
    TD_SPIN(x, 100000);
    unmapped_sink = x;
  } while (td_now() < unmapped_end);
  _exit(0);
}

int main(int argc, char **argv) {
  unmapped_end = td_now() + td_seconds(argc, argv, 1);
  /* A call whose return address is 0x1000: unmapped_spin never returns. */
  __asm__ volatile("push $0x1000\n\tjmp unmapped_spin" ::: "memory");
  return 0;
}
