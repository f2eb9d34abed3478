// Hostile and broken inputs to ElfFile and BuildUnwindTable. ehprof reads
// the binaries of whatever processes it profiles, so none of these may crash
// or hang; each must fail with a message naming the file (and the section),
// or leave a warning in UnwindTable::warnings, so a user can find the culprit.
#include <elf.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/test_support.h"
#include "unwind_tables/compact_table.h"
#include "unwind_tables/elf_file.h"
#include "unwind_tables/table_builder.h"

namespace ehprof {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::SizeIs;

std::vector<uint8_t> ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::string WriteTemp(const std::string& name, const std::vector<uint8_t>& bytes) {
  const std::filesystem::path dir =
      std::filesystem::path(::testing::TempDir()) / "ehprof_bad_input_test";
  std::filesystem::create_directories(dir);
  const std::string path = (dir / name).string();
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  return path;
}

uint32_t Get32(const std::vector<uint8_t>& b, size_t off) {
  uint32_t v;
  std::memcpy(&v, &b[off], 4);
  return v;
}
void Put32(std::vector<uint8_t>* b, size_t off, uint32_t v) { std::memcpy(&(*b)[off], &v, 4); }

void AppendUleb(std::vector<uint8_t>* out, uint64_t v) {
  do {
    uint8_t byte = v & 0x7f;
    v >>= 7;
    out->push_back(v ? byte | 0x80 : byte);
  } while (v);
}

TableBuildOptions NoDebugFile() {
  TableBuildOptions o;
  o.find_debug_file = false;  // only the bytes under test
  return o;
}

// A failure whose message names `file` and says `what` (e.g. the section).
void ExpectNames(const absl::Status& status, const std::string& file,
                 const std::string& what) {
  EXPECT_FALSE(status.ok());
  EXPECT_THAT(std::string(status.message()), HasSubstr(file));
  EXPECT_THAT(std::string(status.message()), HasSubstr(what));
}

// A CIE (code_align 1, data_align -8, ra r16, absolute FDE pointers,
// cfa=rsp+8 ra=cfa-8) and one FDE over [begin, begin + size) running
// `program`, then the terminator.
std::vector<uint8_t> SyntheticEhFrame(const std::vector<uint8_t>& program,
                                      uint64_t begin, uint64_t size) {
  std::vector<uint8_t> cie = {0, 0, 0, 0, 1, 'z', 'R', 0, 1, 0x78, 0x10, 1, 0x00,
                              0x0c, 7, 8, 0x90, 1};
  while ((cie.size() + 4) % 4) cie.push_back(0);  // DW_CFA_nop
  std::vector<uint8_t> fde(4 + 16 + 1);
  Put32(&fde, 0, static_cast<uint32_t>(4 + cie.size() + 4));  // back to the CIE
  std::memcpy(&fde[4], &begin, 8);
  std::memcpy(&fde[12], &size, 8);
  fde.insert(fde.end(), program.begin(), program.end());
  while (fde.size() % 4) fde.push_back(0);
  std::vector<uint8_t> out(4);
  Put32(&out, 0, static_cast<uint32_t>(cie.size()));
  out.insert(out.end(), cie.begin(), cie.end());
  out.resize(out.size() + 4);
  Put32(&out, out.size() - 4, static_cast<uint32_t>(fde.size()));
  out.insert(out.end(), fde.begin(), fde.end());
  out.resize(out.size() + 4);  // terminator
  return out;
}

constexpr uint64_t kFdeBegin = 0x1100;
constexpr uint64_t kFdeSize = 0x40;

// plt_calls, a small real program, whose .eh_frame tests patch in place.
class BadInput : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = ehprof::testing::TestdataPath("plt_calls");
    bytes_ = ReadBytes(path_);
    ASSERT_THAT(bytes_, Not(IsEmpty())) << path_;
    auto elf = ElfFile::Open(path_);
    ASSERT_TRUE(elf.ok()) << elf.status();
    auto sec = elf->Section(".eh_frame");
    ASSERT_TRUE(sec.ok() && *sec) << path_;
    for (const ElfSegment& s : elf->segments()) {
      if (s.type == PT_LOAD && (*sec)->addr >= s.vaddr && (*sec)->addr < s.vaddr + s.filesz) {
        eh_offset_ = s.offset + ((*sec)->addr - s.vaddr);
      }
    }
    eh_size_ = (*sec)->size;
    ASSERT_NE(eh_offset_, 0u);
    // Entries by walking their lengths; a zero CIE id marks a CIE.
    for (size_t off = 0; off + 8 <= eh_size_ && Get32(bytes_, eh_offset_ + off) != 0;
         off += 4 + Get32(bytes_, eh_offset_ + off)) {
      const size_t at = eh_offset_ + off;
      (Get32(bytes_, at + 4) == 0 ? cies_ : fdes_).push_back(at);
    }
    ASSERT_GE(cies_.size(), 1u);
    ASSERT_GE(fdes_.size(), 2u);
    ASSERT_EQ(cies_[0], eh_offset_);
  }

  // A copy of plt_calls whose .eh_frame holds only SyntheticEhFrame(program).
  absl::StatusOr<UnwindTable> BuildWithProgram(const std::vector<uint8_t>& program,
                                               uint64_t begin = kFdeBegin,
                                               uint64_t size = kFdeSize) {
    std::vector<uint8_t> eh = SyntheticEhFrame(program, begin, size);
    EXPECT_LE(eh.size(), eh_size_);
    std::vector<uint8_t> b = bytes_;
    std::fill(b.begin() + eh_offset_, b.begin() + eh_offset_ + eh_size_, 0);
    std::copy(eh.begin(), eh.end(), b.begin() + eh_offset_);
    auto elf = ElfFile::FromBytes(kSynthetic, std::move(b));
    if (!elf.ok()) return elf.status();
    return BuildUnwindTable(*elf, NoDebugFile());
  }

  absl::StatusOr<UnwindTable> BuildFromMemory(std::vector<uint8_t> b) {
    auto elf = ElfFile::FromBytes(kPatched, std::move(b));
    if (!elf.ok()) return elf.status();
    return BuildUnwindTable(*elf, NoDebugFile());
  }

  static constexpr char kSynthetic[] = "synthetic.elf";
  static constexpr char kPatched[] = "patched.elf";
  std::string path_;
  std::vector<uint8_t> bytes_;
  size_t eh_offset_ = 0;
  size_t eh_size_ = 0;
  // File offsets of .eh_frame's entries.
  std::vector<size_t> cies_;
  std::vector<size_t> fdes_;
};

