/* many_mappings: 3,000 extra executable mappings, then
 * main -> spin_outer -> spin_inner (busy).
 *
 * The first page of its own executable is mapped PROT_READ|PROT_EXEC
 * 3,000 times, a page apart (the gaps keep the kernel from merging them),
 * far from everything else: more executable mappings than a profiler's
 * per-process limit, all of the same file, none of them holding the code
 * that runs.  Prints "ready" once they are all in place.
 * argv[1]: seconds to spin (default 2); argv[2]: mappings (default 3000). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include "td_common.h"

#define INNER_ITERS 200000UL

volatile unsigned long many_sink;

TD_FRAME unsigned long spin_inner(unsigned long seed) {
  unsigned long x = seed | 1;
  TD_SPIN(x, INNER_ITERS);
  return x;
}

TD_FRAME unsigned long spin_outer(unsigned long seed) {
  return spin_inner(seed) + 1;
}

int main(int argc, char **argv) {
  double seconds = td_seconds(argc, argv, 1);
  long count = argc > 2 ? strtol(argv[2], NULL, 10) : 3000;
  int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    perror("many_mappings: /proc/self/exe");
    return 1;
  }
  const size_t page = (size_t)sysconf(_SC_PAGESIZE);
  /* Far above the usual mmap area's growth, below the stack. */
  char *base = (char *)0x300000000000UL;
  long mapped = 0;
  for (long i = 0; i < count; i++) {
    void *want = base + (size_t)i * 2 * page;
    void *p = mmap(want, page, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_FIXED_NOREPLACE, fd, 0);
    if (p == MAP_FAILED) {
      perror("many_mappings: mmap");
      return 1;
    }
    mapped++;
  }
  close(fd);
  printf("ready\n");
  fflush(stdout);
  double end = td_now() + seconds;
  unsigned long acc = 0, seed = (unsigned long)mapped;
  do {
    acc += spin_outer(seed++);
  } while (td_now() < end);
  many_sink = acc;
  return 0;
}
