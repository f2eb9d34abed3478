// The top of every thread ehprof starts (and of main, and of each item a
// long-running loop handles): an exception that escapes is a bug or an
// input nobody foresaw, and left alone it would reach std::terminate and
// take the root agent down for every process on the host, again after
// each restart while the input is still there. Guarded catches it, says
// once per place what it was, and turns it into an error the caller
// handles like any other: a worker drops that one item and goes on with
// the next, main exits 1.
#ifndef EHPROF_BASE_GUARDED_H_
#define EHPROF_BASE_GUARDED_H_

#include <cstdint>
#include <string_view>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"

namespace ehprof {

// body's status; when an exception leaves body, an internal error naming
// `where` and the exception. The first exception caught in each `where`
// is printed on stderr as "ehprof: internal error in WHERE: WHAT (WHAT
// NEXT)", its text made printable; later ones are only counted.
absl::Status Guarded(std::string_view where, std::string_view what_next,
                     absl::FunctionRef<absl::Status()> body) noexcept;

// Exceptions Guarded has caught in this process (the metrics say it).
uint64_t GuardedExceptions();

}  // namespace ehprof

#endif  // EHPROF_BASE_GUARDED_H_