TEST_F(BadInput, ZeroLengthFile) {
  const std::string p = WriteTemp("empty", {});
  ExpectNames(BuildUnwindTableFromPath(p, NoDebugFile()).status(), p, "not an ELF");
}

TEST_F(BadInput, TextFile) {
  const std::string text = "#!/bin/sh\necho this is not an ELF file\n";
  const std::string p = WriteTemp("text", {text.begin(), text.end()});
  ExpectNames(BuildUnwindTableFromPath(p, NoDebugFile()).status(), p, "not an ELF");
  ExpectNames(ElfFile::FromBytes("text.mem", {text.begin(), text.end()}).status(),
              "text.mem", "not an ELF");
}

// Disabled: libelf reports 0 program and section headers when their tables
// run past the end of the file, and ElfFile::Init accepts that, so the
// truncated file builds an empty table with neither error nor warning.
TEST_F(BadInput, TruncatedAfterElfHeader) {
  const std::string p = WriteTemp("first100", {bytes_.begin(), bytes_.begin() + 100});
  auto t = BuildUnwindTableFromPath(p, NoDebugFile());
  if (t.ok()) {
    EXPECT_THAT(t->warnings, Not(IsEmpty())) << "a truncated ELF built silently";
  } else {
    ExpectNames(t.status(), p, "");
  }
}

