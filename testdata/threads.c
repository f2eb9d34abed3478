/* threads: main starts two pthreads:
 *   thread_a_outer -> thread_a_work
 *   thread_b_outer -> thread_b_work
 * (both started by libc's start_thread/clone3) and joins them. */
#include <pthread.h>
#include <stdio.h>

#include "td_common.h"

volatile unsigned long thread_sink_a, thread_sink_b;

TD_FRAME unsigned long thread_a_work(unsigned long n) {
  unsigned long x = n | 1;
  TD_SPIN(x, n);
  return x;
}

TD_FRAME unsigned long thread_b_work(unsigned long n) {
  /* Deliberately different from thread_a_work (no code folding). */
  unsigned long x = n ^ 0x5555;
  TD_SPIN(x, n);
  x ^= x >> 17;
  TD_SPIN(x, 16);
  return x;
}

TD_FRAME void *thread_a_outer(void *arg) {
  double end = td_now() + *(const double *)arg;
  unsigned long acc = 0;
  do {
    acc += thread_a_work(100000);
  } while (td_now() < end);
  thread_sink_a = acc;
  return NULL;
}

TD_FRAME void *thread_b_outer(void *arg) {
  double end = td_now() + *(const double *)arg;
  unsigned long acc = 0;
  do {
    acc += thread_b_work(120000);
  } while (td_now() < end);
  thread_sink_b = acc;
  return NULL;
}

int main(int argc, char **argv) {
  double secs = td_seconds(argc, argv, 1);
  pthread_t a, b;
  if (pthread_create(&a, NULL, thread_a_outer, &secs) != 0 ||
      pthread_create(&b, NULL, thread_b_outer, &secs) != 0) {
    fprintf(stderr, "threads: pthread_create failed\n");
    return 1;
  }
  pthread_join(a, NULL);
  pthread_join(b, NULL);
  return 0;
}
