/* dlopen_main: dlopen()s libdlwork.so by absolute path (compile-time
 * EHPROF_DLWORK_DEFAULT_PATH, overridable with env EHPROF_DLWORK_PATH,
 * e.g. to load libdlwork.so.stripped), dlsym()s dlwork_entry and calls it:
 *   main -> dlwork_entry -> dlwork_inner. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#include "td_common.h"

#ifndef EHPROF_DLWORK_DEFAULT_PATH
#error "EHPROF_DLWORK_DEFAULT_PATH must be defined"
#endif

typedef unsigned long (*dlwork_entry_fn)(double);

volatile unsigned long dlopen_sink;

TD_FRAME unsigned long main_gap(double seconds) {
  double end = td_now() + seconds;
  unsigned long x = 1;
  while (td_now() < end) TD_SPIN(x, 1000);
  return x;
}

int main(int argc, char **argv) {
  double secs = td_seconds(argc, argv, 1);
  long times = argc > 2 ? strtol(argv[2], NULL, 10) : 1;
  double gap = argc > 3 ? strtod(argv[3], NULL) : 0;
  const char *path = getenv("EHPROF_DLWORK_PATH");
  if (path == NULL || path[0] == '\0') path = EHPROF_DLWORK_DEFAULT_PATH;
  for (long i = 0; i < times; i++) {
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) {
      fprintf(stderr, "dlopen_main: dlopen(%s): %s\n", path, dlerror());
      return 1;
    }
    dlwork_entry_fn entry = (dlwork_entry_fn)dlsym(h, "dlwork_entry");
    if (entry == NULL) {
      fprintf(stderr, "dlopen_main: dlsym(dlwork_entry): %s\n", dlerror());
      return 1;
    }
    dlopen_sink += entry(secs);
    dlclose(h);
    if (gap > 0) dlopen_sink += main_gap(gap);
  }
  return 0;
}
