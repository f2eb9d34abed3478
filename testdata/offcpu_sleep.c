/* offcpu_sleep: a loop that blocks in nanosleep 100 ms in sleep_a() and
 * 300 ms in sleep_b(), called main -> sleep_loop -> sleep_a/sleep_b, for
 * argv[1] seconds (default 2). Off-CPU time must split a:b as 1:3 and add
 * up to the loop's wall time, which it prints on stderr at the end. */
#include <errno.h>
#include <stdio.h>
#include <time.h>

#include "td_common.h"

volatile int offcpu_sink;

static void td_sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

TD_FRAME int sleep_a(int i) {
  td_sleep_ms(100);
  return i + 1;
}

TD_FRAME int sleep_b(int i) {
  td_sleep_ms(300);
  return i * 3 + 1;
}

TD_FRAME int sleep_loop(double secs) {
  double end = td_now() + secs;
  int acc = 0;
  do {
    acc += sleep_a(acc);
    acc ^= sleep_b(acc);
  } while (td_now() < end);
  return acc;
}

int main(int argc, char **argv) {
  /* A first block outside the loop: a profiler that learns of a new
   * process only when it first blocks (ehprof loads its unwind tables
   * then) walks that one block to the leaf only. */
  td_sleep_ms(200);
  double start = td_now();
  offcpu_sink = sleep_loop(td_seconds(argc, argv, 1));
  /* The loop's wall time, which its off-CPU time is checked against. */
  fprintf(stderr, "offcpu_sleep: %.6f s\n", td_now() - start);
  return 0;
}
