// libFuzzer target: text through ParseProcMaps (agent/process/proc_maps.h).
//
// Input: the text of a /proc/PID/maps file. Seeds: testdata/seeds/maps.
// Checks what proc_maps.h (and tests/proc_maps_test.cc) promise: an error
// names "fuzz:LINE:" for the first bad line; on success one entry per line,
// each a non-empty range, and the entries printed back in the kernel's
// layout parse to the same entries.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "agent/process/proc_maps.h"

namespace {

constexpr char kSource[] = "fuzz";

// Where each line starts, as ParseProcMaps splits them: a final '\n' ends
// the last line rather than starting an empty one.
std::vector<size_t> LineStarts(std::string_view text) {
  std::vector<size_t> starts;
  for (size_t pos = 0; pos < text.size();) {
    starts.push_back(pos);
    size_t nl = text.find('\n', pos);
    pos = nl == std::string_view::npos ? text.size() : nl + 1;
  }
  return starts;
}

// The kernel's show_map_entry layout (hex without padding, which the
// parser must take as well); the path goes back with its " (deleted)".
std::string Format(const std::vector<ehprof::MapsEntry>& entries) {
  std::string out;
  for (const ehprof::MapsEntry& e : entries) {
    absl::StrAppendFormat(&out, "%x-%x %c%c%c%c %x %x:%x %u", e.start, e.end,
                          e.read ? 'r' : '-', e.write ? 'w' : '-', e.exec ? 'x' : '-',
                          e.priv ? 'p' : 's', e.offset, e.dev_major, e.dev_minor, e.inode);
    if (!e.path.empty() || e.deleted) {
      absl::StrAppend(&out, "  ", e.path, e.deleted ? " (deleted)" : "");
    }
    out += '\n';
  }
  return out;
}

bool SameEntry(const ehprof::MapsEntry& a, const ehprof::MapsEntry& b) {
  return a.start == b.start && a.end == b.end && a.read == b.read && a.write == b.write &&
         a.exec == b.exec && a.priv == b.priv && a.offset == b.offset &&
         a.dev_major == b.dev_major && a.dev_minor == b.dev_minor && a.inode == b.inode &&
         a.path == b.path && a.deleted == b.deleted;
}

// The error names the first line that does not parse: the lines before it
// parse on their own, that line alone does not.
void CheckError(std::string_view text, const std::vector<size_t>& starts,
                std::string_view msg) {
  const std::string_view prefix = "fuzz:";
  if (msg.substr(0, prefix.size()) != prefix) __builtin_trap();
  size_t line = 0, i = prefix.size();
  for (; i < msg.size() && msg[i] >= '0' && msg[i] <= '9' && line <= starts.size(); ++i) {
    line = line * 10 + (msg[i] - '0');
  }
  if (i >= msg.size() || msg[i] != ':' || line < 1 || line > starts.size()) __builtin_trap();
  const size_t begin = starts[line - 1];
  auto before = ehprof::ParseProcMaps(text.substr(0, begin), kSource);
  if (!before.ok() || before->size() != line - 1) __builtin_trap();
  const size_t end = line < starts.size() ? starts[line] : text.size();
  if (ehprof::ParseProcMaps(text.substr(begin, end - begin), kSource).ok()) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const std::vector<size_t> starts = LineStarts(text);
  auto entries = ehprof::ParseProcMaps(text, kSource);
  if (!entries.ok()) {
    CheckError(text, starts, std::string(entries.status().message()));  // absl's string_view is not std's
    return 0;
  }
  if (entries->size() != starts.size()) __builtin_trap();
  for (const ehprof::MapsEntry& e : *entries) {
    // end is exclusive; empty and reversed ranges are rejected (the kernel
    // never prints them, and callers size buffers by end - start).
    if (e.start >= e.end) __builtin_trap();
    if (e.path.find('\n') != std::string::npos) __builtin_trap();
  }
  auto again = ehprof::ParseProcMaps(Format(*entries), kSource);
  if (!again.ok() || again->size() != entries->size()) __builtin_trap();
  for (size_t i = 0; i < entries->size(); ++i) {
    if (!SameEntry((*entries)[i], (*again)[i])) __builtin_trap();
  }
  return 0;
}
