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

int main(int argc, char **argv) {
  double secs = td_seconds(argc, argv, 1);
  const char *path = getenv("EHPROF_DLWORK_PATH");
  if (path == NULL || path[0] == '\0') path = EHPROF_DLWORK_DEFAULT_PATH;
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
  dlopen_sink = entry(secs);
  dlclose(h);
  return 0;
}
