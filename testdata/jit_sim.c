/* A minimal "JIT": machine code copied into anonymous executable memory,
 * announced in /tmp/perf-PID.map as perf expects, and called from C.
 * The generated function keeps a frame pointer (push rbp; mov rbp, rsp), as
 * JIT code typically does, so a profiler without CFI for it can step out of
 * it through rbp and continue with the C caller's CFI.
 *
 * Expected chain: jit_spin_loop (JIT) <- jit_caller <- main.
 * argv[1]: seconds to run (default 2). */
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "td_common.h"

typedef long (*spin_fn)(long);

/* push rbp; mov rbp,rsp; mov rax,rdi; loop: dec rax; jnz loop; pop rbp; ret */
static const unsigned char kCode[] = {0x55, 0x48, 0x89, 0xe5, 0x48, 0x89, 0xf8, 0x48,
                                      0xff, 0xc8, 0x75, 0xfb, 0x5d, 0xc3};

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
  char path[64];
  snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)getpid());
  FILE *f = fopen(path, "w");
  if (!f) return 1;
  fprintf(f, "%lx %zx jit_spin_loop\n", (unsigned long)mem, sizeof(kCode));
  fclose(f);
  long r = jit_caller((spin_fn)mem, seconds);
  return r == 0;
}
