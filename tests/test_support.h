// Where tests find the built programs and data (set by tests/CMakeLists.txt),
// and small helpers several tests share.
#ifndef EHPROF_TESTS_TEST_SUPPORT_H_
#define EHPROF_TESTS_TEST_SUPPORT_H_

#include <cstdint>
#include <optional>
#include <string>

namespace ehprof::testing {

// A program built from testdata/ (e.g. "realign", "realign.stripped").
std::string TestdataPath(const std::string& name);
// A file in the source tree (e.g. "testdata/seeds/...").
std::string SourcePath(const std::string& rel);
// build/ehprof.
std::string EhprofBinary();

struct SymbolRange {
  uint64_t addr = 0;
  uint64_t size = 0;
};
// A function symbol's address and size from .symtab (or .dynsym).
std::optional<SymbolRange> FindSymbol(const std::string& path, const std::string& name);

}  // namespace ehprof::testing

#endif  // EHPROF_TESTS_TEST_SUPPORT_H_
