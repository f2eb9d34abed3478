// JIT symbols from /tmp/perf-PID.map, the file JITs (V8, the JVM with
// perf-map-agent, LuaJIT, ...) write for perf: "START SIZE name" a line,
// hex without 0x, runtime addresses. Read, cached per process and re-read
// as it grows by JitSymbols (agent/resolve/frame_locator.h).
#ifndef EHPROF_SYMBOLIZER_PERF_MAP_H_
#define EHPROF_SYMBOLIZER_PERF_MAP_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ehprof {

class PerfMap {
 public:
  // Parses the text; lines that are not "HEX HEX name" are skipped and
  // counted (a JIT may be writing the file while we read it).
  static PerfMap Parse(std::string_view text);
  // Adds the lines of `text`, written after those parsed before (a JIT
  // appends): they win over earlier ones for the same address. Stops
  // before a line once size() or bytes() has reached its bound; returns
  // the bytes of `text` taken (whole lines, or all of it).
  size_t Append(std::string_view text, size_t max_entries = SIZE_MAX, size_t max_bytes = SIZE_MAX);

  // The symbol covering the runtime address; later lines win over earlier
  // ones for the same address (JITs append when code is replaced).
  std::optional<std::string> Find(uint64_t addr) const;
  size_t size() const { return entries_.size(); }
  // Memory the entries hold (their names and bookkeeping), for bounds.
  size_t bytes() const { return bytes_; }
  size_t bad_lines() const { return bad_lines_; }

 private:
  struct Entry {
    uint64_t start, end;
    size_t order;
    std::string name;
  };
  std::vector<Entry> entries_;  // sorted by start, then order
  size_t bytes_ = 0;
  size_t bad_lines_ = 0;
  size_t next_order_ = 0;
};

}  // namespace ehprof

#endif  // EHPROF_SYMBOLIZER_PERF_MAP_H_
