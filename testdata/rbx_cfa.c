/* rbx_cfa [SECONDS]: main -> rbx_loop -> rbx_frame (CFA based on rbx, as
 * ld.so's lazy-binding trampoline) -> rbx_saver (saves rbx, changes it) ->
 * rbx_leaf, which spins. Unwinding rbx_frame needs the rbx rbx_saver
 * saved (rbx_cfa_impl.S). x86-64 only.
 *
 * Expected chain: rbx_leaf <- rbx_saver <- rbx_frame <- rbx_loop <- main. */
#include "td_common.h"

void rbx_frame(void (*fn)(void));

volatile unsigned long rbx_sink;

TD_FRAME void rbx_leaf(void) {
  unsigned long x = rbx_sink;
  TD_SPIN(x, 200000);
  rbx_sink = x;
}

TD_FRAME void rbx_loop(double secs) {
  const double end = td_now() + secs;
  while (td_now() < end) rbx_frame(rbx_leaf);
}

int main(int argc, char **argv) {
  rbx_loop(td_seconds(argc, argv, 1));
  return 0;
}
