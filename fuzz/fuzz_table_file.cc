// libFuzzer target: the table cache's entry parser (unwind_tables/
// table_file.h). An entry feeds a BPF program, so what parses must be a
// table the lookups can walk, and it must serialize back to exactly the
// input (nothing in the file is ignored).
//
// Input: an entry file. Seeds: testdata/seeds/table_file (entries written
// by SerializeTable for small tables, key {"f00d", 1, 2, 3}).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "unwind_tables/compact_table.h"
#include "unwind_tables/table_file.h"

namespace {

void ParseOne(const uint8_t* data, size_t size) {
  using namespace ehprof;
  const TableFileKey key{"f00d", 1, 2, 3};
  auto t = ParseTable({data, size}, key, "fuzz.ehpt");
  if (!t.ok()) {
    if (std::string(t.status().message()).find("fuzz.ehpt") == std::string::npos) __builtin_trap();
    return;
  }
  const std::string again = SerializeTable(key, *t);
  if (again.size() != size || std::memcmp(again.data(), data, size) != 0) __builtin_trap();
  const CompactTable& c = t->table;
  for (uint64_t pc : {c.start, c.end - 1, c.start + (c.end - c.start) / 2, c.end}) {
    (void)CompactLookup(c, pc);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // As it is (the checksum must catch a mutation), then with its checksum
  // fixed, so that mutations reach the structural checks
  // (compact_table_check.h).
  ParseOne(data, size);
  const std::string fixed = ehprof::WithTableChecksumFixed({data, size});
  ParseOne(reinterpret_cast<const uint8_t*>(fixed.data()), fixed.size());
  return 0;
}
