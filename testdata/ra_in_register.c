/* ra_in_register [SECONDS]: main -> rareg_spin -> rareg_getrandom
 * (assembly, ra_in_register_impl.S), most of the time in the kernel's
 * getrandom, the wrapper's return address in r8 by its CFI. */
#include "td_common.h"

long rareg_getrandom(void *buf, unsigned long len);

static char buf[1 << 16];
volatile long rareg_sink;

__attribute__((noinline)) void rareg_spin(double secs) {
  const double end = td_now() + secs;
  while (td_now() < end) rareg_sink += rareg_getrandom(buf, sizeof buf);
}

int main(int argc, char **argv) {
  rareg_spin(td_seconds(argc, argv, 1));
  return 0;
}
