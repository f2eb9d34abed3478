/* deep_recursion: main -> recurse(depth) -> recurse(depth-1) -> ...
 *   -> recurse(0) -> recurse_leaf (spins until the time is up).
 * argv[1] = seconds (default 2), argv[2] = depth (default 600); there are
 * depth+1 recurse frames. */
#include <stdlib.h>

#include "td_common.h"

#define LEAF_CHUNK 100000UL

volatile unsigned long recurse_sink;

TD_FRAME unsigned long recurse_leaf(double seconds) {
  double end = td_now() + seconds;
  unsigned long x = 5;
  do {
    TD_SPIN(x, LEAF_CHUNK);
  } while (td_now() < end);
  return x;
}

TD_FRAME unsigned long recurse(int depth, double seconds) {
  volatile unsigned char pad[24];
  pad[0] = (unsigned char)depth;
  pad[23] = (unsigned char)(depth >> 8);
  unsigned long r;
  if (depth <= 0)
    r = recurse_leaf(seconds);
  else
    r = recurse(depth - 1, seconds);
  return r + pad[0] + pad[23];
}

int main(int argc, char **argv) {
  double secs = td_seconds(argc, argv, 1);
  int depth = 600;
  if (argc > 2) depth = atoi(argv[2]);
  if (depth < 0) depth = 0;
  recurse_sink = recurse(depth, secs);
  return 0;
}
