// The check shared by the unwind-table fuzz targets: the compact table is
// what the BPF unwinder sees, so it must answer every lookup exactly as the
// plain rows do. Compiled without coverage instrumentation
// (fuzz/CMakeLists.txt): it runs several lookups per row, which with
// libFuzzer's comparison tracing cost more than the code under test, and its
// branches are not coverage worth chasing. Failures trap rather than return,
// so libFuzzer records the input.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "bpf/compact_lookup.h"
#include "unwind_tables/compact_table.h"
#include "unwind_tables/unwind_row.h"

namespace ehprof::fuzz {
namespace {

constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();
// The encoder's bounds (compact_table.cc): rule ids are u16; at the
// smallest page size 65536 pages span 16 MiB, so a denser table must fit.
constexpr size_t kMaxRules = 65536;
constexpr uint64_t kAlwaysDenseEnough = uint64_t{1} << (16 + EHP_PAGE_SHIFT_MIN);

bool SameRule(const ehp_rule& a, const ehp_rule& b) {
  return std::memcmp(&a, &b, sizeof(ehp_rule)) == 0;
}

// The oracle: the rule of the last row at or below pc, none below the first
// row. (Written here rather than reusing LookupPlainRow, so the check does
// not share code with what it checks.)
UnwindRule PlainLookup(const std::vector<UnwindRow>& rows, uint64_t pc) {
  auto it = std::upper_bound(rows.begin(), rows.end(), pc,
                             [](uint64_t a, const UnwindRow& r) { return a < r.addr; });
  return it == rows.begin() ? UnwindRule::None() : std::prev(it)->rule;
}

void CheckLookup(const std::vector<UnwindRow>& rows, const CompactTable& t, uint64_t pc) {
  ehp_rule want;
  ToCompactRule(PlainLookup(rows, pc), &want);
  if (!SameRule(want, CompactLookup(t, pc))) __builtin_trap();
}

// What the BPF side relies on without checking (ehprof_abi.h): one page per
// page size from start, each with 1..EHP_MAX_PAGE_ROWS rows, the first at
// offset 0, ascending; palette slots and rule ids in range; bucket starts
// where ehp_bucket_range expects them.
void CheckLayout(const CompactTable& t) {
  if (t.end <= t.start) {
    if (!t.pages.empty() || !t.rows.empty()) __builtin_trap();
    return;
  }
  if (t.page_shift < EHP_PAGE_SHIFT_MIN || t.page_shift > EHP_PAGE_SHIFT_MAX) __builtin_trap();
  // One page per (1 << page_shift) bytes from start: the lookup indexes
  // pages by that without a bound.
  if (t.num_pages() != ((t.end - 1 - t.start) >> t.page_shift) + 1) __builtin_trap();
  if (t.buckets.size() != t.pages.size()) __builtin_trap();
  uint32_t next_row = 0, next_palette = 0;
  for (size_t p = 0; p < t.pages.size(); ++p) {
    const ehp_page& pg = t.pages[p];
    if (pg.first_row != next_row || pg.first_palette != next_palette) __builtin_trap();
    if (pg.num_rows < 1 || pg.num_rows > EHP_MAX_PAGE_ROWS) __builtin_trap();
    next_row += pg.num_rows;
    next_palette = p + 1 < t.pages.size() ? t.pages[p + 1].first_palette
                                          : static_cast<uint32_t>(t.palette.size());
    const uint32_t slots = next_palette - pg.first_palette;
    if (slots < 1 || slots > EHP_PALETTE_MAX || next_palette > t.palette.size()) __builtin_trap();
    if (next_row > t.num_rows()) __builtin_trap();
    if (ehp_row_addr(t.rows.data(), pg.first_row) != 0) __builtin_trap();
    for (uint32_t i = 0; i < pg.num_rows; ++i) {
      const uint32_t row = pg.first_row + i;
      if (ehp_row_palette(t.rows.data(), row) >= slots) __builtin_trap();
      if (i > 0 && ehp_row_addr(t.rows.data(), row) <= ehp_row_addr(t.rows.data(), row - 1)) {
        __builtin_trap();
      }
      if (t.page_shift < 16 && (ehp_row_addr(t.rows.data(), row) >> t.page_shift) != 0) {
        __builtin_trap();
      }
    }
    // Bucket b starts at the last row at or below its first address. A
    // one-row page (most of a sparse table) has them all 0: one compare.
    static const ehp_buckets kZero{};
    if (pg.num_rows == 1) {
      if (std::memcmp(&t.buckets[p], &kZero, sizeof(kZero)) != 0) __builtin_trap();
      continue;
    }
    for (uint32_t b = 0; b < EHP_BUCKETS_PER_PAGE; ++b) {
      const uint32_t key = b << (t.page_shift - EHP_BUCKET_BITS);
      const uint32_t s = t.buckets[p].start[b];
      if (s >= pg.num_rows || ehp_row_addr(t.rows.data(), pg.first_row + s) > key ||
          (s + 1 < pg.num_rows && ehp_row_addr(t.rows.data(), pg.first_row + s + 1) <= key)) {
        __builtin_trap();
      }
    }
  }
  if (next_row != t.num_rows()) __builtin_trap();
  for (uint16_t id : t.palette) {
    if (id >= t.rules.size()) __builtin_trap();
  }
}

// The encoder may refuse valid rows only for size, and only when they are
// really too many rules or too sparse.
void CheckRefusal(const std::vector<UnwindRow>& rows, const absl::Status& st) {
  if (st.code() != absl::StatusCode::kResourceExhausted) __builtin_trap();
  if (std::string(st.message()).find("fuzz") == std::string::npos) __builtin_trap();
  if (rows.back().addr - rows.front().addr > kAlwaysDenseEnough) return;
  std::vector<std::pair<uint64_t, uint64_t>> distinct(rows.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    ehp_rule r;
    ToCompactRule(rows[i].rule, &r);
    std::memcpy(&distinct[i], &r, sizeof(r));
  }
  std::sort(distinct.begin(), distinct.end());
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  if (distinct.size() <= kMaxRules) __builtin_trap();
}

// Encodable rules survive the trip to ehp_rule and back; the others are
// counted.
void CheckRules(const std::vector<UnwindRow>& rows, const CompactTable& t) {
  uint64_t unencodable = 0;
  for (const UnwindRow& row : rows) {
    ehp_rule c;
    if (!ToCompactRule(row.rule, &c)) {
      ++unencodable;
    } else if (!(FromCompactRule(c) == row.rule)) {
      __builtin_trap();  // an encodable rule must survive the round trip
    }
  }
  if (unencodable != t.unencodable_rows) __builtin_trap();
}

void CheckLookups(const std::vector<UnwindRow>& rows, const CompactTable& t) {
  // Each row's first and last address, one in between, and the edges of the
  // bucket it starts in (where the search's range comes from).
  CheckLookup(rows, t, 0);
  CheckLookup(rows, t, kMax);
  const uint64_t bucket_mask = (uint64_t{1} << (t.page_shift - EHP_BUCKET_BITS)) - 1;
  for (size_t i = 0; i < rows.size(); ++i) {
    const uint64_t a = rows[i].addr;
    CheckLookup(rows, t, a);
    if (a > 0) CheckLookup(rows, t, a - 1);
    if (i + 1 < rows.size()) {
      const uint64_t end = rows[i + 1].addr;
      CheckLookup(rows, t, end - 1);
      CheckLookup(rows, t, a + (end - a) / 2);
    }
    if (a >= t.start && a < t.end) {
      const uint64_t bucket = t.start + ((a - t.start) & ~bucket_mask);
      CheckLookup(rows, t, bucket);
      if (bucket > 0) CheckLookup(rows, t, bucket - 1);
    }
  }
  // Page starts, where the encoder repeats the rule in force, and the last
  // address of the page before; pages without rows only matter here. A
  // sparse table has up to 65536 pages: its first and last 2048 are checked.
  constexpr size_t kEdgePages = 2048;
  const size_t pages = t.num_pages();
  for (size_t p = 0; p < pages; ++p) {
    if (p == kEdgePages && pages > 2 * kEdgePages) p = pages - kEdgePages;
    const uint64_t lo = t.start + (uint64_t{p} << t.page_shift);
    CheckLookup(rows, t, lo);
    CheckLookup(rows, t, lo - 1);
  }
}

}  // namespace

// Declared in each fuzz target (the fuzz/ directory holds no headers).
// `rows` must be valid encoder input: sorted, ending with a none row.
void CheckCompactRoundTrip(const std::vector<UnwindRow>& rows) {
  auto table = EncodeCompactTable(rows, "fuzz");
  if (!table.ok()) {
    CheckRefusal(rows, table.status());
    return;
  }
  const CompactTable& t = *table;
  if (rows.empty()) {
    if (t.num_pages() != 0 || t.num_rows() != 0) __builtin_trap();
    return;
  }
  if (t.start != rows.front().addr || t.end != rows.back().addr) __builtin_trap();
  CheckLayout(t);
  CheckRules(rows, t);
  CheckLookups(rows, t);
}

}  // namespace ehprof::fuzz
