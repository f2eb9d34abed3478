#include "unwind_tables/compact_table_check.h"

#include <cstdint>

#include "absl/strings/str_cat.h"
#include "bpf/compact_lookup.h"

namespace ehprof {
namespace {

// Pages a table may have: EncodeCompactTable's own bound (65536 pages).
constexpr uint64_t kMaxPages = uint64_t{1} << 16;

absl::Status Bad(const std::string& name, const std::string& what) {
  return absl::DataLossError(absl::StrCat(name, ": compact table: ", what));
}

bool KnownRule(const ehp_rule& r) {
  if (r.cfa_kind > EHP_CFA_EXPR || r.rbp_kind > EHP_RULE_OTHER || r.ra_kind > EHP_RULE_REGISTER) {
    return false;
  }
  // A register return address: one of x86-64's general registers.
  if (r.ra_kind == EHP_RULE_REGISTER && (r.ra_offset < 0 || r.ra_offset >= EHP_REG_RIP)) return false;
  // x86-64's registers end at rip (16), aarch64's at sp (31).
  if (r.cfa_reg > EHP_A64_REG_SP || r.rbp_reg > EHP_A64_REG_SP) return false;
  // rbx in a save slot: cfa_deref_add is its offset, so not with a
  // dereferenced CFA; saved and unchanged at once is no rule.
  const uint8_t rbx = r.flags & (EHP_RULE_FLAG_RBX_SAVED | EHP_RULE_FLAG_RBX_SAME);
  if ((rbx & EHP_RULE_FLAG_RBX_SAVED) && r.cfa_kind != EHP_CFA_REG) return false;
  if (rbx == (EHP_RULE_FLAG_RBX_SAVED | EHP_RULE_FLAG_RBX_SAME)) return false;
  return (r.flags & ~uint8_t{EHP_RULE_FLAG_SIGNAL | EHP_RULE_FLAG_RA_SIGNED | EHP_RULE_FLAG_SAVED_FROM_REG |
                             EHP_RULE_FLAG_RBX_SAVED | EHP_RULE_FLAG_RBX_SAME}) == 0;
}

absl::Status CheckPage(const CompactTable& t, size_t p, uint32_t palette_count,
                       const std::string& name) {
  const ehp_page& pg = t.pages[p];
  const uint8_t* rows = t.rows.data();
  const uint32_t page_size_limit = uint32_t{1} << t.page_shift;
  for (uint32_t i = 0; i < pg.num_rows; ++i) {
    const uint32_t addr = ehp_row_addr(rows, pg.first_row + i);
    if (i == 0 && addr != 0) return Bad(name, absl::StrCat("page ", p, " does not start at 0"));
    if (i > 0 && addr <= ehp_row_addr(rows, pg.first_row + i - 1)) {
      return Bad(name, absl::StrCat("page ", p, " rows not increasing at row ", i));
    }
    if (addr >= page_size_limit) return Bad(name, absl::StrCat("page ", p, " row past the page"));
    if (ehp_row_palette(rows, pg.first_row + i) >= palette_count) {
      return Bad(name, absl::StrCat("page ", p, " row ", i, " palette index out of range"));
    }
  }
  // Bucket b starts at the last row at or before its first address.
  uint32_t k = 0;
  for (uint32_t b = 0; b < EHP_BUCKETS_PER_PAGE; ++b) {
    const uint32_t bucket_key = b << (t.page_shift - EHP_BUCKET_BITS);
    while (k + 1 < pg.num_rows && ehp_row_addr(rows, pg.first_row + k + 1) <= bucket_key) ++k;
    if (t.buckets[p].start[b] != k) {
      return Bad(name, absl::StrCat("page ", p, " bucket ", b, " start is not exact"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateCompactTable(const CompactTable& t, const std::string& name) {
  // What the encoder makes of a file without CFI: nothing to look up.
  if (t.pages.empty() && t.buckets.empty() && t.rows.empty() && t.palette.empty() &&
      t.rules.empty() && t.start == 0 && t.end == 0) {
    return absl::OkStatus();
  }
  if (t.page_shift < EHP_PAGE_SHIFT_MIN || t.page_shift > EHP_PAGE_SHIFT_MAX) {
    return Bad(name, absl::StrCat("page shift ", t.page_shift, " out of range"));
  }
  if (t.end <= t.start) return Bad(name, "end not after start");
  const uint64_t pages = ((t.end - 1 - t.start) >> t.page_shift) + 1;
  if (pages > kMaxPages || t.pages.size() != pages || t.buckets.size() != pages) {
    return Bad(name, absl::StrCat(t.pages.size(), " pages where start/end/shift make ", pages));
  }
  if (t.rows.size() % EHP_ROW_BYTES != 0) return Bad(name, "row bytes not whole rows");
  if (t.rules.empty() || t.rules.size() > (size_t{1} << 16)) return Bad(name, "rule count");
  for (const ehp_rule& r : t.rules) {
    if (!KnownRule(r)) return Bad(name, "a rule of unknown kind");
  }
  for (uint16_t id : t.palette) {
    if (id >= t.rules.size()) return Bad(name, "a palette entry names no rule");
  }
  uint64_t next_row = 0;
  for (size_t p = 0; p < pages; ++p) {
    const ehp_page& pg = t.pages[p];
    if (pg.first_row != next_row || pg.num_rows == 0 || pg.num_rows > EHP_MAX_PAGE_ROWS ||
        uint64_t{pg.first_row} + pg.num_rows > t.num_rows() || pg.pad != 0) {
      return Bad(name, absl::StrCat("page ", p, " rows out of place"));
    }
    next_row += pg.num_rows;
    const uint64_t palette_end = p + 1 < pages ? t.pages[p + 1].first_palette : t.palette.size();
    if (pg.first_palette >= palette_end || palette_end > t.palette.size() ||
        palette_end - pg.first_palette > EHP_PALETTE_MAX) {
      return Bad(name, absl::StrCat("page ", p, " palette out of place"));
    }
    if (absl::Status s = CheckPage(t, p, static_cast<uint32_t>(palette_end - pg.first_palette), name);
        !s.ok()) {
      return s;
    }
  }
  if (next_row != t.num_rows()) return Bad(name, "rows no page holds");
  return absl::OkStatus();
}

}  // namespace ehprof
