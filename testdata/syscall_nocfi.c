/* syscall_nocfi [SECONDS]: main -> nocfi_spin -> raw_getrandom (assembly
 * without CFI, syscall_nocfi_impl.S), most of the time in the kernel's
 * getrandom: the user leaf of those samples has neither CFI nor a frame
 * pointer. */
#include "td_common.h"

long raw_getrandom(void *buf, unsigned long len);

static char buf[1 << 16];
volatile long nocfi_sink;

__attribute__((noinline)) void nocfi_spin(double secs) {
  const double end = td_now() + secs;
  while (td_now() < end) nocfi_sink += raw_getrandom(buf, sizeof buf);
}

int main(int argc, char **argv) {
  nocfi_spin(td_seconds(argc, argv, 1));
  return 0;
}