TEST_F(BadInput, TruncatedInsideEhFrame) {
  // The section headers (at the end) go too: the header table now runs past
  // the end of the file, which is reported before any section is read.
  const std::string p = WriteTemp(
      "cut_eh_frame", {bytes_.begin(), bytes_.begin() + eh_offset_ + eh_size_ / 2});
  ExpectNames(BuildUnwindTableFromPath(p, NoDebugFile()).status(), p, "truncated ELF file");
}

TEST_F(BadInput, Elf32Header) {
  std::vector<uint8_t> b = bytes_;
  b[EI_CLASS] = ELFCLASS32;
  const std::string p = WriteTemp("class32", b);
  ExpectNames(BuildUnwindTableFromPath(p, NoDebugFile()).status(), p, "64-bit");
  ExpectNames(BuildFromMemory(b).status(), kPatched, "64-bit");
}

TEST_F(BadInput, BigEndianHeader) {
  std::vector<uint8_t> b = bytes_;
  b[EI_DATA] = ELFDATA2MSB;
  const std::string p = WriteTemp("big_endian", b);
  ExpectNames(BuildUnwindTableFromPath(p, NoDebugFile()).status(), p, "big-endian");
}

TEST_F(BadInput, CieLengthPastSectionEnd) {
  std::vector<uint8_t> b = bytes_;
  Put32(&b, cies_[0], 0x7ffffff0);
  const std::string p = WriteTemp("cie_length", b);
  auto t = BuildUnwindTableFromPath(p, NoDebugFile());
  ExpectNames(t.status(), p, ".eh_frame");
  EXPECT_THAT(std::string(t.status().message()), HasSubstr("past the section end"));
}

TEST_F(BadInput, CieLengthTooShort) {
  std::vector<uint8_t> b = bytes_;
  Put32(&b, cies_[0], 4);  // just the CIE id: no version, no augmentation
  ExpectNames(BuildFromMemory(b).status(), kPatched, ".eh_frame");
}

TEST_F(BadInput, FdeLengthPastSectionEnd) {
  std::vector<uint8_t> b = bytes_;
  Put32(&b, fdes_[0], 0x7ffffff0);
  ExpectNames(BuildFromMemory(b).status(), kPatched, ".eh_frame");
}

TEST_F(BadInput, FdeLengthTooShortForItsAddresses) {
  std::vector<uint8_t> b = bytes_;
  Put32(&b, fdes_[0], 6);
  ExpectNames(BuildFromMemory(b).status(), kPatched, ".eh_frame");
}

TEST_F(BadInput, FdeCiePointerToItself) {
  std::vector<uint8_t> b = bytes_;
  Put32(&b, fdes_[0] + 4, 4);  // the pointer is relative to its own field
  const std::string p = WriteTemp("cie_pointer_self", b);
  auto t = BuildUnwindTableFromPath(p, NoDebugFile());
  ExpectNames(t.status(), p, ".eh_frame");
  EXPECT_THAT(std::string(t.status().message()), HasSubstr("does not point to a CIE"));
}

TEST_F(BadInput, FdeCiePointerToAnotherFde) {
  std::vector<uint8_t> b = bytes_;
  Put32(&b, fdes_[1] + 4, static_cast<uint32_t>(fdes_[1] + 4 - fdes_[0]));
  auto t = BuildFromMemory(b);
  ExpectNames(t.status(), kPatched, ".eh_frame");
  EXPECT_THAT(std::string(t.status().message()), HasSubstr("does not point to a CIE"));
}

TEST_F(BadInput, FdeCiePointersToEachOther) {
  std::vector<uint8_t> b = bytes_;
  Put32(&b, fdes_[0] + 4, static_cast<uint32_t>(fdes_[0] + 4 - fdes_[1]));
  Put32(&b, fdes_[1] + 4, static_cast<uint32_t>(fdes_[1] + 4 - fdes_[0]));
  ExpectNames(BuildFromMemory(b).status(), kPatched, ".eh_frame");
}

