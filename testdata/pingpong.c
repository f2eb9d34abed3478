/* pingpong: two threads pass a byte back and forth over two pipes for
 * argv[1] seconds (default 2), so every round trip is two blocks and two
 * wake-ups: a context-switch-heavy load for measuring what off-CPU
 * profiling costs. Prints "pingpong: N round trips/s" on stdout. */
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

#include "td_common.h"

static int to_b[2], to_a[2];

TD_FRAME void *pong(void *arg) {
  char c;
  (void)arg;
  while (read(to_b[0], &c, 1) == 1) {
    if (write(to_a[1], &c, 1) != 1) break;
  }
  return NULL;
}

TD_FRAME unsigned long ping(double secs) {
  const double end = td_now() + secs;
  unsigned long trips = 0;
  char c = 'x';
  do {
    for (int i = 0; i < 1000; i++) {
      if (write(to_b[1], &c, 1) != 1 || read(to_a[0], &c, 1) != 1) return trips;
      trips++;
    }
  } while (td_now() < end);
  return trips;
}

int main(int argc, char **argv) {
  const double secs = td_seconds(argc, argv, 1);
  pthread_t b;
  if (pipe(to_b) != 0 || pipe(to_a) != 0 || pthread_create(&b, NULL, pong, NULL) != 0) return 1;
  const double start = td_now();
  const unsigned long trips = ping(secs);
  const double took = td_now() - start;
  close(to_b[1]);
  pthread_join(b, NULL);
  printf("pingpong: %.0f round trips/s\n", trips / took);
  return 0;
}
