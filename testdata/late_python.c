/* late_python: a process that runs no Python when it starts and does
 * later, as an embedder or a plugin host does: native code for the first
 * half of its seconds (native_spin), then it dlopen()s Debian 12's
 * libpython3.11 (by soname, or env EHPROF_LIBPYTHON), starts it and runs
 * Python code (late_hot) for the second half. Its first looks find no
 * interpreter; the one mapped later must still be found.
 *   main -> native_spin;  main -> ... libpython ... late_hot */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#include "td_common.h"

volatile unsigned long late_sink;

TD_FRAME unsigned long native_spin(double secs) {
  unsigned long x = 1;
  const double end = td_now() + secs;
  while (td_now() < end) TD_SPIN(x, 100000);
  return x;
}

int main(int argc, char **argv) {
  const double secs = td_seconds(argc, argv, 1);
  late_sink = native_spin(secs / 2);
  const char *lib = getenv("EHPROF_LIBPYTHON");
  void *h = dlopen(lib && lib[0] ? lib : "libpython3.11.so.1.0", RTLD_NOW | RTLD_GLOBAL);
  if (h == NULL) {
    fprintf(stderr, "late_python: dlopen: %s\n", dlerror());
    return 1;
  }
  void (*init)(void) = (void (*)(void))dlsym(h, "Py_Initialize");
  int (*run)(const char *) = (int (*)(const char *))dlsym(h, "PyRun_SimpleString");
  if (init == NULL || run == NULL) {
    fprintf(stderr, "late_python: no Py_Initialize or PyRun_SimpleString\n");
    return 1;
  }
  init();
  char code[512];
  snprintf(code, sizeof(code),
           "import time\n"
           "def late_hot(end):\n"
           "    s = 0\n"
           "    while time.monotonic() < end:\n"
           "        for i in range(1000): s += i %% 7  # loop late_hot\n"
           "    return s\n"
           "late_hot(time.monotonic() + %f)\n",
           secs / 2);
  return run(code) == 0 ? 0 : 1;
}
