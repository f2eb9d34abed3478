/* dlopen_main: dlopen()s libdlwork.so by absolute path (compile-time
 * EHPROF_DLWORK_DEFAULT_PATH, overridable with env EHPROF_DLWORK_PATH,
 * e.g. to load libdlwork.so.stripped), dlsym()s dlwork_entry and calls it:
 *   main -> dlwork_entry -> dlwork_inner.
 * With a second argument "deep" the call goes through call_deep, whose
 * frame holds 160 KiB (a parser's buffer, a deep recursion's worth): a
 * walk from the library up to main then needs more than 64 KiB of stack. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#include "td_common.h"

#ifndef EHPROF_DLWORK_DEFAULT_PATH
#error "EHPROF_DLWORK_DEFAULT_PATH must be defined"
#endif

typedef unsigned long (*dlwork_entry_fn)(double);

volatile unsigned long dlopen_sink;

static __attribute__((noinline)) unsigned long call_deep(dlwork_entry_fn entry, double secs) {
  volatile char buf[160 * 1024];
  buf[0] = 1;
  buf[sizeof(buf) - 1] = 1;
  unsigned long r = entry(secs);
  return r + buf[0] + buf[sizeof(buf) - 1]; /* the frame outlives the call */
}

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
  const int deep = argc > 2 && argv[2][0] == 'd';
  dlopen_sink = deep ? call_deep(entry, secs) : entry(secs);
  dlclose(h);
  return 0;
}
