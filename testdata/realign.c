/* realign: main -> realign_frame -> realign_leaf (busy).
 *
 * realign_frame has force_align_arg_pointer and a 64-byte aligned local
 * array, and passes arguments on the stack to realign_leaf (8 arguments).
 * The outgoing stack arguments make GCC realign the stack through a DRAP
 * register (r10) instead of a plain rbp frame:
 *     lea 0x8(%rsp),%r10; and $-64,%rsp; push -0x8(%r10);
 *     push %rbp; mov %rsp,%rbp; push %r10
 * and describe the CFA for most of the body with
 *     DW_CFA_def_cfa_expression (DW_OP_breg6 (rbp): -8; DW_OP_deref)
 * plus DW_CFA_expression for rbp (DW_OP_breg6 (rbp): 0).  Around the
 * prologue/epilogue the CFA is r10+0.  (readelf --debug-dump=frames-interp
 * shows "exp" in the CFA column.)  Without the stack arguments GCC 12 only
 * emits an ordinary rbp-based CFA (rbp+16). */
#include "td_common.h"

#define N_SLOTS 16
#define LEAF_ITERS 200000UL

volatile unsigned long realign_sink;

TD_FRAME unsigned long realign_leaf(unsigned long *slots, int n, long a2,
                                    long a3, long a4, long a5, long s6,
                                    long s7) {
  unsigned long x = slots[0] | 1;
  TD_SPIN(x, LEAF_ITERS);
  for (int i = 0; i < n; i++) slots[i] ^= x;
  return x + slots[n - 1] + (unsigned long)(a2 ^ a3 ^ a4 ^ a5 ^ s6 ^ s7);
}

TD_FRAME __attribute__((force_align_arg_pointer)) unsigned long
realign_frame(unsigned long seed) {
  unsigned long slots[N_SLOTS] __attribute__((aligned(64)));
  for (int i = 0; i < N_SLOTS; i++) slots[i] = seed + (unsigned long)i;
  __asm__ volatile("" : : "r"(slots) : "memory");
  /* Arguments 7 and 8 go on the stack: forces the DRAP/CFA-expression
   * form of stack realignment. */
  unsigned long r = realign_leaf(slots, N_SLOTS, 2, 3, 4, 5, (long)seed,
                                 (long)(seed * 3));
  return r + slots[3];
}

int main(int argc, char **argv) {
  double end = td_now() + td_seconds(argc, argv, 1);
  unsigned long acc = 0, seed = 7;
  do {
    acc += realign_frame(seed++);
  } while (td_now() < end);
  realign_sink = acc;
  return 0;
}
