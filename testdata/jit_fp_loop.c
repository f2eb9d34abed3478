/* A hostile program for the walk by frame pointer through anonymous
 * executable memory (bpf/walk.bpf.h; bpf/fp_fallback.bpf.h's
 * in_new_jit_code while the maps have not the page yet; the replay for
 * walks finished late): it spins in code it placed in a fresh RWX page, with rbp at a
 * fake frame whose saved rbp is itself and whose return address is that
 * page again. Every step of a walk by frame pointer leads back to where
 * it was; the walk must end (a frame that does not move up the stack, or
 * the depth limit), not loop.
 *   jit_fp_loop [SECONDS]   (x86-64) */
#include <string.h>
#include <sys/mman.h>

#include "td_common.h"

/* push %rbp; mov %rsi,%rbp; 1: dec %rdi; jnz 1b; pop %rbp; ret */
static const unsigned char kLoop[] = {0x55, 0x48, 0x89, 0xf5, 0x48, 0xff, 0xcf, 0x75, 0xfb, 0x5d, 0xc3};

typedef void (*loop_fn)(unsigned long iterations, void *fake_frame);

/* Built on x86-64 only (testdata/CMakeLists.txt). */
int main(int argc, char **argv) {
  double end = td_now() + td_seconds(argc, argv, 1);
  unsigned char *mem = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) return 1;
  memcpy(mem, kLoop, sizeof(kLoop));
  /* saved rbp, return address: the frame leads to itself. */
  static unsigned long fake[2] __attribute__((aligned(16)));
  fake[0] = (unsigned long)fake;
  fake[1] = (unsigned long)mem + 5;
  while (td_now() < end) ((loop_fn)mem)(20000000ul, fake);
  return 0;
}
