/* A minimal "JIT": machine code copied into anonymous executable memory,
 * announced in /tmp/perf-PID.map as perf expects, and called from C.
 * The generated function keeps a frame pointer (push rbp; mov rbp, rsp; on
 * AArch64 its x29/x30 frame record), as JIT code typically does, so a
 * profiler without CFI for it can step out of it through the frame pointer
 * and continue with the C caller's CFI.
 *
 * Expected chain: jit_spin_loop (JIT) <- jit_caller <- main.
 * argv[1]: seconds to run (default 2). */
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "td_common.h"

typedef long (*spin_fn)(long);

#if defined(__aarch64__)
/* stp x29, x30, [sp, #-16]!; mov x29, sp; loop: subs x0, x0, #1; b.ne loop;
 * ldp x29, x30, [sp], #16; ret: the frame record AArch64 JITs keep. */
static const unsigned char kCode[] = {0xfd, 0x7b, 0xbf, 0xa9, 0xfd, 0x03, 0x00, 0x91,
                                      0x00, 0x04, 0x00, 0xf1, 0xe1, 0xff, 0xff, 0x54,
                                      0xfd, 0x7b, 0xc1, 0xa8, 0xc0, 0x03, 0x5f, 0xd6};
#else
/* push rbp; mov rbp,rsp; mov rax,rdi; loop: dec rax; jnz loop; pop rbp; ret */
static const unsigned char kCode[] = {0x55, 0x48, 0x89, 0xe5, 0x48, 0x89, 0xf8, 0x48,
                                      0xff, 0xc8, 0x75, 0xfb, 0x5d, 0xc3};
#endif

TD_FRAME long jit_caller(spin_fn fn, double seconds) {
  long total = 0;
  double start = td_now();
  while (td_now() - start < seconds) total += fn(2000000) + 1;
  return total;
}

int main(int argc, char **argv) {
  double seconds = td_seconds(argc, argv, 1);
  unsigned char *mem = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC,
                            MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) return 1;
  memcpy(mem, kCode, sizeof(kCode));
  __builtin___clear_cache((char *)mem, (char *)mem + sizeof(kCode));  /* AArch64's I-cache */
  char path[64];
  snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)getpid());
  FILE *f = fopen(path, "w");
  if (!f) return 1;
  fprintf(f, "%lx %zx jit_spin_loop\n", (unsigned long)mem, sizeof(kCode));
  fclose(f);
  long r = jit_caller((spin_fn)mem, seconds);
  return r == 0;
}
