// Go programs for the tests, built at test time from testdata/gowork with
// every Go toolchain on the machine (Debian's golang-go, which
// scripts/install_deps.sh installs, and /usr/local/go when present): the
// pclntab layouts differ between Go 1.18-1.19 and 1.20+.
#ifndef EHPROF_TESTS_GO_PROGRAMS_H_
#define EHPROF_TESTS_GO_PROGRAMS_H_

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace ehprof::testing {

struct GoBuild {
  std::string go;        // the toolchain's go command
  std::string version;   // "go1.19.8"
  std::string binary;    // unstripped
  std::string stripped;  // -ldflags='-s -w': no .symtab, DWARF or .debug_frame
};

// One build of testdata/gowork per distinct toolchain, into `dir`; a build
// that fails is a test failure (reported by the caller through `errors`).
std::vector<GoBuild> BuildGowork(const std::string& dir, std::vector<std::string>* errors);

// `go tool addr2line` of the unstripped twin for each address: the
// function and "file:line", as the Go toolchain names them.
struct GoAddr2line {
  std::string function, position;
};
std::vector<GoAddr2line> GoAddr2lineOf(const GoBuild& b, const std::vector<uint64_t>& addrs);

// A test over builds_: testdata/gowork built by every toolchain into a
// directory of its own (named after `name` and the pid), removed after.
class GoBuildsTest : public ::testing::Test {
 protected:
  explicit GoBuildsTest(std::string name) : name_(std::move(name)) {}
  void SetUp() override;
  void TearDown() override;
  std::string dir_;
  std::vector<GoBuild> builds_;

 private:
  std::string name_;
};

}  // namespace ehprof::testing

#endif  // EHPROF_TESTS_GO_PROGRAMS_H_
