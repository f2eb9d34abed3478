// Hostile and broken inputs to ElfFile and BuildUnwindTable. ehprof reads
// the binaries of whatever processes it profiles, so none of these may crash
// or hang; each must fail with a message naming the file (and the section),
// or leave a warning in UnwindTable::warnings, so a user can find the culprit.
#include <dwarf.h>
#include <elf.h>

#include <cstddef>
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
#include "unwind_tables/cfa_program.h"
#include "unwind_tables/compact_table.h"
#include "elf/elf_file.h"
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
  // The rows of the CFI under test only: the synthetic file's entry point
  // has no FDE, which would add rows of ours (entry_point_rows.h, tested in
  // table_builder_test).
  o.entry_point_rows = false;
  o.init_fini_rows = false;
  o.crt_rows = false;
  return o;
}

// A failure whose message names `file` and says `what` (e.g. the section).
void ExpectNames(const absl::Status& status, const std::string& file,
                 const std::string& what) {
  EXPECT_FALSE(status.ok());
  EXPECT_THAT(std::string(status.message()), HasSubstr(file));
  EXPECT_THAT(std::string(status.message()), HasSubstr(what));
}

// A table built with exactly one warning, naming `file`, .eh_frame and
// saying `what`.
void ExpectOneWarning(const UnwindTable& t, const std::string& file, const std::string& what) {
  ASSERT_THAT(t.warnings, SizeIs(1));
  EXPECT_THAT(t.warnings[0], HasSubstr(file));
  EXPECT_THAT(t.warnings[0], HasSubstr(".eh_frame"));
  EXPECT_THAT(t.warnings[0], HasSubstr(what));
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

// SyntheticEhFrame's CIE, then `count` FDEs of `size` bytes each, back to
// back from `begin`, each running `program`.
std::vector<uint8_t> SyntheticEhFrameFdes(const std::vector<uint8_t>& program, uint64_t begin,
                                          uint64_t size, size_t count) {
  std::vector<uint8_t> out = SyntheticEhFrame(program, begin, size);
  out.resize(out.size() - 4);  // the terminator goes after the last FDE
  const size_t cie_end = 4 + Get32(out, 0);
  const std::vector<uint8_t> first(out.begin() + cie_end, out.end());
  for (size_t i = 1; i < count; ++i) {
    std::vector<uint8_t> fde = first;
    Put32(&fde, 4, static_cast<uint32_t>(out.size() + 4));  // back to the CIE at 0
    const uint64_t at = begin + i * size;
    std::memcpy(&fde[8], &at, 8);
    out.insert(out.end(), fde.begin(), fde.end());
  }
  out.resize(out.size() + 4);
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

  absl::StatusOr<UnwindTable> BuildFromMemory(std::vector<uint8_t> b,
                                              const TableBuildOptions& options = NoDebugFile()) {
    auto elf = ElfFile::FromBytes(kPatched, std::move(b));
    if (!elf.ok()) return elf.status();
    return BuildUnwindTable(*elf, options);
  }

  // The file offset of the section header of `name`.
  size_t SectionHeaderOffset(const std::vector<uint8_t>& b, std::string_view name) {
    Elf64_Ehdr eh;
    std::memcpy(&eh, b.data(), sizeof eh);
    auto shdr = [&](size_t i) {
      Elf64_Shdr sh;
      std::memcpy(&sh, &b[eh.e_shoff + i * eh.e_shentsize], sizeof sh);
      return sh;
    };
    const Elf64_Shdr strtab = shdr(eh.e_shstrndx);
    for (size_t i = 0; i < eh.e_shnum; ++i) {
      const char* n = reinterpret_cast<const char*>(&b[strtab.sh_offset + shdr(i).sh_name]);
      if (name == n) return eh.e_shoff + i * eh.e_shentsize;
    }
    ADD_FAILURE() << "no section " << name;
    return 0;
  }

  // plt_calls with its .eh_frame section header pointing at `eh`, appended
  // to the file (too big to fit in place); its address stays.
  std::vector<uint8_t> WithEhFrameAppended(const std::vector<uint8_t>& eh) {
    std::vector<uint8_t> b = bytes_;
    const size_t sh = SectionHeaderOffset(b, ".eh_frame");
    const uint64_t off = b.size(), size = eh.size();
    b.insert(b.end(), eh.begin(), eh.end());
    std::memcpy(&b[sh + offsetof(Elf64_Shdr, sh_offset)], &off, 8);
    std::memcpy(&b[sh + offsetof(Elf64_Shdr, sh_size)], &size, 8);
    return b;
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

TEST_F(BadInput, HugeDefCfaOffsetIsUnsupportedNotTruncated) {
  std::vector<uint8_t> program = {0x0c, 7};  // DW_CFA_def_cfa rsp, 2^40
  AppendUleb(&program, uint64_t{1} << 40);
  auto t = BuildWithProgram(program);
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_THAT(t->rows, SizeIs(2));
  // A row holds 32-bit offsets: this one is unsupported, so the walker
  // stops, rather than rsp + (2^40 mod 2^32).
  EXPECT_EQ(t->rows[0].rule.cfa_kind, EHP_CFA_EXPR);
  EXPECT_EQ(t->rows[0].rule.cfa_offset, 0);
  auto table = EncodeCompactTable(t->rows, kSynthetic);
  ASSERT_TRUE(table.ok()) << table.status();
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
  ExpectOneWarning(*t, kSynthetic, "nested too deep");
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
  ExpectOneWarning(*t, kSynthetic, "without remember_state");
}

TEST_F(BadInput, EhFrameSizePastFileEnd) {
  std::vector<uint8_t> b = bytes_;
  const uint64_t huge = uint64_t{1} << 40;
  std::memcpy(&b[SectionHeaderOffset(b, ".eh_frame") + offsetof(Elf64_Shdr, sh_size)], &huge, 8);
  const std::string p = WriteTemp("eh_frame_size", b);
  ExpectNames(BuildUnwindTableFromPath(p, NoDebugFile()).status(), p, ".eh_frame");
  ExpectNames(BuildFromMemory(b).status(), kPatched, ".eh_frame");
}

TEST_F(BadInput, EhFrameOffsetPastFileEnd) {
  std::vector<uint8_t> b = bytes_;
  const uint64_t huge = uint64_t{1} << 40;
  std::memcpy(&b[SectionHeaderOffset(b, ".eh_frame") + offsetof(Elf64_Shdr, sh_offset)], &huge, 8);
  ExpectNames(BuildFromMemory(b).status(), kPatched, ".eh_frame");
}

// The table comes from .eh_frame itself; .eh_frame_hdr's search table (and
// its count) is never trusted for it.
TEST_F(BadInput, EhFrameHdrAbsurdFdeCountIsIgnored) {
  auto want = BuildFromMemory(bytes_);
  ASSERT_TRUE(want.ok()) << want.status();
  std::vector<uint8_t> b = bytes_;
  Elf64_Shdr hdr;
  std::memcpy(&hdr, &b[SectionHeaderOffset(b, ".eh_frame_hdr")], sizeof hdr);
  ASSERT_EQ(b[hdr.sh_offset + 1], DW_EH_PE_pcrel | DW_EH_PE_sdata4) << "eh_frame_ptr encoding";
  ASSERT_EQ(b[hdr.sh_offset + 2], DW_EH_PE_udata4) << "fde_count encoding";
  Put32(&b, hdr.sh_offset + 8, 0x80000000u);  // fde_count, after eh_frame_ptr
  auto t = BuildFromMemory(b);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->rows, want->rows);
}

// One FDE alternating two rules at every byte: a row per 3 bytes of CFI.
// Past kMaxFdeRows it is a hostile FDE, dropped with a warning, not a
// reason to hold gigabytes of rows.
// advance_loc 1, cfa rsp+16, advance_loc 1, cfa rsp+24, `pairs` times.
std::vector<uint8_t> AlternatingRows(size_t pairs) {
  std::vector<uint8_t> program;
  for (size_t i = 0; i < pairs; ++i) program.insert(program.end(), {0x41, 0x0e, 16, 0x41, 0x0e, 24});
  return program;
}

TEST_F(BadInput, FdeWithMoreRowsThanTheCapIsDropped) {
  const std::vector<uint8_t> program = AlternatingRows(kMaxFdeRows / 2 + 1);
  auto t = BuildFromMemory(WithEhFrameAppended(SyntheticEhFrame(program, kFdeBegin, 1u << 24)));
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_THAT(t->rows, IsEmpty());
  ExpectOneWarning(*t, kPatched, "more than 1048576 rows");
}

TEST_F(BadInput, FdeAtTheRowCapIsKept) {
  std::vector<uint8_t> program = AlternatingRows(kMaxFdeRows / 2 - 1);
  program.insert(program.end(), {0x41, 0x0e, 16});  // row kMaxFdeRows
  auto t = BuildFromMemory(WithEhFrameAppended(SyntheticEhFrame(program, kFdeBegin, 1u << 24)));
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_THAT(t->warnings, IsEmpty());
  EXPECT_THAT(t->rows, SizeIs(kMaxFdeRows + 1));  // and the none row at the end
}

TEST_F(BadInput, SectionWithMoreRowsThanMaxRowsFails) {
  // 3,000 adjacent FDEs of 4 rows each: 12,001 rows with the final none.
  const std::vector<uint8_t> program = {0x41, 0x0e, 16, 0x41, 0x0e, 24, 0x41, 0x0e, 32};
  std::vector<uint8_t> b = WithEhFrameAppended(SyntheticEhFrameFdes(program, kFdeBegin, 32, 3000));
  auto all = BuildFromMemory(b);
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_EQ(all->fdes, 3000u);
  TableBuildOptions options = NoDebugFile();
  options.max_rows = 10000;
  auto capped = BuildFromMemory(b, options);
  ASSERT_FALSE(capped.ok());
  EXPECT_EQ(capped.status().code(), absl::StatusCode::kResourceExhausted);
  ExpectNames(capped.status(), kPatched, ".eh_frame");
  EXPECT_THAT(std::string(capped.status().message()), HasSubstr("more than 10000 unwind rows"));
  // Fewer rows allowed than there are FDEs: the parse stops at the FDE past
  // the limit, before the records of the rest are held.
  options.max_rows = 2000;
  auto few = BuildFromMemory(b, options);
  ExpectNames(few.status(), kPatched, ".eh_frame");
  EXPECT_THAT(std::string(few.status().message()), HasSubstr("more than 2000 FDEs"));
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
