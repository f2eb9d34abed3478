/* garbage_stack: a process whose stack is hostile from its first moments
 * (tests/record_deferred_priv_test.cc). main fills 64 MiB with words
 * that look like return addresses into its own code, stack addresses and
 * noise, moves its stack pointer near the top of it and spins there in a
 * leaf whose CFI, followed, reads garbage as caller frames: the deferred
 * walk user space finishes from the copy must end, bounded, however the
 * words chain. Exits after argv[1] seconds (default 2). */
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "td_common.h"

#define GARBAGE_BYTES (64UL << 20)

static double garbage_end;
volatile unsigned long garbage_sink;

TD_FRAME void garbage_spin(void) {
  unsigned long x = 1;
  do {
    TD_SPIN(x, 100000);
    garbage_sink = x;
  } while (td_now() < garbage_end);
  _exit(0);
}

int main(int argc, char **argv) {
  garbage_end = td_now() + td_seconds(argc, argv, 1);
  uint64_t *words = malloc(GARBAGE_BYTES);
  if (!words) return 1;
  const size_t n = GARBAGE_BYTES / sizeof(uint64_t);
  uint64_t seed = 0x9e3779b97f4a7c15ULL;
  for (size_t i = 0; i < n; i++) {
    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    switch (seed >> 62) {
      case 0: words[i] = (uint64_t)(uintptr_t)&main + (seed >> 40) % 4096; break;
      case 1: words[i] = (uint64_t)(uintptr_t)&words[(seed >> 20) % n]; break;
      case 2: words[i] = (uint64_t)(uintptr_t)&garbage_spin + (seed >> 40) % 256; break;
      default: words[i] = seed; break;
    }
  }
  uint64_t *top = &words[n - 513]; /* as after a call: 16n + 8 */
  /* The spin never returns: its frame sits on the garbage. */
  __asm__ volatile("mov %0, %%rsp\n\tjmp *%1" : : "r"(top), "r"(&garbage_spin) : "memory");
  return 0;
}
