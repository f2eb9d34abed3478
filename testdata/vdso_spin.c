/* vdso_spin: main -> vdso_spin_loop, calling clock_gettime (the vDSO's
 * __vdso_clock_gettime) back to back, with a SIGPROF handler (setitimer
 * ITIMER_PROF, 1 ms requested, firing on ticks) that runs
 * vdso_prof_handler -> vdso_handler_work for ~0.6 ms: most samples have
 * their leaf in the vDSO, and the handler's are on top of a signal frame
 * whose interrupted pc is in the vDSO. A walk out of the vDSO needs its
 * table, which has no file (tests/record_replay_priv_test.cc). */
#include <signal.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#include "td_common.h"

volatile unsigned long vdso_sink;

TD_FRAME unsigned long vdso_handler_work(unsigned long n) {
  unsigned long x = n | 1;
  TD_SPIN(x, n);
  return x;
}

TD_FRAME void vdso_prof_handler(int sig) { vdso_sink += vdso_handler_work(600000UL + (unsigned)sig); }

TD_FRAME unsigned long vdso_spin_loop(double seconds) {
  double end = td_now() + seconds;
  unsigned long calls = 0;
  struct timespec ts;
  do {
    for (int i = 0; i < 1000; i++) {
      clock_gettime(CLOCK_MONOTONIC, &ts);
      calls++;
    }
  } while ((double)ts.tv_sec + (double)ts.tv_nsec * 1e-9 < end);
  return calls;
}

int main(int argc, char **argv) {
  double secs = td_seconds(argc, argv, 1);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = vdso_prof_handler;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  struct itimerval it;
  memset(&it, 0, sizeof it);
  it.it_interval.tv_usec = 1000;
  it.it_value.tv_usec = 1000;
  if (sigaction(SIGPROF, &sa, NULL) != 0 || setitimer(ITIMER_PROF, &it, NULL) != 0) return 1;
  vdso_sink += vdso_spin_loop(secs);
  memset(&it, 0, sizeof it);
  setitimer(ITIMER_PROF, &it, NULL);
  return 0;
}
