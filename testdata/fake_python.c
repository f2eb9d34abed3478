/* fake_python: not Python, but it defines the symbols by which ehprof takes
 * a binary for a Python interpreter (_PyEval_EvalFrameDefault, _PyRuntime,
 * PyCode_Type) and no Py_Version, so ehprof takes the version from its file
 * name. The hostile names test runs a copy named python3.99999999999.
 * main -> _PyEval_EvalFrameDefault (spins for argv[1] seconds, default 2). */
#include <stdlib.h>

#include "td_common.h"

unsigned char _PyRuntime[4096] = {1};
unsigned char PyCode_Type[512] = {1};
volatile unsigned long fake_python_sink;

TD_FRAME unsigned long _PyEval_EvalFrameDefault(double seconds) {
  double end = td_now() + seconds;
  unsigned long x = _PyRuntime[0] + PyCode_Type[0];
  do {
    TD_SPIN(x, 100000UL);
  } while (td_now() < end);
  return x;
}

int main(int argc, char **argv) {
  fake_python_sink = _PyEval_EvalFrameDefault(argc > 1 ? strtod(argv[1], NULL) : 2);
  return 0;
}
