/* huge_ehframe: main -> huge_outer -> huge_inner -> huge_leaf (busy).
 *
 * huge_outer and huge_inner are two of the 400,000 generated assembly
 * functions (gen_huge_ehframe.py), each with its own FDE: .eh_frame is
 * about 24 MB and the unwind table about 4.4 million rows.  The chain's
 * links sit a third and two thirds of the way into that table, so a walk
 * only reaches main through rows found deep inside it. */
#include "td_common.h"

#define LEAF_ITERS 200000UL

volatile unsigned long huge_sink;

/* In the generated assembly: they pass n on in %rdi and return %rax. */
unsigned long huge_outer(unsigned long n);
unsigned long huge_inner(unsigned long n);

TD_FRAME unsigned long huge_leaf(unsigned long n) {
  unsigned long x = n | 1;
  TD_SPIN(x, LEAF_ITERS);
  return x;
}

int main(int argc, char **argv) {
  double end = td_now() + td_seconds(argc, argv, 1);
  unsigned long acc = 0, seed = 7;
  do {
    acc += huge_outer(seed++);
  } while (td_now() < end);
  huge_sink = acc;
  return 0;
}
