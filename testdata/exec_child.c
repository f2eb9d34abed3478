/* exec_child: burns ~0.3 s in before_exec_work (main -> before_exec_work),
 * then execv()s plt_calls (path from the compile-time
 * EHPROF_TESTDATA_BINDIR, overridable with env EHPROF_EXEC_TARGET) with the
 * same seconds argument, so the same pid changes image. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "td_common.h"

#ifndef EHPROF_TESTDATA_BINDIR
#error "EHPROF_TESTDATA_BINDIR must be defined"
#endif

volatile unsigned long exec_sink;

TD_FRAME unsigned long before_exec_work(double seconds) {
  double end = td_now() + seconds;
  unsigned long x = 11;
  do {
    TD_SPIN(x, 100000UL);
  } while (td_now() < end);
  return x;
}

int main(int argc, char **argv) {
  const char *secs = argc > 1 ? argv[1] : "2";
  exec_sink = before_exec_work(0.3);
  const char *target = getenv("EHPROF_EXEC_TARGET");
  if (target == NULL || target[0] == '\0')
    target = EHPROF_TESTDATA_BINDIR "/plt_calls";
  char *const args[] = {(char *)"plt_calls", (char *)secs, NULL};
  execv(target, args);
  perror("exec_child: execv");
  return 1;
}
