// libFuzzer target: a whole ELF image through ElfFile, CfiFunctions and BuildUnwindTable
// (section lookup, PT_GNU_EH_FRAME fallback, compressed sections, Go pclntab rows, the
// .eh_frame/.debug_frame overlay), then the rows through the compact encoding.
//
// Input: the image. Seeds: testdata/seeds/elf (see docs/RELIABILITY.md).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "unwind_tables/cfi_functions.h"
#include "elf/elf_file.h"
#include "unwind_tables/table_builder.h"
#include "unwind_tables/unwind_row.h"

namespace ehprof::fuzz {

// In round_trip.cc.
void CheckCompactRoundTrip(const std::vector<UnwindRow>& rows);

namespace {

constexpr char kFile[] = "fuzz.elf";

// Errors must name the file, or a user cannot tell which mapping is bad.
void CheckNamesFile(const std::string& msg) {
  if (msg.find(kFile) == std::string::npos) __builtin_trap();
}

// UnwindTable::rows' contract (table_builder.h): sorted, no two neighbours
// with equal rules, ending with a none row.
void CheckTableRows(const std::vector<UnwindRow>& rows) {
  if (rows.empty()) return;
  if (!rows.back().rule.is_none()) __builtin_trap();
  for (size_t i = 1; i < rows.size(); ++i) {
    if (rows[i].addr <= rows[i - 1].addr || rows[i].rule == rows[i - 1].rule) {
      __builtin_trap();
    }
  }
}

}  // namespace
}  // namespace ehprof::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ehprof;
  using namespace ehprof::fuzz;
  auto elf = ElfFile::FromBytes(kFile, std::vector<uint8_t>(data, data + size));
  if (!elf.ok()) {
    CheckNamesFile(std::string(elf.status().message()));
    return 0;
  }
  // The FDE ranges that name unnamed functions: a range found for an
  // address holds it.
  if (auto fns = CfiFunctions::FromElf(*elf); fns.ok()) {
    for (uint64_t a : {uint64_t{0}, uint64_t{0x1000}, uint64_t{0x401000}, ~uint64_t{0}}) {
      auto r = fns->Find(a);
      if (r && (a < r->begin || a >= r->end)) __builtin_trap();
    }
  } else {
    CheckNamesFile(std::string(fns.status().message()));
  }
  TableBuildOptions options;
  options.find_debug_file = false;  // the input is all there is
  auto table = BuildUnwindTable(*elf, options);
  if (!table.ok()) {
    CheckNamesFile(std::string(table.status().message()));
    return 0;
  }
  for (const std::string& w : table->warnings) {
    if (w != "further warnings suppressed") CheckNamesFile(w);
  }
  CheckTableRows(table->rows);
  CheckCompactRoundTrip(table->rows);
  return 0;
}
