/* init_call: a function called from the program's .init section, which
 * has no CFI (as libcrypto's .init calls OPENSSL_cpuid_setup): init_spin
 * spins there for a second before main runs. x86-64 only.
 *
 * Expected chain: init_spin <- _init (.init: crti.o, this call, crtn.o)
 * <- the C library's or ld.so's caller of DT_INIT <- the bottom. */
#include "td_common.h"

volatile unsigned long init_sink;

TD_FRAME void init_spin(void) {
  const double end = td_now() + 1.0;
  unsigned long x = init_sink;
  while (td_now() < end) TD_SPIN(x, 100000);
  init_sink = x;
}

/* Placed between crti.o's prologue and crtn.o's epilogue of _init. */
__asm__(".section .init, \"ax\", @progbits\n"
        "\tcall init_spin\n"
        "\t.text\n");

int main(void) { return init_sink == 1; }
