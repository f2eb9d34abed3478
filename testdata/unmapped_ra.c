/* unmapped_ra [SECONDS] [fp]: spins in a leaf whose caller's return address,
 * by its CFI, is 0x1000, an address no process maps (as a crafted or
 * garbage stack has it): every sample's walk stops at "pc outside known
 * mappings" at once. With "fp", in code without CFI whose frame pointer
 * leads to 0x1000 ("frame pointer leads outside the mappings"). A hostile
 * process's ways to ask for a stack copy and a read of its maps with every
 * sample (tests/record_deferred_priv_test.cc). */
#include <string.h>
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

TD_FRAME void unmapped_fp_check(void) {
  unsigned long x = 1;
  TD_SPIN(x, 100000);
  unmapped_sink = x;
  if (td_now() >= unmapped_end) _exit(0);
}

/* A loop without .cfi directives (no FDE covers it), its frame pointer
 * set by main. */
__asm__(".text\n"
        ".globl unmapped_fp_spin\n"
        ".type unmapped_fp_spin, @function\n"
        "unmapped_fp_spin:\n"
        "1: call unmapped_fp_check\n"
        "  jmp 1b\n"
        ".size unmapped_fp_spin, .-unmapped_fp_spin\n");

int main(int argc, char **argv) {
  unmapped_end = td_now() + td_seconds(argc, argv, 1);
  if (argc > 2 && strcmp(argv[2], "fp") == 0) {
    /* A frame record {saved rbp 0, return address 0x1000} at rbp; rsp
     * stays 16-byte aligned for the calls. */
    __asm__ volatile("push $0x1000\n\tpush $0\n\tmov %%rsp, %%rbp\n\tjmp unmapped_fp_spin" ::: "memory");
  }
  /* A call whose return address is 0x1000: unmapped_spin never returns. */
  __asm__ volatile("push $0x1000\n\tjmp unmapped_spin" ::: "memory");
  return 0;
}
