/* syscall_nocfi [SECONDS] [rareg]: main -> nocfi_spin -> raw_getrandom
 * (assembly without CFI, syscall_nocfi_impl.S), most of the time in the
 * kernel's getrandom: the user leaf of those samples has neither CFI nor a
 * frame pointer. With "rareg", rareg_getrandom instead, whose CFI keeps its
 * return address in r8 around the syscall (as glibc's __vfork, rdi). */
#include "td_common.h"

#include <string.h>

long raw_getrandom(void *buf, unsigned long len);
long rareg_getrandom(void *buf, unsigned long len);

static char buf[1 << 16];
volatile long nocfi_sink;

__attribute__((noinline)) void nocfi_spin(double secs, long (*wrapper)(void *, unsigned long)) {
  const double end = td_now() + secs;
  while (td_now() < end) nocfi_sink += wrapper(buf, sizeof buf);
}

int main(int argc, char **argv) {
  nocfi_spin(td_seconds(argc, argv, 1), argc > 2 && strcmp(argv[2], "rareg") == 0 ? rareg_getrandom : raw_getrandom);
  return 0;
}
