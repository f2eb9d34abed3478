#include "agent/cli/cli.h"

#include <algorithm>
#include <cstdio>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"

namespace ehprof {

int UsageError(std::string_view subcommand, std::string_view reason) {
  std::fprintf(stderr, "ehprof %.*s: %.*s (see 'ehprof %.*s --help')\n",
               static_cast<int>(subcommand.size()), subcommand.data(),
               static_cast<int>(reason.size()), reason.data(),
               static_cast<int>(subcommand.size()), subcommand.data());
  return kExitUsage;
}

bool IsHelpFlag(std::string_view arg) { return arg == "--help" || arg == "-h"; }

bool ParseIdList(const std::string& s, std::vector<uint32_t>* out) {
  for (absl::string_view part : absl::StrSplit(s, ',')) {
    uint32_t v;
    if (!absl::SimpleAtoi(part, &v) || v == 0) return false;
    out->push_back(v);
  }
  return !out->empty();
}

MapSizes SizesForMemory(uint64_t mb) {
  // Rows dominate (3 bytes each); the rest scales with them.
  MapSizes z;
  const uint64_t bytes = mb << 20;
  z.row_chunks = static_cast<uint32_t>(std::max<uint64_t>(16, bytes * 7 / 10 / (EHP_ROW_CHUNK_ROWS * EHP_ROW_BYTES)));
  z.pages = std::max<uint32_t>(1024, z.row_chunks * 16);
  // ~1 palette entry per 30 rows in Debian's libraries; 4 entries a word.
  z.palette_words = std::max<uint32_t>(4096, z.row_chunks * EHP_ROW_CHUNK_ROWS / 60);
  z.rules = std::max<uint32_t>(4096, z.row_chunks * 64);
  return z;
}

}  // namespace ehprof
