/* exec_big N [MIB]: touches MIB (default 256) MiB of memory, then execs
 * itself with N - 1 until N is 0. Each exec tears the big address space
 * down inside begin_new_exec (exit_mmap), after the task already has its
 * new, empty mm and still the old program's registers: samples there have
 * no user stack left to read. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv) {
  const int n = argc > 1 ? atoi(argv[1]) : 0;
  const size_t mib = argc > 2 ? (size_t)atoi(argv[2]) : 256;
  char *p = malloc(mib << 20);
  if (p == NULL) return 1;
  memset(p, 1, mib << 20);
  if (n <= 0) return p[mib] == 1 ? 0 : 2;
  char count[16], size[16];
  snprintf(count, sizeof count, "%d", n - 1);
  snprintf(size, sizeof size, "%zu", mib);
  execl("/proc/self/exe", argv[0], count, size, (char *)NULL);
  return 3;
}
