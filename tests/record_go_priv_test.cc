// Stripped Go (go build -ldflags='-s -w': no .symtab, DWARF, .eh_frame or
// .debug_frame): the walk goes by rows made from the pclntab's pcsp tables
// (unwind_tables/go_unwind_rows.h), the frames are named from .gopclntab, and
// the caller of a frameless leaf is kept (main.spinB under main.hotB, which
// a frame-pointer walk loses), and the names are judged by
// `go tool addr2line` on the unstripped twin at the same addresses. The
// program (testdata/gowork) is built here with every Go on the machine.
#include <map>
#include <sstream>
#include <string>

#include "gtest/gtest.h"
#include "tests/go_programs.h"
#include "tests/test_support.h"

namespace ehprof {
namespace {

using testing::RunEhprof;

struct GoFrame {
  uint64_t addr;
  std::string name;
};

// perf-script samples: each sample's frames in `binary` (inline lines left
// out: addr2line names the function holding the address), leaf first.
std::vector<std::vector<GoFrame>> SamplesIn(const std::string& text, const std::string& binary) {
  std::vector<std::vector<GoFrame>> out;
  std::istringstream in(text);
  std::string line;
  // By base name: the recording names the file by its canonical path.
  const std::string dso = binary.substr(binary.rfind('/')) + ")";
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    if (line[0] != '\t') {
      out.emplace_back();
      continue;
    }
    if (out.empty() || line.size() < dso.size() ||
        line.compare(line.size() - dso.size(), dso.size(), dso) != 0) {
      continue;
    }
    std::istringstream f(line);
    std::string addr;
    f >> addr;
    std::string name = line.substr(line.find(addr) + addr.size() + 1);
    name.resize(name.rfind(" ("));
    out.back().push_back({std::stoull(addr, nullptr, 16), name});
  }
  return out;
}

class RecordGo : public testing::RecordingTest {};

TEST_F(RecordGo, StrippedGoIsWalkedToGoexitAndNamedAsGoToolAddr2lineNamesItsTwin) {
  std::vector<std::string> errors;
  const std::vector<testing::GoBuild> builds = testing::BuildGowork(dir_, &errors);
  for (const std::string& e : errors) ADD_FAILURE() << e;
  for (const testing::GoBuild& b : builds) {
    SCOPED_TRACE(b.version);
    const std::string out = dir_ + "/" + b.version + ".txt";
    auto r = RunEhprof({"record", "-F", "499", "-q", "-o", out, "--", b.stripped, "3"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto samples = SamplesIn(testing::ReadFile(out), b.stripped);
    std::vector<uint64_t> addrs;
    for (const auto& s : samples) {
      for (const GoFrame& f : s) addrs.push_back(f.addr);
    }
    const std::vector<testing::GoAddr2line> want = testing::GoAddr2lineOf(b, addrs);
    ASSERT_EQ(want.size(), addrs.size());
    size_t in_go = 0, named = 0, to_bottom = 0, hot = 0, k = 0, in_spin = 0, spin_caller = 0;
    std::map<std::string, size_t> wrong;
    for (const auto& s : samples) {
      if (s.empty()) continue;
      ++in_go;
      bool all = true;
      for (const GoFrame& f : s) {
        if (f.name != want[k].function) {
          all = false;
          ++wrong[f.name + " vs " + want[k].function];
        }
        ++k;
      }
      named += all;
      const std::string& bottom = s.back().name;
      // Where Go's own traceback stops: a goroutine's goexit, the main
      // goroutine's runtime.main, a thread's mstart, and the switches to
      // the g0 stack (systemstack, mcall) whose frame-pointer chain ends.
      to_bottom += bottom == "runtime.goexit" || bottom == "runtime.main" ||
                   bottom == "runtime.mstart" || bottom == "runtime.rt0_go" ||
                   bottom == "runtime.systemstack" || bottom == "runtime.mcall";
      hot += s.front().name == "main.hotA" || s.front().name == "main.spinB";
      // spinB has no frame (Go gives small leaves none): its caller is
      // found only by its pcsp row, not by the frame-pointer chain.
      if (s.front().name == "main.spinB") {
        ++in_spin;
        spin_caller += s.size() > 1 && s[1].name == "main.hotB";
      }
    }
    ASSERT_GE(in_go, 200u) << "too few samples to judge:\n"
                           << testing::ReadFile(out).substr(0, 2000);
    EXPECT_GE(named * 100, in_go * 99)
        << named << " of " << in_go << " named as addr2line names them";
    for (const auto& [what, n] : wrong) ADD_FAILURE() << n << "x " << what;
    EXPECT_GE(to_bottom * 100, in_go * 97)
        << to_bottom << " of " << in_go << " reach the bottom of a Go stack";
    EXPECT_GE(hot * 100, in_go * 80) << "the hot leaves";
    EXPECT_GE(in_spin, 20u);
    EXPECT_GE(spin_caller * 100, in_spin * 99)
        << spin_caller << " of " << in_spin << " main.spinB samples under main.hotB";
    std::printf("%s: %zu samples in Go code, %zu (%.1f %%) named as go tool addr2line names "
                "them, "
                "%zu (%.1f %%) reaching the bottom of a Go stack, main.spinB under "
                "main.hotB in %zu of %zu\n",
                b.version.c_str(), in_go, named, 100.0 * named / in_go, to_bottom,
                100.0 * to_bottom / in_go, spin_caller, in_spin);
    const std::string key = b.version + "_";
    testing::PrintFigure(key + "samples", in_go);
    testing::PrintFigure(key + "named", named);
    testing::PrintFigure(key + "named_pct", 100.0 * named / in_go);
    testing::PrintFigure(key + "to_bottom_pct", 100.0 * to_bottom / in_go);
    testing::PrintFigure(key + "spin_samples", in_spin);
    testing::PrintFigure(key + "spin_under_hotb", spin_caller);
  }
}

}  // namespace
}  // namespace ehprof
