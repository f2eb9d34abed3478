// Kernel function symbols from /proc/kallsyms, for kernel stack frames.
#ifndef EHPROF_SYMBOLIZER_KALLSYMS_H_
#define EHPROF_SYMBOLIZER_KALLSYMS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace ehprof {

struct KernelSymbol {
  std::string name;
  std::string module;  // empty for the core kernel
  uint64_t start = 0;
};

class Kallsyms {
 public:
  // Without root (CAP_SYSLOG) or with kernel.kptr_restrict=2 the kernel
  // shows every address as 0; that is an error saying so, not an empty
  // table that would silently resolve nothing.
  static absl::StatusOr<Kallsyms> Load(const std::string& path = "/proc/kallsyms");
  // Parses kallsyms text; `origin` names it in messages.
  static absl::StatusOr<Kallsyms> Parse(std::string_view text,
                                        const std::string& origin = "kallsyms text");

  // The function whose range holds `addr`. kallsyms has no sizes, so a
  // function is taken to extend to the next listed symbol of any kind (data
  // symbols end it too, when the kernel lists them).
  std::optional<KernelSymbol> Find(uint64_t addr) const;

  // Number of distinct function addresses.
  size_t size() const { return function_count_; }
  // Heap held by the entries and names (sized exactly).
  uint64_t heap_bytes() const { return entries_.capacity() * sizeof(Entry) + names_.capacity(); }

 private:
  // 16 bytes: the agent keeps every kernel symbol (~120k) for its life.
  struct Entry {
    uint64_t start;
    uint32_t name_offset;  // into names_
    uint16_t name_size;
    // Index into modules_ (0 is the core kernel) << 1 | whether a function:
    // non-function symbols (data, rodata) are kept only to end the function
    // before them.
    uint16_t module_function;
    bool function() const { return module_function & 1; }
    uint16_t module() const { return module_function >> 1; }
  };
  static_assert(sizeof(Entry) == 16);

  Kallsyms() = default;

  std::vector<Entry> entries_;  // sorted by start, one per address
  std::string names_;
  std::vector<std::string> modules_;
  size_t function_count_ = 0;
};

}  // namespace ehprof

#endif  // EHPROF_SYMBOLIZER_KALLSYMS_H_
