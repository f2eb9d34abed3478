#include "unwind_tables/compact_table.h"

#include <cstring>
#include <limits>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "bpf/compact_lookup.h"
#include "bpf/ehprof_abi.h"

namespace ehprof {
namespace {

// A hostile file could spread a few rows over the whole address space;
// bound the dense page array: each page costs 16 bytes plus 512 of bucket
// starts, so 65536 pages (4 GiB of code at 64 KiB a page) is 34 MiB.
constexpr uint64_t kMaxPages = 1u << 16;
constexpr uint64_t kMaxRules = std::numeric_limits<uint16_t>::max() + 1ull;

template <typename T>
bool Fits(int64_t v) {
  return v >= std::numeric_limits<T>::min() && v <= std::numeric_limits<T>::max();
}

std::pair<uint64_t, uint64_t> Key(const ehp_rule& r) {
  static_assert(sizeof(ehp_rule) == 16);
  std::pair<uint64_t, uint64_t> k;
  std::memcpy(&k, &r, sizeof(r));
  return k;
}

// Fills pages / buckets / rows / palette for one page size; false when some
// page needs more than EHP_PALETTE_MAX distinct rules or EHP_MAX_PAGE_ROWS
// rows.
bool Layout(const std::vector<UnwindRow>& rows, const std::vector<uint16_t>& ids,
            uint32_t shift, CompactTable* t) {
  const uint64_t page_size = uint64_t{1} << shift;
  const uint64_t num_pages = ((t->end - 1 - t->start) >> shift) + 1;
  t->page_shift = shift;
  t->pages.clear();
  t->buckets.clear();
  t->rows.clear();
  t->palette.clear();
  t->pages.reserve(num_pages);
  t->buckets.reserve(num_pages);
  t->rows.reserve((rows.size() + num_pages) * EHP_ROW_BYTES);
  // slot_of[rule id] = palette slot + 1 in the current page (0: not yet).
  std::vector<uint16_t> slot_of(t->rules.size(), 0);
  std::vector<uint16_t> page_rules;
  size_t i = 0;  // next row to place
  for (uint64_t p = 0; p < num_pages; ++p) {
    const uint64_t lo = t->start + (p << shift);
    const auto first = static_cast<uint32_t>(t->num_rows());
    page_rules.clear();
    auto place = [&](uint64_t addr, uint16_t id) {
      if (t->num_rows() - first == EHP_MAX_PAGE_ROWS) return false;
      if (slot_of[id] == 0) {
        if (page_rules.size() == EHP_PALETTE_MAX) return false;
        page_rules.push_back(id);
        slot_of[id] = static_cast<uint16_t>(page_rules.size());
      }
      const auto a = static_cast<uint16_t>(addr - lo);
      t->rows.push_back(static_cast<uint8_t>(a & 0xff));
      t->rows.push_back(static_cast<uint8_t>(a >> 8));
      t->rows.push_back(static_cast<uint8_t>(slot_of[id] - 1));
      return true;
    };
    bool ok = true;
    // Every page starts with a row at offset 0: the one in force there.
    if (i == rows.size() || rows[i].addr != lo) ok = place(lo, ids[i - 1]);
    // rows[i].addr >= lo here, so the difference cannot wrap even for the
    // last page of the address space (where lo + page_size would).
    for (; ok && i < rows.size() && rows[i].addr - lo < page_size; ++i) {
      ok = place(rows[i].addr, ids[i]);
    }
    for (uint16_t id : page_rules) slot_of[id] = 0;
    if (!ok) return false;
    const auto count = static_cast<uint32_t>(t->num_rows()) - first;
    t->pages.push_back({first, count, static_cast<uint32_t>(t->palette.size()), 0});
    // Bucket starts: the last row at or before each bucket's first address.
    // A page with one row (most pages of a sparse table) keeps them all 0,
    // as emplace_back left them; scanning 256 buckets for each of up to
    // 65536 such pages was most of the time spent encoding a sparse table.
    ehp_buckets& bk = t->buckets.emplace_back();
    uint32_t k = 0;
    for (uint32_t b = 0; count > 1 && b < EHP_BUCKETS_PER_PAGE; ++b) {
      const uint32_t bucket_key = b << (shift - EHP_BUCKET_BITS);
      while (k + 1 < count && ehp_row_addr(t->rows.data(), first + k + 1) <= bucket_key) ++k;
      bk.start[b] = static_cast<uint16_t>(k);
    }
    t->palette.insert(t->palette.end(), page_rules.begin(), page_rules.end());
  }
  return true;
}

}  // namespace

namespace {

// The second form of a rule: a frame too big for s16 offsets from the CFA
// (aarch64 keeps the x29/x30 frame record at sp, the bottom of the frame:
// cfa=sp+192160 x29=cfa-192160 ra=cfa-192152) gets its save slots counted
// from the CFA rule's register instead (x29=*(sp+0), ra=*(sp+8)), marked by
// EHP_RULE_FLAG_SAVED_FROM_REG. False when that does not fit either.
bool ToSavedFromRegRule(const UnwindRule& in, ehp_rule* out) {
  if (in.cfa_kind != EHP_CFA_REG || !Fits<int32_t>(in.cfa_offset)) return false;
  const bool rbp_slot = in.rbp_kind == EHP_RULE_CFA_OFFSET;
  const bool ra_slot = in.ra_kind == EHP_RULE_CFA_OFFSET;
  if (!rbp_slot && !ra_slot) return false;
  if (in.rbp_kind == EHP_RULE_DEREF && !Fits<int16_t>(in.rbp_offset)) return false;
  const bool rbx_slot = (in.flags & EHP_RULE_FLAG_RBX_SAVED) != 0;
  int64_t rbp = in.rbp_offset, ra = in.ra_offset, rbx = in.cfa_deref_add;
  if ((rbp_slot && (__builtin_add_overflow(rbp, in.cfa_offset, &rbp) || !Fits<int16_t>(rbp))) ||
      (ra_slot && (__builtin_add_overflow(ra, in.cfa_offset, &ra) || !Fits<int16_t>(ra))) ||
      (rbx_slot && (__builtin_add_overflow(rbx, in.cfa_offset, &rbx) || !Fits<int16_t>(rbx)))) {
    return false;
  }
  *out = ehp_rule{};
  out->cfa_kind = in.cfa_kind;
  out->cfa_reg = in.cfa_reg;
  out->cfa_offset = static_cast<int32_t>(in.cfa_offset);
  out->cfa_deref_add = static_cast<int16_t>(rbx_slot ? rbx : 0);
  out->flags = in.flags | EHP_RULE_FLAG_SAVED_FROM_REG;
  out->rbp_kind = in.rbp_kind;
  out->rbp_reg = in.rbp_reg;
  out->rbp_offset = static_cast<int16_t>(rbp_slot ? rbp : in.rbp_offset);
  out->ra_kind = in.ra_kind;
  out->ra_offset = static_cast<int16_t>(ra_slot ? ra : 0);
  return true;
}

}  // namespace

bool ToCompactRule(const UnwindRule& in, ehp_rule* out) {
  if (!ToPlainCompactRule(in, out)) return ToSavedFromRegRule(in, out);
  return true;
}

bool ToPlainCompactRule(const UnwindRule& in, ehp_rule* out) {
  *out = ehp_rule{};
  bool ok = true;
  out->cfa_kind = in.cfa_kind;
  out->cfa_reg = in.cfa_reg;
  out->flags = in.flags;
  if ((in.cfa_kind == EHP_CFA_REG || in.cfa_kind == EHP_CFA_DEREF) &&
      Fits<int32_t>(in.cfa_offset) && Fits<int16_t>(in.cfa_deref_add)) {
    out->cfa_offset = static_cast<int32_t>(in.cfa_offset);
    out->cfa_deref_add = static_cast<int16_t>(in.cfa_deref_add);
  } else if (in.cfa_kind == EHP_CFA_REG || in.cfa_kind == EHP_CFA_DEREF) {
    out->cfa_kind = EHP_CFA_EXPR;
    out->cfa_reg = 0;
    ok = false;
  }
  if (in.cfa_kind == EHP_CFA_NONE) return true;
  out->rbp_kind = in.rbp_kind;
  out->rbp_reg = in.rbp_reg;
  if (in.rbp_kind == EHP_RULE_CFA_OFFSET || in.rbp_kind == EHP_RULE_DEREF) {
    if (Fits<int16_t>(in.rbp_offset)) {
      out->rbp_offset = static_cast<int16_t>(in.rbp_offset);
    } else {
      out->rbp_kind = EHP_RULE_OTHER;
      out->rbp_reg = 0;
      ok = false;
    }
  }
  out->ra_kind = in.ra_kind;
  if (in.ra_kind == EHP_RULE_REGISTER) out->ra_offset = static_cast<int16_t>(in.ra_offset);  // a register number
  if (in.ra_kind == EHP_RULE_CFA_OFFSET) {
    if (Fits<int16_t>(in.ra_offset)) {
      out->ra_offset = static_cast<int16_t>(in.ra_offset);
    } else {
      out->ra_kind = EHP_RULE_OTHER;
      ok = false;
    }
  }
  return ok;
}

UnwindRule FromCompactRule(const ehp_rule& r) {
  UnwindRule u;
  u.cfa_kind = r.cfa_kind;
  if (r.cfa_kind == EHP_CFA_NONE) return u;
  u.cfa_reg = r.cfa_reg;
  u.cfa_offset = r.cfa_offset;
  u.cfa_deref_add = r.cfa_deref_add;
  u.rbp_kind = r.rbp_kind;
  u.rbp_reg = r.rbp_reg;
  u.rbp_offset = r.rbp_offset;
  u.ra_kind = r.ra_kind;
  u.ra_offset = r.ra_offset;
  u.flags = r.flags;
  if (r.flags & EHP_RULE_FLAG_SAVED_FROM_REG) {
    u.flags &= ~uint8_t{EHP_RULE_FLAG_SAVED_FROM_REG};
    // Back to offsets from the CFA. Rules this encoder wrote came from
    // 32-bit offsets and go back to them; any other (a hostile entry) that
    // would not fit is unsupported.
    const auto from_cfa = [&](uint8_t* kind, int32_t* offset) {
      if (*kind != EHP_RULE_CFA_OFFSET) return;
      const int64_t v = int64_t{*offset} - r.cfa_offset;
      if (Fits<int32_t>(v)) {
        *offset = static_cast<int32_t>(v);
      } else {
        *kind = EHP_RULE_OTHER;
        *offset = 0;
      }
    };
    from_cfa(&u.rbp_kind, &u.rbp_offset);
    from_cfa(&u.ra_kind, &u.ra_offset);
    if (u.flags & EHP_RULE_FLAG_RBX_SAVED) {
      uint8_t kind = EHP_RULE_CFA_OFFSET;
      from_cfa(&kind, &u.cfa_deref_add);
      if (kind != EHP_RULE_CFA_OFFSET) u.flags &= ~uint8_t{EHP_RULE_FLAG_RBX_SAVED};
    }
  }
  return u;
}

uint64_t CompactTable::bytes() const {
  return pages.size() * sizeof(ehp_page) + buckets.size() * sizeof(ehp_buckets) +
         rows.size() + palette.size() * sizeof(uint16_t) +
         rules.size() * sizeof(ehp_rule) + 2 * sizeof(uint64_t) + sizeof(uint32_t);
}

absl::StatusOr<CompactTable> EncodeCompactTable(const std::vector<UnwindRow>& rows,
                                                std::string_view name) {
  CompactTable t;
  if (rows.empty()) return t;
  if (!rows.back().rule.is_none()) {
    return absl::InvalidArgumentError(
        absl::StrCat(std::string(name), ": unwind rows must end with a none row"));
  }
  std::vector<uint16_t> ids(rows.size());
  absl::flat_hash_map<std::pair<uint64_t, uint64_t>, uint16_t> rule_ids;
  for (size_t i = 0; i < rows.size(); ++i) {
    if (i > 0 && rows[i].addr <= rows[i - 1].addr) {
      return absl::InvalidArgumentError(
          absl::StrCat(std::string(name), ": unwind rows are not sorted at row ", i));
    }
    ehp_rule r;
    if (!ToCompactRule(rows[i].rule, &r)) ++t.unencodable_rows;
    auto [it, added] = rule_ids.try_emplace(Key(r), static_cast<uint16_t>(t.rules.size()));
    if (added) {
      if (t.rules.size() == kMaxRules) {
        return absl::ResourceExhaustedError(absl::StrCat(
            std::string(name), ": more than ", kMaxRules, " distinct unwind rules"));
      }
      t.rules.push_back(r);
    }
    ids[i] = it->second;
  }
  t.start = rows.front().addr;
  t.end = rows.back().addr;
  if (t.end == t.start) return t;
  for (uint32_t shift = EHP_PAGE_SHIFT_MAX; shift >= EHP_PAGE_SHIFT_MIN; --shift) {
    if (((t.end - 1 - t.start) >> shift) + 1 > kMaxPages) {
      return absl::ResourceExhaustedError(absl::StrCat(
          std::string(name), ": unwind rows span 0x", absl::Hex(t.end - t.start),
          " bytes, too sparse for the page index"));
    }
    // A 256-byte page holds at most 256 rows, so the last try always fits
    // (EHP_ASSERT in bpf/ehprof_abi.h).
    if (Layout(rows, ids, shift, &t)) return t;
  }
  return absl::InternalError(absl::StrCat(std::string(name), ": no page size fits"));
}

ehp_rule CompactLookup(const CompactTable& t, uint64_t pc) {
  ehp_u32 page;
  ehp_u16 key;
  if (!ehp_page_of(pc, t.start, t.end, t.page_shift, &page, &key)) return ehp_rule{};
  const ehp_page& pg = t.pages[page];
  ehp_u32 lo, hi;
  ehp_bucket_range(&t.buckets[page], pg.num_rows, t.page_shift, key, &lo, &hi);
  const ehp_u32 row = ehp_search_rows(t.rows.data(), pg.first_row + lo, hi - lo, key);
  return t.rules[t.palette[pg.first_palette + ehp_row_palette(t.rows.data(), row)]];
}

}  // namespace ehprof
