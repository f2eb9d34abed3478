#include "symbolizer/perf_map.h"

#include <algorithm>
#include <cstddef>

#include "absl/strings/numbers.h"

namespace ehprof {
namespace {

bool ParseHex(std::string_view s, uint64_t* out) {
  // The JVM writes 0x and 16 digits ("0x00007f38b0ec7600"): the prefix
  // does not count towards the 16.
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) s.remove_prefix(2);
  if (s.empty() || s.size() > 16) return false;
  return absl::SimpleHexAtoi(absl::string_view(s.data(), s.size()), out);
}

}  // namespace

PerfMap PerfMap::Parse(std::string_view text) {
  PerfMap m;
  m.Append(text);
  return m;
}

size_t PerfMap::Append(std::string_view text, size_t max_entries, size_t max_bytes) {
  const size_t old_size = entries_.size();
  const size_t length = text.size();
  while (!text.empty() && entries_.size() < max_entries && bytes_ < max_bytes) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) continue;
    size_t a = line.find(' ');
    size_t b = a == std::string_view::npos ? a : line.find(' ', a + 1);
    uint64_t start = 0, size = 0;
    if (b == std::string_view::npos || !ParseHex(line.substr(0, a), &start) ||
        !ParseHex(line.substr(a + 1, b - a - 1), &size) || size == 0 || b + 1 >= line.size() ||
        start + size < start) {
      ++bad_lines_;
      continue;
    }
    entries_.push_back({start, start + size, next_order_++, std::string(line.substr(b + 1))});
    bytes_ += sizeof(Entry) + entries_.back().name.size();
  }
  const auto by_start = [](const Entry& x, const Entry& y) {
    return x.start != y.start ? x.start < y.start : x.order < y.order;
  };
  std::sort(entries_.begin() + static_cast<std::ptrdiff_t>(old_size), entries_.end(), by_start);
  std::inplace_merge(entries_.begin(), entries_.begin() + static_cast<std::ptrdiff_t>(old_size),
                     entries_.end(), by_start);
  return length - text.size();
}

std::optional<std::string> PerfMap::Find(uint64_t addr) const {
  // Entries may overlap (replaced code): take the latest-written one that
  // covers addr among those starting at or before it.
  auto it = std::upper_bound(entries_.begin(), entries_.end(), addr,
                             [](uint64_t a, const Entry& e) { return a < e.start; });
  const Entry* best = nullptr;
  // Bounded look-back: overlapping JIT entries are few.
  for (int steps = 0; it != entries_.begin() && steps < 64; ++steps) {
    --it;
    if (addr < it->end && (!best || it->order > best->order)) best = &*it;
  }
  if (!best) return std::nullopt;
  return best->name;
}

}  // namespace ehprof
