/* churn_load RATE SECONDS CHILD LIB [BUSY_US]: starts RATE short-lived
 * processes a second for SECONDS. In turn each child
 *   - execs CHILD (churn_child.stripped) with BUSY_US,
 *   - dlopens LIB (libdlwork.so) and runs dlwork_entry for BUSY_US,
 *   - or stays a copy of this program: load_child_spin for BUSY_US;
 * then exits. The parent reaps them as it goes and at the end prints
 * "started N failed M seconds S". Forks are paced against absolute times,
 * so a slow fork does not lower the rate that follows. */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "td_common.h"

volatile unsigned long load_sink;

TD_FRAME unsigned long load_child_spin(double seconds) {
  double end = td_now() + seconds;
  unsigned long x = 1;
  do {
    TD_SPIN(x, 2000);
  } while (td_now() < end);
  return x;
}

static void run_child(unsigned long i, const char *child, const char *lib, const char *busy_us) {
  double seconds = strtod(busy_us, NULL) * 1e-6;
  switch (i % 3) {
    case 0:
      execl(child, child, busy_us, (char *)NULL);
      _exit(126);
    case 1: {
      void *h = dlopen(lib, RTLD_NOW);
      if (!h) _exit(125);
      unsigned long (*entry)(double) = (unsigned long (*)(double))dlsym(h, "dlwork_entry");
      if (!entry) _exit(124);
      load_sink = entry(seconds);
      _exit(0);
    }
    default:
      load_sink = load_child_spin(seconds);
      _exit(0);
  }
}

int main(int argc, char **argv) {
  if (argc < 5) {
    fprintf(stderr, "usage: churn_load RATE SECONDS CHILD LIB [BUSY_US]\n");
    return 2;
  }
  const double rate = strtod(argv[1], NULL), seconds = strtod(argv[2], NULL);
  const char *busy_us = argc > 5 ? argv[5] : "500";
  const double start = td_now();
  unsigned long started = 0, failed = 0;
  for (unsigned long i = 0; i < (unsigned long)(rate * seconds); ++i) {
    const double due = start + i / rate;
    double now = td_now();
    if (due > now) {
      struct timespec ts = {(time_t)(due - now), (long)((due - now - (time_t)(due - now)) * 1e9)};
      nanosleep(&ts, NULL);
    }
    pid_t pid = fork();
    if (pid == 0) run_child(i, argv[3], argv[4], busy_us);
    if (pid < 0) {
      ++failed;
    } else {
      ++started;
    }
    int status;
    while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
      if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) ++failed;
    }
  }
  int status;
  pid_t pid;
  while ((pid = wait(&status)) > 0 || errno == EINTR) {
    if (pid > 0 && (!WIFEXITED(status) || WEXITSTATUS(status) != 0)) ++failed;
  }
  printf("started %lu failed %lu seconds %.2f\n", started, failed, td_now() - start);
  return failed ? 1 : 0;
}
