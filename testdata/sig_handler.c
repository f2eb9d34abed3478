/* sig_handler: main -> sig_main_loop -> sig_main_work (busy), with a
 * SIGPROF handler (setitimer ITIMER_PROF, 1 ms requested) that runs
 * sig_prof_handler -> sig_handler_outer -> sig_handler_work (~0.8 ms of
 * spinning per signal), i.e. on top of the kernel's signal frame whose
 * return address is __restore_rt in libc.
 *
 * Note: the kernel delivers ITIMER_PROF at scheduler-tick granularity
 * (4 ms with HZ=250), so the handler burns ~0.8 ms rather than ~0.2 ms to
 * get roughly 15-25% of the CPU time inside the handler. */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>

#include "td_common.h"

/* Iterations of TD_SPIN in the handler: ~1.1 ns each on a ~3 GHz x86-64,
 * so ~0.8 ms per signal. */
#define HANDLER_ITERS 720000UL
#define MAIN_CHUNK 100000UL

volatile unsigned long sig_sink;
volatile sig_atomic_t sig_count;

TD_FRAME unsigned long sig_handler_work(unsigned long n) {
  unsigned long x = n | 1;
  TD_SPIN(x, n);
  return x;
}

TD_FRAME unsigned long sig_handler_outer(int sig) {
  unsigned long r = sig_handler_work(HANDLER_ITERS + (unsigned)sig);
  sig_sink += r;
  return r;
}

TD_FRAME void sig_prof_handler(int sig) {
  sig_handler_outer(sig);
  sig_count = sig_count + 1;
}

TD_FRAME unsigned long sig_main_work(unsigned long n) {
  unsigned long x = n | 3;
  TD_SPIN(x, n);
  return x;
}

TD_FRAME unsigned long sig_main_loop(double seconds) {
  double end = td_now() + seconds;
  unsigned long acc = 0;
  do {
    acc += sig_main_work(MAIN_CHUNK);
  } while (td_now() < end);
  return acc;
}

int main(int argc, char **argv) {
  double secs = td_seconds(argc, argv, 1);

  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = sig_prof_handler;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  if (sigaction(SIGPROF, &sa, NULL) != 0) {
    perror("sigaction");
    return 1;
  }
  struct itimerval it;
  memset(&it, 0, sizeof it);
  it.it_interval.tv_usec = 1000;
  it.it_value.tv_usec = 1000;
  if (setitimer(ITIMER_PROF, &it, NULL) != 0) {
    perror("setitimer");
    return 1;
  }

  sig_sink += sig_main_loop(secs);

  memset(&it, 0, sizeof it);
  setitimer(ITIMER_PROF, &it, NULL);
  if (getenv("EHPROF_TESTDATA_VERBOSE"))
    fprintf(stderr, "sig_handler: %d signals handled\n", (int)sig_count);
  return 0;
}
