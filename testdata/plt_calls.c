/* plt_calls: main -> plt_outer -> plt_inner -> qsort (libc, via PLT)
 *            -> plt_compare (callback in this program).
 * plt_inner also calls memset/strlen through the PLT (built with
 * -fno-builtin so the compiler does not expand them inline). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "td_common.h"

#define N_ELEMS 64

volatile unsigned long plt_sink;

TD_FRAME int plt_compare(const void *a, const void *b) {
  int x = *(const int *)a, y = *(const int *)b;
  /* A little extra work so a good share of samples land in the callback
   * (i.e. above qsort in libc), not only in libc's merge code. */
  unsigned long w = (unsigned long)(x ^ y) | 1;
  TD_SPIN(w, 6);
  __asm__ volatile("" : : "r"(w) : "memory");
  return (x > y) - (x < y);
}

TD_FRAME unsigned long plt_inner(unsigned seed) {
  int arr[N_ELEMS];
  char buf[256];
  unsigned long acc = 0;
  for (int it = 0; it < 50; it++) {
    for (int i = 0; i < N_ELEMS; i++) {
      seed = seed * 1103515245u + 12345u;
      arr[i] = (int)(seed >> 8);
    }
    qsort(arr, N_ELEMS, sizeof(int), plt_compare);
    memset(buf, 'a' + it % 26, sizeof buf - 1);
    buf[sizeof buf - 1 - (it & 7)] = '\0';
    acc += strlen(buf) + (unsigned long)arr[0];
    __asm__ volatile("" ::: "memory");
  }
  return acc;
}

TD_FRAME unsigned long plt_outer(double seconds) {
  double end = td_now() + seconds;
  unsigned long acc = 0;
  unsigned seed = 1;
  do {
    acc += plt_inner(seed++);
  } while (td_now() < end);
  return acc;
}

int main(int argc, char **argv) {
  double secs = td_seconds(argc, argv, 1);
  plt_sink = plt_outer(secs);
  return 0;
}
