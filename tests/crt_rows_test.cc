// Rows for crtbegin's functions (no CFI), made from their code: on a
// program of testdata (its symbols say where each function is; its
// stripped copy gets the same rows), a Debian library and code after a
// zero fill, and refused for code of any other shape.
#include "unwind_tables/crt_rows.h"

#include <unistd.h>

#include <fstream>
#include <map>
#include <span>
#include <string>
#include <utility>

#include "elf/elf_symbols.h"
#include "gtest/gtest.h"
#include "tests/test_support.h"
#include "unwind_tables/table_builder.h"

namespace ehprof {
namespace {

constexpr const char* kCrtFunctions[] = {"deregister_tm_clones", "register_tm_clones", "__do_global_dtors_aux",
                                        "frame_dummy"};

// The addresses of the symbols of path's .symtab named in `names`.
std::map<std::string, uint64_t> Symbols(const std::string& path, std::span<const char* const> names) {
  std::map<std::string, uint64_t> out;
  auto elf = ElfFile::Open(path);
  EXPECT_TRUE(elf.ok()) << elf.status();
  if (!elf.ok()) return out;
  ForEachDefinedSymbol(*elf, ".symtab", ".strtab", [&](const ElfSymbol& s) {
    for (const char* name : names) {
      if (s.name == name) out[name] = s.value;
    }
  });
  return out;
}

std::map<std::string, uint64_t> CrtSymbols(const std::string& path) { return Symbols(path, kCrtFunctions); }

// Where in the function at addr (its code in the file's .text) the byte
// sequence `what` first is, 0 if not within its first 64 bytes.
uint64_t Find(const ElfFile& elf, uint64_t addr, const std::string& what) {
  auto text = elf.Section(".text");
  if (!text.ok() || !text->has_value()) return 0;
  const std::string code(reinterpret_cast<const char*>((*text)->data.data()), (*text)->size);
  const size_t at = code.find(what, addr - (*text)->addr);
  return at != std::string::npos && at + (*text)->addr < addr + 64 ? at + (*text)->addr : 0;
}

void ExpectEntry(const UnwindRule& r) {
  EXPECT_EQ(r.cfa_kind, EHP_CFA_REG);
  EXPECT_EQ(r.cfa_reg, EHP_REG_RSP);
  EXPECT_EQ(r.cfa_offset, 8);
  EXPECT_EQ(r.ra_kind, EHP_RULE_CFA_OFFSET);
  EXPECT_EQ(r.ra_offset, -8);
  EXPECT_EQ(r.rbp_kind, EHP_RULE_SAME);
}

// Each function's first instruction: the return address at rsp. In
// __do_global_dtors_aux, after `push %rbp`: cfa rsp+16 and rbp saved at
// cfa-16; after `mov %rsp,%rbp` (while it calls __cxa_finalize): cfa
// rbp+16. The stripped copy has no symbols and the same rows.
TEST(CrtRows, CrtbeginsFunctionsGetTheirFrames) {
#if !defined(__x86_64__)
  GTEST_SKIP() << "x86-64 rows and files";
#endif
  const std::string path = testing::TestdataPath("init_call");
  const std::map<std::string, uint64_t> syms = CrtSymbols(path);
  ASSERT_EQ(syms.size(), 4u) << "crtbegin's functions in " << path;
  auto elf = ElfFile::Open(path);
  ASSERT_TRUE(elf.ok()) << elf.status();
  auto t = BuildUnwindTableFromPath(path);
  auto stripped = BuildUnwindTableFromPath(testing::TestdataPath("init_call.stripped"));
  ASSERT_TRUE(t.ok() && stripped.ok());
  EXPECT_TRUE(t->crt_rows);
  EXPECT_TRUE(stripped->crt_rows);
  for (const auto& [name, addr] : syms) {
    SCOPED_TRACE(name);
    ExpectEntry(LookupPlainRow(t->rows, addr));
  }
  const uint64_t dtors = syms.at("__do_global_dtors_aux");
  const uint64_t push = Find(*elf, dtors, "\x55"), mov = Find(*elf, dtors, "\x48\x89\xe5");
  ASSERT_NE(push, 0u);
  ASSERT_GT(mov, push);
  const UnwindRule pushed = LookupPlainRow(t->rows, push + 1), framed = LookupPlainRow(t->rows, mov + 3);
  EXPECT_EQ(pushed.cfa_reg, EHP_REG_RSP);
  EXPECT_EQ(pushed.cfa_offset, 16);
  EXPECT_EQ(pushed.rbp_kind, EHP_RULE_CFA_OFFSET);
  EXPECT_EQ(pushed.rbp_offset, -16);
  EXPECT_EQ(framed.cfa_reg, EHP_REG_RBP);
  EXPECT_EQ(framed.cfa_offset, 16);
  EXPECT_EQ(framed.rbp_offset, -16);
  EXPECT_EQ(framed.ra_offset, -8);
  for (uint64_t a = syms.at("deregister_tm_clones"); a < dtors + 64; ++a) {
    ASSERT_EQ(LookupPlainRow(t->rows, a), LookupPlainRow(stripped->rows, a)) << std::hex << a;
  }
}

TEST(CrtRows, ADebianLibraryGetsThem) {
#if !defined(__x86_64__)
  GTEST_SKIP() << "x86-64 rows and files";
#endif
  auto t = BuildUnwindTableFromPath("/usr/lib/x86_64-linux-gnu/libz.so.1");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_TRUE(t->crt_rows);
  EXPECT_NE(t->source().find("crt"), std::string::npos) << t->source();
}

// Code without CFI after zero bytes a linker filled to a 16-byte boundary
// behind a function whose FDE ends at a call that does not return
// (libLLVM-14's crtbegin code): the gap's code starts past the fill.
// testdata's crt_fill.S: td_fill_dtors, __do_global_dtors_aux's shape,
// after td_fill_fail's `call abort`.
TEST(CrtRows, CodeAfterAZeroFillGetsThem) {
#if !defined(__x86_64__)
  GTEST_SKIP() << "x86-64 rows and files";
#endif
  const std::string path = testing::TestdataPath("libcrt_fill.so");
  auto elf = ElfFile::Open(path);
  ASSERT_TRUE(elf.ok()) << elf.status();
  constexpr const char* kFill[] = {"td_fill_dtors", "td_fill_fail"};
  std::map<std::string, uint64_t> syms = Symbols(path, kFill);
  const uint64_t dtors = syms["td_fill_dtors"], fail = syms["td_fill_fail"];
  ASSERT_NE(dtors, 0u);
  ASSERT_LT(fail, dtors);
  auto t = BuildUnwindTableFromPath(path);
  ASSERT_TRUE(t.ok()) << t.status();
  ExpectEntry(LookupPlainRow(t->rows, dtors));
  const uint64_t push = Find(*elf, dtors, "\x55"), mov = Find(*elf, dtors, "\x48\x89\xe5");
  ASSERT_NE(push, 0u);
  EXPECT_EQ(LookupPlainRow(t->rows, push + 1).cfa_offset, 16);
  EXPECT_EQ(LookupPlainRow(t->rows, mov + 3).cfa_reg, EHP_REG_RBP);
  EXPECT_TRUE(LookupPlainRow(t->rows, dtors - 1).is_none()) << "the fill is no code";
}

// The file is the user's: one instruction the functions are not made of
// (`push %rbx` for `push %rbp`), or a frame left open (`nop` for `pop
// %rbp`), and their whole gap gets no rows.
TEST(CrtRows, OtherCodeGetsNone) {
#if !defined(__x86_64__)
  GTEST_SKIP() << "x86-64 rows and files";
#endif
  const std::string src = testing::TestdataPath("init_call");
  const uint64_t dtors = CrtSymbols(src).at("__do_global_dtors_aux");
  auto elf = ElfFile::Open(src);
  ASSERT_TRUE(elf.ok()) << elf.status();
  auto text = elf->Section(".text");
  ASSERT_TRUE(text.ok() && text->has_value());
  std::string bytes = testing::ReadFile(src);
  const std::string code(reinterpret_cast<const char*>((*text)->data.data()), (*text)->size);
  const size_t text_at = bytes.find(code);
  ASSERT_NE(text_at, std::string::npos);
  const std::string path = ::testing::TempDir() + "/crt_shape." + std::to_string(::getpid());
  for (const auto& [find, patch] : {std::pair<std::string, char>{"\x55", '\x53'}, {"\x5d", '\x90'}}) {
    const uint64_t at = Find(*elf, dtors, find);
    ASSERT_NE(at, 0u);
    std::string patched = bytes;
    patched[text_at + (at - (*text)->addr)] = patch;
    std::ofstream(path, std::ios::binary | std::ios::trunc) << patched;
    auto t = BuildUnwindTableFromPath(path);
    ASSERT_TRUE(t.ok()) << t.status();
    EXPECT_TRUE(LookupPlainRow(t->rows, dtors).is_none()) << FormatRule(LookupPlainRow(t->rows, dtors));
    EXPECT_TRUE(LookupPlainRow(t->rows, at + 1).is_none());
  }
  ::unlink(path.c_str());
}

// Code without CFI that a call did not enter gets none, though each of its
// instructions is one crtbegin's functions use: unmapped_ra's
// unmapped_fp_spin, a loop main jumps to with a frame record of its own
// making (`call unmapped_fp_check; jmp 1b`, never returning). Its return
// address is not at rsp; a frame-pointer walk is right there.
TEST(CrtRows, ALoopNoCallEnteredGetsNone) {
#if !defined(__x86_64__)
  GTEST_SKIP() << "x86-64 rows and files";
#endif
  const std::string path = testing::TestdataPath("unmapped_ra");
  auto elf = ElfFile::Open(path);
  ASSERT_TRUE(elf.ok()) << elf.status();
  uint64_t spin = 0;
  ForEachDefinedSymbol(*elf, ".symtab", ".strtab", [&](const ElfSymbol& s) {
    if (s.name == "unmapped_fp_spin") spin = s.value;
  });
  ASSERT_NE(spin, 0u);
  auto t = BuildUnwindTableFromPath(path);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_TRUE(LookupPlainRow(t->rows, spin).is_none()) << FormatRule(LookupPlainRow(t->rows, spin));
}

}  // namespace
}  // namespace ehprof
