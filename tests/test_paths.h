// Temporary alias while tests migrate to test_support.h.
#include "tests/test_support.h"
