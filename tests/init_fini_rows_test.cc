// Rows for x86-64's .init and .fini (no CFI), made from crti/crtn's code:
// on real files, and refused for any other shape of code.
#include "unwind_tables/init_fini_rows.h"

#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

#include "gtest/gtest.h"
#include "tests/test_support.h"
#include "unwind_tables/table_builder.h"

namespace ehprof {
namespace {

ElfSection InitOf(const ElfFile& elf) {
  auto s = elf.Section(".init");
  EXPECT_TRUE(s.ok() && s->has_value()) << elf.path();
  return s.ok() && s->has_value() ? **s : ElfSection{};
}

// libcrypto's .init calls OPENSSL_cpuid_setup between crti's prologue and
// crtn's epilogue: a return address there unwinds with the frame crti made.
TEST(InitFiniRows, RealFilesGetCrtisFrame) {
#if !defined(__x86_64__)
  GTEST_SKIP() << "x86-64 rows and files";
#endif
  for (const std::string& path : {std::string("/usr/lib/x86_64-linux-gnu/libcrypto.so.3"),
                                 testing::TestdataPath("init_call"), testing::TestdataPath("init_call.stripped")}) {
    SCOPED_TRACE(path);
    auto elf = ElfFile::Open(path);
    ASSERT_TRUE(elf.ok()) << elf.status();
    const ElfSection init = InitOf(*elf);
    ASSERT_GT(init.size, 10u);
    auto rows = InitFiniRows(*elf);
    ASSERT_TRUE(rows.ok()) << rows.status();
    auto t = BuildUnwindTableFromPath(path);
    ASSERT_TRUE(t.ok()) << t.status();
    EXPECT_TRUE(t->init_fini_rows);
    const UnwindRule first = LookupPlainRow(t->rows, init.addr);
    const UnwindRule body = LookupPlainRow(t->rows, init.addr + init.size - 6);  // the last call's end
    const UnwindRule ret = LookupPlainRow(t->rows, init.addr + init.size - 1);
    EXPECT_EQ(first.cfa_reg, EHP_REG_RSP);
    EXPECT_EQ(first.cfa_offset, 8);
    EXPECT_EQ(body.cfa_offset, 16);
    EXPECT_EQ(body.ra_kind, EHP_RULE_CFA_OFFSET);
    EXPECT_EQ(body.ra_offset, -8);
    EXPECT_EQ(ret.cfa_offset, 8);
    EXPECT_TRUE(LookupPlainRow(t->rows, init.addr + init.size).is_none() ||
                LookupPlainRow(t->rows, init.addr + init.size).cfa_kind == EHP_CFA_REG);
  }
}

// .init code of any other shape (an instruction that moves rsp, code
// after the `ret`) gets no rows: the file is the user's.
TEST(InitFiniRows, OtherShapesGetNone) {
#if !defined(__x86_64__)
  GTEST_SKIP() << "x86-64 rows and files";
#endif
  const std::string src = testing::TestdataPath("init_call");
  auto elf = ElfFile::Open(src);
  ASSERT_TRUE(elf.ok()) << elf.status();
  const ElfSection init = InitOf(*elf);
  const std::string code(reinterpret_cast<const char*>(init.data.data()), init.size);
  std::string bytes = testing::ReadFile(src);
  const size_t at = bytes.find(code);
  ASSERT_NE(at, std::string::npos);
  ASSERT_EQ(bytes.find(code, at + 1), std::string::npos);
  const std::string path = ::testing::TempDir() + "/init_shape." + std::to_string(::getpid());
  // The byte after the prologue: `push %rax` (moves rsp); the last: not `ret`.
  for (size_t off : {size_t{4}, init.size - 1}) {
    std::string patched = bytes;
    patched[at + off] = '\x50';
    std::ofstream(path, std::ios::binary | std::ios::trunc) << patched;
    auto p = ElfFile::Open(path);
    ASSERT_TRUE(p.ok()) << p.status();
    auto rows = InitFiniRows(*p);
    ASSERT_TRUE(rows.ok()) << rows.status();
    for (const UnwindRow& r : *rows) EXPECT_FALSE(r.addr >= init.addr && r.addr < init.addr + init.size) << off;
    auto t = BuildUnwindTableFromPath(path);
    ASSERT_TRUE(t.ok()) << t.status();
    EXPECT_TRUE(LookupPlainRow(t->rows, init.addr + 4).is_none()) << off;
  }
  std::remove(path.c_str());
}

}  // namespace
}  // namespace ehprof
