// The DWARF expression operations unwinding rules use, decoded; shared by
// the CFA-expression classifier (cfa_expression.cc) and the CFA program
// runner (cfa_program.cc). Internal to unwind_tables.
#ifndef EHPROF_UNWIND_TABLES_CFA_EXPRESSION_H_
#define EHPROF_UNWIND_TABLES_CFA_EXPRESSION_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

namespace ehprof {

enum class OpKind : uint8_t { kBreg, kConst, kDeref, kAnd, kGe, kShl, kPlus, kMinus, kPlusUconst };
struct Op {
  OpKind kind;
  uint64_t reg = 0;
  int64_t value = 0;
  bool operator==(const Op&) const = default;
};
constexpr size_t kMaxOps = 12;

// Decodes the few DWARF expression operations unwinding rules use; false on
// anything else (or more than kMaxOps operations).

// Decodes the few DWARF expression operations unwinding rules use; false on
// anything else (or more than kMaxOps operations).
bool DecodeOps(std::span<const uint8_t> expr, std::array<Op, kMaxOps>* ops, size_t* n);

}  // namespace ehprof

#endif  // EHPROF_UNWIND_TABLES_CFA_EXPRESSION_H_
