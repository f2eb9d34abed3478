// The .gopclntab reader against the Go toolchain's own `go tool addr2line`
// on the unstripped twin: a program from testdata/gowork built here with
// every Go on the machine (Go 1.19's and 1.20+'s layouts), its stripped
// build read. Also the inline tree (mixA inlined into hotA), the table
// found without section headers, by the pcHeader's magic, and the unwind
// rows made from its pcsp tables against the .debug_frame Go's linker
// writes into the unstripped twin from the same tables.
#include "elf/go_pclntab.h"

#include <elf.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

#include "gtest/gtest.h"
#include "elf/go_pclntab_finder.h"
#include "tests/go_programs.h"
#include "tests/test_support.h"
#include "elf/elf_file.h"
#include "unwind_tables/table_builder.h"

namespace ehprof {
namespace {

struct GoFunction {
  uint64_t addr, size;
  std::string name;
};

// Text symbols with sizes, from the unstripped twin (`go tool nm -size`).
std::vector<GoFunction> TextSymbols(const testing::GoBuild& b) {
  std::istringstream in(
      testing::ShellOutput(b.go + " tool nm -size -sort address '" + b.binary + "'"));
  std::vector<GoFunction> out;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream f(line);
    std::string addr, kind, name;
    uint64_t size = 0;
    if (!(f >> addr >> size >> kind >> name) || (kind != "T" && kind != "t") || size == 0) {
      continue;
    }
    out.push_back({std::stoull(addr, nullptr, 16), size, name});
  }
  return out;
}

class GoPclntabTest : public testing::GoBuildsTest {
 protected:
  GoPclntabTest() : GoBuildsTest("go_pclntab") {}
};

TEST_F(GoPclntabTest, NamesEveryPcAsGoToolAddr2lineDoesOnTheUnstrippedTwin) {
  for (const testing::GoBuild& b : builds_) {
    SCOPED_TRACE(b.version);
    auto elf = ElfFile::Open(b.stripped);
    ASSERT_TRUE(elf.ok()) << elf.status();
    auto table = FindGoPclntab(*elf);
    ASSERT_TRUE(table.ok()) << table.status();
    ASSERT_TRUE(table->has_value()) << "no pclntab found in " << b.stripped;
    EXPECT_EQ((*table)->go120(),
              b.version.rfind("go1.19", 0) != 0 && b.version.rfind("go1.18", 0) != 0);
    std::vector<uint64_t> pcs;
    for (const GoFunction& f : TextSymbols(b)) {
      pcs.push_back(f.addr);
      pcs.push_back(f.addr + f.size / 2);
    }
    ASSERT_GT(pcs.size(), 1000u);
    const std::vector<testing::GoAddr2line> want = testing::GoAddr2lineOf(b, pcs);
    ASSERT_EQ(want.size(), pcs.size());
    size_t same_function = 0, same_position = 0;
    for (size_t i = 0; i < pcs.size(); ++i) {
      const auto frames = (*table)->Frames(pcs[i]);
      if (frames.empty()) {
        ADD_FAILURE() << "no frame for 0x" << std::hex << pcs[i];
        continue;
      }
      // addr2line names the function holding the pc and the innermost
      // position (the inlined code's line, as the pcln table has it).
      if (frames.back().function == want[i].function) ++same_function;
      // A function without a line table: addr2line says ":-1".
      const std::string pos = frames.front().line == 0 && frames.front().file.empty()
                                  ? ":-1"
                                  : frames.front().file + ":" + std::to_string(frames.front().line);
      if (pos == want[i].position) {
        ++same_position;
      } else if (same_position + 20 > i) {
        ADD_FAILURE() << std::hex << pcs[i] << ": " << pos << " vs " << want[i].position;
      }
    }
    EXPECT_EQ(same_function, pcs.size());
    EXPECT_EQ(same_position, pcs.size());
  }
}

TEST_F(GoPclntabTest, InlinedCallsComeFromTheInlineTreeAndTheTableIsFoundWithoutSections) {
  for (const testing::GoBuild& b : builds_) {
    SCOPED_TRACE(b.version);
    std::optional<GoFunction> hot_a;
    for (const GoFunction& f : TextSymbols(b)) {
      if (f.name == "main.hotA") hot_a = f;
    }
    ASSERT_TRUE(hot_a.has_value());
    // The stripped file without its section headers: e_shoff, e_shnum and
    // e_shstrndx zeroed, so only the magic search finds the table.
    std::ifstream in(b.stripped, std::ios::binary);
    std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), {});
    ASSERT_GE(bytes.size(), sizeof(Elf64_Ehdr));
    Elf64_Ehdr eh;
    std::memcpy(&eh, bytes.data(), sizeof(eh));
    eh.e_shoff = 0;
    eh.e_shnum = 0;
    eh.e_shstrndx = 0;
    std::memcpy(bytes.data(), &eh, sizeof(eh));
    for (bool headers : {true, false}) {
      SCOPED_TRACE(headers ? "with section headers" : "without section headers");
      auto elf = headers ? ElfFile::Open(b.stripped) : ElfFile::FromBytes("no-sections", bytes);
      ASSERT_TRUE(elf.ok()) << elf.status();
      auto table = FindGoPclntab(*elf);
      ASSERT_TRUE(table.ok() && table->has_value());
      size_t inlined = 0;
      for (uint64_t pc = hot_a->addr; pc < hot_a->addr + hot_a->size; ++pc) {
        const auto frames = (*table)->Frames(pc);
        ASSERT_FALSE(frames.empty())
            << std::hex << pc << " in " << hot_a->addr << "+" << hot_a->size;
        EXPECT_EQ(frames.back().function, "main.hotA");
        EXPECT_FALSE(frames.back().inlined);
        if (frames.size() == 2 && frames[0].function == "main.mixA" && frames[0].inlined) {
          ++inlined;
          EXPECT_NE(frames[0].file.find("gowork/main.go"), std::string::npos) << frames[0].file;
          EXPECT_EQ(frames[0].line, 19u) << "mixA's body";
          EXPECT_EQ(frames[1].line, 25u) << "hotA's call of mixA";
        }
      }
      EXPECT_GT(inlined, 0u) << "no pc of hotA shows mixA inlined";
      EXPECT_EQ((*table)->FunctionStart(hot_a->addr + 3), hot_a->addr);
    }
  }
}

