// The line tables decoded by agent/python/line_table.h against CPython's
// own decoder: each installed interpreter compiles a few source files and
// prints, per code object, co_linetable, co_firstlineno and co_lines(); every
// instruction's line must come out the same. Plus hostile tables.
#include <unistd.h>

#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "agent/python/line_table.h"
#include "gtest/gtest.h"
#include "tests/test_support.h"

namespace ehprof {
namespace {

constexpr char kDump[] = R"PY(
import sys
def walk(co):
    yield co
    for c in co.co_consts:
        if hasattr(c, "co_code"):
            yield from walk(c)
for path in sys.argv[1:]:
    top = compile(open(path).read(), path, "exec")
    for co in walk(top):
        print("T", co.co_linetable.hex() or "-", co.co_firstlineno)
        for s, e, l in co.co_lines():
            print("L", s, e, -1 if l is None else l)
)PY";

class LineTables : public ::testing::TestWithParam<std::string> {};

TEST_P(LineTables, SameLinesAsCPythonsCoLines) {
  const std::string python = GetParam();
  if (access(python.c_str(), X_OK) != 0) {
    std::printf("SKIPPED: %s is not installed\n", python.c_str());
    GTEST_SKIP();
  }
  const bool pep657 = python.find("python3.10") == std::string::npos;
  const std::string script = ::testing::TempDir() + "/dump_lines." + std::to_string(getpid()) + ".py";
  FILE* f = std::fopen(script.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fputs(kDump, f);
  std::fclose(f);
  // Our test programs and a long stdlib module (long-form entries, no-line ranges).
  const std::string threading = python.substr(0, python.rfind("/bin/")) + "/lib/" +
                                python.substr(python.rfind('/') + 1) + "/threading.py";
  const std::string out = testing::ShellOutput(absl::StrCat(
      python, " ", script, " ", testing::SourcePath("testdata/python/shapes.py"), " ",
      testing::SourcePath("testdata/python/mix.py"), " ", threading));
  std::remove(script.c_str());
  std::istringstream in(out);
  std::string tag;
  std::vector<LineRange> ranges;
  size_t codes = 0, checked = 0;
  while (in >> tag) {
    if (tag == "T") {
      std::string hex;
      int32_t first;
      in >> hex >> first;
      std::string bytes = hex == "-" ? "" : absl::HexStringToBytes(hex);
      std::span<const uint8_t> table(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
      ranges = pep657 ? DecodePep657(table, first) : DecodePep626(table, first);
      ++codes;
    } else {
      uint32_t start, end;
      int32_t line;
      in >> start >> end >> line;
      for (uint32_t unit = start / 2; unit < end / 2; ++unit, ++checked) {
        ASSERT_EQ(LineAt(ranges, unit), line) << "code " << codes << " unit " << unit;
      }
    }
  }
  EXPECT_GE(codes, 100u);
  EXPECT_GE(checked, 3000u);
}

INSTANTIATE_TEST_SUITE_P(Interpreters, LineTables,
                         ::testing::Values("/root/.pyenv/versions/3.10.13/bin/python3.10",
                                           "/root/.pyenv/versions/3.11.7/bin/python3.11",
                                           "/root/.pyenv/versions/3.12.1/bin/python3.12",
                                           "/root/.pyenv/versions/3.13.0/bin/python3.13"),
                         [](const auto& info) {
                           std::string name = info.param.substr(info.param.rfind('/') + 1);
                           for (char& c : name) c = isalnum(static_cast<unsigned char>(c)) ? c : '_';
                           return name;
                         });

TEST(LineTables, HostileTablesEndWithoutHarm) {
  // Truncated varints, entries without a start bit, huge deltas.
  const std::vector<std::vector<uint8_t>> tables = {
      {0xf0}, {0xf0, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f}, {0x00, 0x01, 0x02},
      {0xe8, 0xff}, {0xff, 0xff, 0xff, 0xff}, std::vector<uint8_t>(4096, 0xf7)};
  for (const auto& t : tables) {
    auto a = DecodePep657(t, 1);
    auto b = DecodePep626(t, 1);
    for (const auto* r : {&a, &b}) {
      for (size_t i = 1; i < r->size(); ++i) EXPECT_LE((*r)[i - 1].end, (*r)[i].start + 0u);
    }
    (void)LineAt(a, 3);
    (void)LineAt(b, 3);
  }
}

}  // namespace
}  // namespace ehprof
