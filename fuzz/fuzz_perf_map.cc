// libFuzzer target: text through PerfMap::Parse, Append and Find
// (symbolizer/perf_map.h).
//
// Input: the text of a /tmp/perf-PID.map. Seeds: testdata/seeds/perf_map.
// The map's entries are private, so the target picks out the lines that are
// plainly "HEX HEX name" itself and checks Find against them: Find(start)
// always names something, and when every line is plain (so the target knows
// all entries) Find agrees with a brute-force search wherever the map's
// bounded look-back reaches.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "symbolizer/perf_map.h"

namespace {

struct PlainEntry {
  uint64_t start, end;
  std::string_view name;
};

// Find looks back over at most this many entries starting at or below the
// address (perf_map.cc); past it, a covering entry may be missed.
constexpr size_t kLookBack = 64;
// The brute-force check is quadratic; past this many entries only the
// cheap checks run, so one input stays fast whatever -max_len is.
constexpr size_t kMaxBruteForce = 512;

bool ParsePlainHex(std::string_view s, uint64_t* out) {
  if (s.empty() || s.size() > 16) return false;
  uint64_t v = 0;
  for (char c : s) {
    int d = c >= '0' && c <= '9'   ? c - '0'
            : c >= 'a' && c <= 'f' ? c - 'a' + 10
            : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                   : -1;
    if (d < 0) return false;
    v = v * 16 + d;
  }
  *out = v;
  return true;
}

// A line the header's "START SIZE name" describes without doubt: bare hex
// (no 0x, no '\r' anywhere), a non-zero size that does not wrap, a name.
// Parse may accept more; it must accept these.
bool ParsePlainLine(std::string_view line, PlainEntry* e) {
  if (line.find('\r') != std::string_view::npos) return false;
  size_t a = line.find(' ');
  if (a == std::string_view::npos) return false;
  size_t b = line.find(' ', a + 1);
  uint64_t size = 0;
  if (b == std::string_view::npos || b + 1 >= line.size() ||
      !ParsePlainHex(line.substr(0, a), &e->start) ||
      !ParsePlainHex(line.substr(a + 1, b - a - 1), &size) || size == 0 ||
      e->start + size < e->start) {
    return false;
  }
  e->end = e->start + size;
  e->name = line.substr(b + 1);
  return true;
}

// What Find should return with no look-back bound: the latest line covering
// addr. Sets *below to how many entries start at or below addr.
std::optional<std::string_view> BruteFind(const std::vector<PlainEntry>& entries, uint64_t addr,
                                          size_t* below) {
  std::optional<std::string_view> best;
  *below = 0;
  for (const PlainEntry& e : entries) {
    if (e.start > addr) continue;
    ++*below;
    if (addr < e.end) best = e.name;  // later lines win
  }
  return best;
}

bool CoveredBy(const std::vector<PlainEntry>& entries, uint64_t addr, std::string_view name) {
  for (const PlainEntry& e : entries) {
    if (e.start <= addr && addr < e.end && e.name == name) return true;
  }
  return false;
}

void CheckAddress(const ehprof::PerfMap& map, const std::vector<PlainEntry>& entries,
                  uint64_t addr) {
  const std::optional<std::string> got = map.Find(addr);
  size_t below = 0;
  const std::optional<std::string_view> want = BruteFind(entries, addr, &below);
  if (below <= kLookBack) {
    if (got.has_value() != want.has_value() || (got && *got != *want)) __builtin_trap();
  } else if (got && !CoveredBy(entries, addr, *got)) {
    // Past the look-back a covering entry may be missed, never invented.
    __builtin_trap();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  const ehprof::PerfMap map = ehprof::PerfMap::Parse(text);
  // Read in two pieces cut at a line's end (a JIT's map read as it grows):
  // the same map.
  const size_t cut = text.find('\n', size / 2);
  ehprof::PerfMap pieces = ehprof::PerfMap::Parse(text.substr(0, cut == std::string_view::npos ? size : cut + 1));
  if (cut != std::string_view::npos) pieces.Append(text.substr(cut + 1));
  if (pieces.size() != map.size() || pieces.bad_lines() != map.bad_lines()) __builtin_trap();

  std::vector<PlainEntry> plain;
  size_t lines = 0, other_lines = 0;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    ++lines;
    PlainEntry e;
    if (ParsePlainLine(line, &e)) {
      plain.push_back(e);
    } else if (!line.empty()) {
      ++other_lines;
    }
  }
  // Every line is an entry, a skipped (counted) bad line, or blank.
  if (map.size() + map.bad_lines() > lines) __builtin_trap();
  if (map.size() < plain.size() || map.bad_lines() > other_lines) __builtin_trap();

  for (const PlainEntry& e : plain) {
    // Any entry starting at an address covers it, and the look-back sees
    // those first.
    if (!map.Find(e.start)) __builtin_trap();
    if (pieces.Find(e.start) != map.Find(e.start)) __builtin_trap();
  }
  // Only when the target knows every entry can it say what Find should return.
  if (other_lines != 0 || plain.size() > kMaxBruteForce) return 0;
  if (map.size() != plain.size() || map.bad_lines() != 0) __builtin_trap();
  for (const PlainEntry& e : plain) {
    CheckAddress(map, plain, e.start);
    CheckAddress(map, plain, e.end - 1);
    CheckAddress(map, plain, e.end);  // may wrap to 0: still a valid query
    CheckAddress(map, plain, e.start - 1);
    CheckAddress(map, plain, e.start + (e.end - e.start) / 2);
  }
  return 0;
}