// The fuzzer's hand-made seed (testdata/seeds/go_pclntab/go120.bin): two
// functions at 0x1000 and 0x1020, main.inl inlined into main.a over
// [0x1008, 0x1020) with its call site at main.a+4; both functions share
// one line table (10 for 16 bytes, then 11) read from their own entry.
TEST(GoPclntab, ReadsTheHandMadeSeed) {
  const std::string seed =
      testing::ReadFile(testing::SourcePath("testdata/seeds/go_pclntab/go120.bin"));
  std::span<const uint8_t> bytes(reinterpret_cast<const uint8_t*>(seed.data()), seed.size());
  GoPclntab::Layout layout{bytes, 0, 0x10000, [&](uint64_t vaddr, uint64_t n) {
                             return vaddr >= 0x10000 && vaddr - 0x10000 + n <= bytes.size()
                                        ? std::optional(bytes.subspan(vaddr - 0x10000, n))
                                        : std::nullopt;
                           }};
  auto t = GoPclntab::Parse("seed", std::move(layout));
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_TRUE(t->go120());
  EXPECT_EQ(t->function_count(), 2u);
  auto frames = t->Frames(0x1004);
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0].function, "main.a");
  EXPECT_EQ(frames[0].file, "x.go");
  EXPECT_EQ(frames[0].line, 10u);
  frames = t->Frames(0x1012);
  ASSERT_EQ(frames.size(), 2u);
  EXPECT_EQ(frames[0].function, "main.inl");
  EXPECT_TRUE(frames[0].inlined);
  EXPECT_EQ(frames[0].line, 11u);
  EXPECT_EQ(frames[1].function, "main.a");
  EXPECT_EQ(frames[1].line, 10u) << "the call site, main.a+4";
  frames = t->Frames(0x1030);
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0].function, "main.b");
  EXPECT_EQ(frames[0].line, 11u) << "the line table read from main.b's entry";
  EXPECT_EQ(t->FunctionStart(0x1030), 0x1020u);
  EXPECT_TRUE(t->Frames(0x1040).empty()) << "past the table's end";
  EXPECT_TRUE(t->Frames(0xfff).empty()) << "before the text";
}

