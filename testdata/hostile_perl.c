/* hostile_perl VARIANT SECONDS: a process of an unprivileged user that
 * ehprof takes for Perl: libperl-hostile.so's lying contexts and
 * objects (tests/hostile_perl_priv_test.cc), under main -> hostile_main_frame. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "td_common.h"

uint64_t hostile_perl_run(int variant, int seconds);

TD_FRAME uint64_t hostile_main_frame(int variant, int seconds) { return hostile_perl_run(variant, seconds) + 1; }

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: hostile_perl VARIANT SECONDS\n");
    return 2;
  }
  printf("%lu\n", (unsigned long)hostile_main_frame(atoi(argv[1]), atoi(argv[2])));
  return 0;
}
