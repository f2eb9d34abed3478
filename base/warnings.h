// Warnings for the user, gathered the same way by every component: each
// distinct one once (a file that fails to load is named once, not once per
// process mapping it), taken by whoever reports them. Bounded: past
// `remember` distinct warnings nothing more is remembered or kept (a
// message naming a pid is distinct for every process; under -a the set
// would grow as long as processes start), only counted. Thread-safe: the
// symbolizer adds from its worker threads. Kept printable
// (base/printable_text.h): a newline, an escape sequence or a byte that is
// not UTF-8 in a name a user chose is kept as \xNN.
#ifndef EHPROF_BASE_WARNINGS_H_
#define EHPROF_BASE_WARNINGS_H_

#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "base/mutex.h"

namespace ehprof {

class Warnings {
 public:
  static constexpr size_t kDefaultRemember = 1000;
  explicit Warnings(size_t remember = kDefaultRemember) : remember_(remember) {}

  // Pending unless the same text was added before.
  void Add(std::string warning);
  // Pending unless a warning on `topic` was added before (the text may
  // differ: it names the first occurrence).
  void AddOnce(std::string_view topic, std::string warning);
  // Each of `warnings` as Add, in order.
  void AddAll(std::vector<std::string> warnings);
  // The pending warnings, oldest first; they are not pending any more.
  std::vector<std::string> Take();
  // How many were dropped past the bound since the last call.
  uint64_t TakeDropped();

 private:
  void AddKeyed(std::string key, std::string warning);

  const size_t remember_;
  Mutex mu_;
  std::set<std::string> seen_ ABSL_GUARDED_BY(mu_);  // "w:" texts and "t:" topics
  std::vector<std::string> pending_ ABSL_GUARDED_BY(mu_);
  uint64_t dropped_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace ehprof

#endif  // EHPROF_BASE_WARNINGS_H_
