#include "base/guarded.h"

#include <atomic>
#include <cstdio>
#include <exception>
#include <string>

#include "base/printable_text.h"
#include "base/warnings.h"

namespace ehprof {
namespace {

std::atomic<uint64_t> g_caught{0};

// Which places have said theirs (bounded by the number of call sites).
Warnings& Said() {
  static Warnings* said = new Warnings();  // never destroyed: threads may still report at exit
  return *said;
}

absl::Status Caught(std::string_view where, std::string_view what_next, std::string_view what) noexcept {
  try {
    g_caught.fetch_add(1, std::memory_order_relaxed);
    // Warnings makes the line printable: what() may quote a user's bytes.
    const std::string error = std::string(where) + ": " + std::string(what);
    Said().AddOnce(where, "ehprof: internal error in " + error + " (" + std::string(what_next) + ")");
    for (const std::string& line : Said().Take()) std::fprintf(stderr, "%s\n", line.c_str());
    return absl::InternalError(PrintableText(error));
  } catch (...) {
    // Out of memory while saying it: the count is all there is.
    return absl::Status(absl::StatusCode::kInternal, {});  // allocates nothing
  }
}

}  // namespace

absl::Status Guarded(std::string_view where, std::string_view what_next,
                     absl::FunctionRef<absl::Status()> body) noexcept {
  try {
    return body();
  } catch (const std::exception& e) {
    return Caught(where, what_next, e.what());
  } catch (...) {
    return Caught(where, what_next, "an exception that is not a std::exception");
  }
}

uint64_t GuardedExceptions() { return g_caught.load(std::memory_order_relaxed); }

}  // namespace ehprof