TEST_F(BadInput, HugeDefCfaOffsetIsUnencodableNotTruncated) {
  std::vector<uint8_t> program = {0x0c, 7};  // DW_CFA_def_cfa rsp, 2^40
  AppendUleb(&program, uint64_t{1} << 40);
  auto t = BuildWithProgram(program);
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_THAT(t->rows, SizeIs(2));
  EXPECT_EQ(t->rows[0].rule.cfa_kind, EHP_CFA_REG);
  EXPECT_EQ(t->rows[0].rule.cfa_offset, int64_t{1} << 40);
  ehp_rule compact;
  EXPECT_FALSE(ToCompactRule(t->rows[0].rule, &compact));
  auto table = EncodeCompactTable(t->rows, kSynthetic);
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_EQ(table->unencodable_rows, 1u);
  // Unsupported, so the walker stops, rather than rsp + (2^40 mod 2^32).
  EXPECT_EQ(CompactLookup(*table, kFdeBegin).cfa_kind, EHP_CFA_EXPR);
}

TEST_F(BadInput, HugeAdvanceStopsAtFdeEnd) {
  const std::vector<std::vector<uint8_t>> programs = {
      {0x04, 0xff, 0xff, 0xff, 0xff, 0x0e, 16},  // advance_loc4 ~0; def_cfa_offset 16
      {0x1d, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x0e, 16},  // advance_loc8
  };
  for (const auto& program : programs) {
    auto t = BuildWithProgram(program);
    ASSERT_TRUE(t.ok()) << t.status();
    EXPECT_THAT(t->warnings, IsEmpty());
    ASSERT_THAT(t->rows, SizeIs(2));
    EXPECT_EQ(t->rows[0].addr, kFdeBegin);
    EXPECT_EQ(t->rows[0].rule.cfa_offset, 8);
    EXPECT_EQ(t->rows[1].addr, kFdeBegin + kFdeSize);
    EXPECT_TRUE(t->rows[1].rule.is_none());
  }
}

TEST_F(BadInput, RememberStateNestedPastLimit) {
  auto t = BuildWithProgram(std::vector<uint8_t>(65, 0x0a));  // remember_state
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_THAT(t->rows, IsEmpty());
  ASSERT_THAT(t->warnings, SizeIs(1));
  EXPECT_THAT(t->warnings[0], HasSubstr(kSynthetic));
  EXPECT_THAT(t->warnings[0], HasSubstr(".eh_frame"));
  EXPECT_THAT(t->warnings[0], HasSubstr("nested too deep"));
}

TEST_F(BadInput, RememberStateNestedToLimit) {
  std::vector<uint8_t> program(64, 0x0a);           // remember_state
  program.insert(program.end(), 64, uint8_t{0x0b});  // restore_state
  auto t = BuildWithProgram(program);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_THAT(t->warnings, IsEmpty());
  EXPECT_THAT(t->rows, SizeIs(2));
}

TEST_F(BadInput, RestoreStateWithoutRemember) {
  auto t = BuildWithProgram({0x41, 0x0b});  // advance_loc 1; restore_state
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_THAT(t->rows, IsEmpty());
  ASSERT_THAT(t->warnings, SizeIs(1));
  EXPECT_THAT(t->warnings[0], HasSubstr(kSynthetic));
  EXPECT_THAT(t->warnings[0], HasSubstr(".eh_frame"));
  EXPECT_THAT(t->warnings[0], HasSubstr("without remember_state"));
}

// Disabled: EncodeCompactTable's page end (lo + page size) wraps for the
// last page of the address space, so that page gets no rows and
// CompactLookup reads outside the table.
TEST_F(BadInput, FdeInLastPageOfAddressSpace) {
  auto t = BuildWithProgram({}, 0xffffffffffffff00, 0x10);
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_THAT(t->rows, SizeIs(2));
  auto table = EncodeCompactTable(t->rows, kSynthetic);
  ASSERT_TRUE(table.ok()) << table.status();
  ehp_rule want;
  ASSERT_TRUE(ToCompactRule(t->rows[0].rule, &want));
  const ehp_rule got = CompactLookup(*table, t->rows[0].addr);
  EXPECT_EQ(std::memcmp(&want, &got, sizeof(ehp_rule)), 0);
}

}  // namespace
}  // namespace ehprof
