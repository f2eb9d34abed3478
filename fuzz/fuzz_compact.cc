// libFuzzer target: the compact encoder and the lookup shared with BPF
// (bpf/compact_lookup.h via CompactLookup) against a plain binary search.
//
// Input: a little program that generates sorted unwind rows (see
// RowGenerator), so every input is valid encoder input and the fuzzer spends
// its time on table shapes rather than on being rejected: big gaps, 64 KiB
// and 256-byte page edges, the top of the address space, rules the compact
// form cannot hold, and long runs that force pages to split (more than
// EHP_MAX_PAGE_ROWS rows or EHP_PALETTE_MAX rules in one page).
// The checks are CheckCompactRoundTrip's (round_trip.cc), shared with
// fuzz_cfi and fuzz_elf. Seeds: testdata/seeds/compact (see docs/RELIABILITY.md).
#include <cstddef>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

#include "unwind_tables/unwind_row.h"

namespace ehprof::fuzz {

// In round_trip.cc.
void CheckCompactRoundTrip(const std::vector<UnwindRow>& rows);

namespace {

constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();
// Just over the encoder's 65536 distinct rules, so that limit is reachable,
// while one input stays near a tenth of a second at most (under ASan).
constexpr size_t kMaxRows = 70000;

// Reads the input; past its end every read is 0, so decoding always ends.
class Reader {
 public:
  Reader(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  bool empty() const { return pos_ >= size_; }
  uint8_t U8() { return pos_ < size_ ? data_[pos_++] : 0; }
  uint64_t Bytes(int n) {
    uint64_t v = 0;
    for (int i = 0; i < n; ++i) v |= uint64_t{U8()} << (8 * i);
    return v;
  }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

// cfa = rsp + cfa_offset, ra at cfa - 8: the common shape.
UnwindRule RspRule(int64_t cfa_offset) {
  return NarrowRule({.cfa_offset = cfa_offset, .ra_offset = -8, .cfa_kind = EHP_CFA_REG,
                     .cfa_reg = EHP_REG_RSP, .ra_kind = EHP_RULE_CFA_OFFSET});
}

// Offsets drawn from the input, sometimes scaled past what ehp_rule holds
// (the row is then encoded as unsupported and counted) or past 32 bits
// (NarrowRule makes it unsupported, as the builder does).
int64_t Offset(Reader& in, int bytes) {
  const uint8_t scale = in.U8();
  int64_t v = static_cast<int64_t>(in.Bytes(bytes));
  if (bytes == 2) v = static_cast<int16_t>(v);
  if (bytes == 4) v = static_cast<int32_t>(v);
  return (scale & 0x80) ? v * (int64_t{1} << (scale & 31)) : v;
}

// The builder's rules carry no stray fields (cfa_program.cc zeroes what a
// kind does not use), and the compact form does not keep them either; with
// them cleared an encodable rule must round-trip exactly.
UnwindRule Canonical(UnwindRule r) {
  if (r.is_none()) return UnwindRule::None();
  if (r.cfa_kind != EHP_CFA_REG && r.cfa_kind != EHP_CFA_DEREF) {
    r.cfa_reg = 0;
    r.cfa_offset = 0;
  }
  if (r.cfa_kind != EHP_CFA_DEREF) r.cfa_deref_add = 0;
  if (r.rbp_kind != EHP_RULE_CFA_OFFSET && r.rbp_kind != EHP_RULE_DEREF) r.rbp_offset = 0;
  if (r.rbp_kind != EHP_RULE_DEREF) r.rbp_reg = 0;
  if (r.ra_kind != EHP_RULE_CFA_OFFSET) r.ra_offset = 0;
  r.flags &= EHP_RULE_FLAG_SIGNAL | EHP_RULE_FLAG_RA_SIGNED;
  return r;
}

// Every field from the input, including kinds the BPF walker refuses,
// narrowed into a row's rule as the builder narrows its state.
UnwindRule RawRule(Reader& in) {
  WideRule r;
  r.cfa_kind = in.U8() % (EHP_CFA_EXPR + 1);
  r.cfa_reg = in.U8();
  r.cfa_offset = Offset(in, 4);
  r.cfa_deref_add = Offset(in, 2);
  r.rbp_kind = in.U8() % (EHP_RULE_OTHER + 1);
  r.rbp_reg = in.U8();
  r.rbp_offset = Offset(in, 2);
  r.ra_kind = in.U8() % (EHP_RULE_OTHER + 1);
  r.ra_offset = Offset(in, 2);
  r.flags = in.U8();
  return NarrowRule(r);
}

// Turns the input into rows: a start address, then per step a gap and a
// rule (or a whole run of rows). Addresses only go up and never wrap.
class RowGenerator {
 public:
  explicit RowGenerator(Reader& in) : in_(in) {}

  std::vector<UnwindRow> Generate() {
    start_ = Start();
    rows_.push_back({start_, Rule(in_.U8())});
    while (!in_.empty() && rows_.size() < kMaxRows) {
      const uint8_t op = in_.U8();
      if ((op & 7) == 6) {
        if (!Run(op)) break;
        continue;
      }
      uint64_t addr = rows_.back().addr;
      if (!Advance(op, &addr)) break;
      rows_.push_back({addr, Rule(in_.U8())});
    }
    // Rows must end with a none row; at the very top it replaces the last.
    if (!rows_.back().rule.is_none()) {
      if (rows_.back().addr == kMax) {
        rows_.back().rule = UnwindRule::None();
      } else {
        rows_.push_back({rows_.back().addr + 1, UnwindRule::None()});
      }
    }
    return std::move(rows_);
  }

 private:
  uint64_t Start() {
    const uint8_t b = in_.U8();
    switch (b & 7) {
      case 0: return 0;
      case 1: return 0x1000 + (b >> 3);
      case 2: return 0x400000 + in_.Bytes(2);
      case 3: return 0x7f0000000000 + (in_.Bytes(2) << 8);
      case 4: return kMax - in_.Bytes(2);                 // the top of the address space
      case 5: return (in_.Bytes(2) << 16) - (b >> 3);     // just below a 64 KiB edge
      case 6: return in_.Bytes(8);
      default: return in_.Bytes(1) << 16;                 // on a 64 KiB edge
    }
  }

  // Moves *addr up by a gap the op chooses; false when it would wrap.
  bool Advance(uint8_t op, uint64_t* addr) {
    const uint64_t a = *addr;
    const uint8_t arg = op >> 3;  // 0..31
    uint64_t next = 0;
    switch (op & 7) {
      case 0: next = a + 1 + arg; break;
      case 1: next = a + 1 + in_.Bytes(2); break;
      case 2: {  // around the next 64 KiB page edge: edge - 16 .. edge + 15
        const uint64_t edge = start_ + ((a - start_) | 0xffff) + 1;
        if (edge <= a) return false;
        next = edge + arg - 16;
        if (next <= a) next = edge;
        break;
      }
      case 3: next = a + (uint64_t{1} << (16 + arg)) + in_.U8(); break;  // 64 KiB .. 128 TiB
      case 4: next = start_ + ((a - start_) | 0xff) + 1; break;  // the next 256-byte page or bucket
      case 5: next = a + in_.Bytes(8); break;
      default: next = kMax - in_.Bytes(2); break;  // near the top
    }
    if (next <= a) return false;
    *addr = next;
    return true;
  }

  // A run of rows `stride` bytes apart: enough of them in one page to pass
  // EHP_MAX_PAGE_ROWS, or with enough distinct rules to pass
  // EHP_PALETTE_MAX, so the encoder has to shrink its pages.
  bool Run(uint8_t op) {
    const uint8_t m = in_.U8();
    // Mostly short runs (8..224 rows); a long one (512..4096) now and then,
    // as the fuzzer's executions per second depend on the rows per input.
    const size_t n = m & 0x1f;
    const size_t count = n < 28 ? 8 * (n + 1) : size_t{512} << (n - 28);
    const uint64_t stride = 1 + (op >> 3) % 16;
    const uint8_t mode = m >> 6;
    uint64_t addr = rows_.back().addr;
    for (size_t i = 0; i < count && rows_.size() < kMaxRows; ++i) {
      if (kMax - addr < stride) return false;
      addr += stride;
      UnwindRule r;
      switch (mode) {
        case 0: r = RspRule(8 + 8 * (i & 1)); break;       // two rules
        case 1: r = RspRule(8 * ++distinct_); break;        // all distinct
        case 2: r = RspRule(8 + 8 * (i % 257)); break;      // one more than a palette
        default: r = i % 64 == 63 ? UnwindRule::None() : RspRule(16); break;
      }
      rows_.push_back({addr, r});
    }
    return true;
  }

  // One byte picks a common rule shape; 0xf0 and up read every field.
  UnwindRule Rule(uint8_t b) { return Canonical(AnyRule(b)); }

  UnwindRule AnyRule(uint8_t b) {
    const int k = b & 15;
    UnwindRule r;
    switch (b >> 4) {
      case 0: case 1: case 2: case 3: return RspRule(8 * (1 + (b & 63)));
      case 4:  // a frame-pointer function
        r = RspRule(16 + k);
        r.cfa_reg = EHP_REG_RBP;
        r.rbp_kind = EHP_RULE_CFA_OFFSET;
        r.rbp_offset = -16;
        return r;
      case 5:
        r = RspRule(8);
        r.cfa_kind = (k & 1) ? EHP_CFA_PLT_LIT11 : EHP_CFA_PLT_LIT10;
        return r;
      case 6: case 7: return UnwindRule::None();
      case 8:  // a realigned stack
        r = RspRule(-8 * k);
        r.cfa_kind = EHP_CFA_DEREF;
        r.cfa_deref_add = 8;
        r.rbp_kind = EHP_RULE_DEREF;
        r.rbp_reg = EHP_REG_RBP;
        return r;
      case 9:  // unsupported kinds
        r = RspRule(8);
        if (k & 1) r.cfa_kind = EHP_CFA_EXPR;
        if (k & 2) r.rbp_kind = EHP_RULE_OTHER;
        if (k & 4) r.ra_kind = EHP_RULE_OTHER;
        if (k & 8) r.ra_kind = EHP_RULE_UNDEFINED;
        return r;
      case 10:
        r = RspRule(8 * (1 + k));
        r.flags = EHP_RULE_FLAG_SIGNAL;
        return r;
      case 11: return RspRule(8 * ++distinct_);
      case 12: case 13: case 14:  // the same as the row before
        return rows_.empty() ? UnwindRule::None() : rows_.back().rule;
      default: return RawRule(in_);
    }
  }

  Reader& in_;
  std::vector<UnwindRow> rows_;
  uint64_t start_ = 0;  // pages are counted from the first row
  int64_t distinct_ = 0;
};

}  // namespace
}  // namespace ehprof::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ehprof::fuzz;
  Reader in(data, size);
  CheckCompactRoundTrip(RowGenerator(in).Generate());
  return 0;
}
