#include "symbolizer/debuginfod_client.h"

#include <cstdlib>
#include <string>

namespace ehprof {

void BoundDebuginfodTimeout() {
  // overwrite = 0: an explicit value (a longer timeout for a slow but
  // working server, retries on a flaky network) is the user's decision.
  // Checked first so that a set variable costs no setenv at all.
  if (std::getenv("DEBUGINFOD_TIMEOUT") == nullptr) {
    setenv("DEBUGINFOD_TIMEOUT", std::to_string(kDebuginfodTimeoutSeconds).c_str(), 0);
  }
  if (std::getenv("DEBUGINFOD_RETRY_LIMIT") == nullptr) {
    setenv("DEBUGINFOD_RETRY_LIMIT", std::to_string(kDebuginfodRetryLimit).c_str(), 0);
  }
}

}  // namespace ehprof
