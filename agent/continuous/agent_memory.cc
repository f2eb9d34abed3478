#include "agent/continuous/agent_memory.h"

#include <malloc.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace ehprof {

void ConfigureAgentMalloc() {
  mallopt(M_ARENA_MAX, 2);
  // Fixed thresholds also turn off glibc's dynamic raising of them, which
  // would keep a freed multi-MB table-build buffer in the heap.
  mallopt(M_MMAP_THRESHOLD, 256 << 10);
  mallopt(M_TRIM_THRESHOLD, 1 << 20);
}

void ReturnFreedMemory() { malloc_trim(0); }

uint32_t AgentRingBytes(unsigned cpus, uint64_t hz, bool off_cpu) {
  constexpr uint64_t kMin = 2u << 20, kMax = 16u << 20;
  if (off_cpu) return kMax;
  const uint64_t need = uint64_t{std::max(cpus, 1u)} * std::max<uint64_t>(hz, 1) * 2048 / 2;
  uint64_t bytes = kMin;
  while (bytes < need && bytes < kMax) bytes <<= 1;
  return static_cast<uint32_t>(bytes);
}

MemoryBreakdown ParseMemoryBreakdown(absl::string_view smaps, uint64_t heap_in_use) {
  MemoryBreakdown m;
  bool bpf = false, anon_map = false;
  for (absl::string_view line : absl::StrSplit(smaps, '\n')) {
    if (line.empty()) continue;
    // A mapping's header: "start-end perms offset dev inode [path]".
    const size_t dash = line.find('-');
    if (dash != absl::string_view::npos && dash > 0 &&
        line.find_first_not_of("0123456789abcdef") == dash) {
      std::vector<absl::string_view> f = absl::StrSplit(line, ' ', absl::SkipEmpty());
      const absl::string_view path = f.size() > 5 ? f[5] : "";
      bpf = absl::StartsWith(path, "anon_inode:bpf");
      anon_map = path.empty() || path[0] == '[' || absl::StartsWith(path, "anon_inode:");
      continue;
    }
    if (!absl::ConsumePrefix(&line, "Rss:")) continue;
    uint64_t kb = 0;
    if (!absl::SimpleAtoi(absl::StripSuffix(absl::StripAsciiWhitespace(line), " kB"), &kb)) continue;
    const uint64_t bytes = kb << 10;
    m.rss += bytes;
    if (bpf) {
      m.ring_buffer += bytes;
    } else if (!anon_map) {
      m.files += bytes;
    }
  }
  // In use may count pages never touched (a block malloc'd, not yet
  // written): at most the anonymous resident memory.
  const uint64_t anon = m.rss - m.ring_buffer - m.files;
  m.heap_in_use = std::min<uint64_t>(heap_in_use, anon);
  m.heap_free = anon - m.heap_in_use;
  return m;
}

MemoryBreakdown ReadMemoryBreakdown() {
  std::ifstream f("/proc/self/smaps");
  std::stringstream text;
  text << f.rdbuf();
  const struct mallinfo2 mi = mallinfo2();
  return ParseMemoryBreakdown(text.str(), mi.uordblks + mi.hblkhd);
}

}  // namespace ehprof