TEST(GoPclntab, RefusesWhatIsNotAPclntab) {
  std::vector<uint8_t> junk(256, 0xab);
  auto t = GoPclntab::Parse("junk", {junk, 0, 0, nullptr});
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("junk: .gopclntab: magic"), std::string::npos) << t.status();
  std::vector<uint8_t> header(72, 0);
  const uint32_t magic = GoPclntab::kMagic120;
  std::memcpy(header.data(), &magic, 4);
  header[6] = 1;
  header[7] = 8;
  header[8] = 200;  // nfunc: more than fit
  t = GoPclntab::Parse("short", {header, 0, 0, nullptr});
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("functions do not fit"), std::string::npos) << t.status();
}

TEST_F(GoPclntabTest, UnwindRowsFromPcspAreTheGoLinkersOwnDebugFrameRows) {
  for (const testing::GoBuild& b : builds_) {
    SCOPED_TRACE(b.version);
    TableBuildOptions no_debug;
    no_debug.find_debug_file = false;
    TableBuildOptions cfi_only = no_debug;
    cfi_only.go_rows = false;
    auto twin = BuildUnwindTableFromPath(b.binary, cfi_only);  // .debug_frame only
    ASSERT_TRUE(twin.ok()) << twin.status();
    ASSERT_TRUE(twin->from_debug_frame && !twin->from_eh_frame) << twin->source();
    auto ours = BuildUnwindTableFromPath(b.stripped, no_debug);
    ASSERT_TRUE(ours.ok()) << ours.status();
    ASSERT_EQ(ours->source(), "gopclntab");
    auto elf = ElfFile::Open(b.stripped);
    ASSERT_TRUE(elf.ok());
    auto pclntab = FindGoPclntab(*elf);
    ASSERT_TRUE(pclntab.ok() && pclntab->has_value());
    // Every row boundary of either table, compared both ways.
    std::vector<uint64_t> at;
    for (const UnwindRow& r : twin->rows) at.push_back(r.addr);
    for (const UnwindRow& r : ours->rows) at.push_back(r.addr);
    std::sort(at.begin(), at.end());
    at.erase(std::unique(at.begin(), at.end()), at.end());
    size_t same = 0, ends = 0, wrong = 0;
    std::set<std::string> ending;
    for (uint64_t addr : at) {
      const UnwindRule want = LookupPlainRow(twin->rows, addr);
      const UnwindRule got = LookupPlainRow(ours->rows, addr);
      if (got == want) {
        ++same;
        continue;
      }
      // Where Go's traceback ends (the outermost frames, functions that
      // switch stacks) the rows say so; the CFA is still the linker's.
      UnwindRule ended = want;
      ended.ra_kind = EHP_RULE_UNDEFINED;
      ended.ra_offset = 0;
      const auto frames = (*pclntab)->Frames(addr);
      const std::string name = frames.empty() ? "?" : frames.back().function;
      if (got == ended) {
        ++ends;
        ending.insert(name);
        continue;
      }
      ADD_FAILURE() << std::hex << addr << " (" << name << "): " << FormatRule(got) << " vs the linker's "
                    << FormatRule(want);
      if (++wrong > 20) break;
    }
    EXPECT_GT(same, 5000u);
    EXPECT_EQ(same + ends, at.size());
    EXPECT_TRUE(ending.count("runtime.goexit")) << "goexit ends every goroutine's stack";
    std::printf("%s: %zu row boundaries, %zu equal to the linker's .debug_frame, %zu end the walk "
                "in %zu functions (%s, ...)\n",
                b.version.c_str(), at.size(), same, ends, ending.size(), ending.begin()->c_str());
  }
}

}  // namespace
}  // namespace ehprof
