// DW_CFA_def_cfa_expression programs the walker can still follow: the PLT
// idioms and a dereference of register + offset (realigned frames); every
// other expression stays EHP_CFA_EXPR, a stop reason.
#include <dwarf.h>

#include <array>

#include "absl/strings/str_format.h"
#include "base/byte_reader.h"
#include "unwind_tables/cfa_expression.h"
#include "unwind_tables/cfa_program.h"

namespace ehprof {

bool DecodeOps(std::span<const uint8_t> expr, std::array<Op, kMaxOps>* ops,
               size_t* n) {
  ByteReader r(expr);
  *n = 0;
  while (!r.at_end()) {
    if (*n == kMaxOps) return false;
    Op op{OpKind::kConst};
    uint8_t code = r.u8();
    if (code >= DW_OP_breg0 && code <= DW_OP_breg31) {
      op = {OpKind::kBreg, static_cast<uint64_t>(code - DW_OP_breg0), r.sleb128()};
    } else if (code >= DW_OP_lit0 && code <= DW_OP_lit31) {
      op.value = code - DW_OP_lit0;
    } else {
      switch (code) {
        case DW_OP_bregx: op.kind = OpKind::kBreg; op.reg = r.uleb128(); op.value = r.sleb128(); break;
        case DW_OP_const1u: op.value = r.u8(); break;
        case DW_OP_const1s: op.value = r.s8(); break;
        case DW_OP_const2u: op.value = r.u16(); break;
        case DW_OP_const2s: op.value = r.s16(); break;
        case DW_OP_const4u: op.value = r.u32(); break;
        case DW_OP_const4s: op.value = r.s32(); break;
        case DW_OP_const8u: case DW_OP_const8s: op.value = r.s64(); break;
        case DW_OP_constu: op.value = static_cast<int64_t>(r.uleb128()); break;
        case DW_OP_consts: op.value = r.sleb128(); break;
        case DW_OP_deref: op.kind = OpKind::kDeref; break;
        case DW_OP_and: op.kind = OpKind::kAnd; break;
        case DW_OP_ge: op.kind = OpKind::kGe; break;
        case DW_OP_shl: op.kind = OpKind::kShl; break;
        case DW_OP_plus: op.kind = OpKind::kPlus; break;
        case DW_OP_minus: op.kind = OpKind::kMinus; break;
        case DW_OP_plus_uconst: op.kind = OpKind::kPlusUconst; op.value = static_cast<int64_t>(r.uleb128()); break;
        default: return false;
      }
    }
    if (!r.ok()) return false;
    (*ops)[(*n)++] = op;
  }
  return true;
}

namespace {

Op Breg(uint64_t reg, int64_t v) { return {OpKind::kBreg, reg, v}; }
Op Const(int64_t v) { return {OpKind::kConst, 0, v}; }
Op Bare(OpKind k) { return {k, 0, 0}; }

// binutils' PLT CFA: rsp + 8 + ((rip & 15) >= THRESHOLD) << 3.
bool IsPlt(const std::array<Op, kMaxOps>& ops, size_t n, int64_t threshold) {
  const Op want[] = {Breg(EHP_REG_RSP, 8), Breg(EHP_REG_RIP, 0), Const(15),
                     Bare(OpKind::kAnd), Const(threshold), Bare(OpKind::kGe),
                     Const(3), Bare(OpKind::kShl), Bare(OpKind::kPlus)};
  if (n != std::size(want)) return false;
  for (size_t i = 0; i < n; ++i) {
    if (!(ops[i] == want[i])) return false;
  }
  return true;
}

}  // namespace

void ClassifyCfaExpression(std::span<const uint8_t> expr, WideRule* rule) {
  rule->cfa_kind = EHP_CFA_EXPR;
  rule->cfa_reg = 0;
  rule->cfa_offset = 0;
  rule->cfa_deref_add = 0;
  std::array<Op, kMaxOps> ops;
  size_t n = 0;
  if (!DecodeOps(expr, &ops, &n) || n == 0) return;
  if (IsPlt(ops, n, 11)) {
    rule->cfa_kind = EHP_CFA_PLT_LIT11;
    return;
  }
  if (IsPlt(ops, n, 10)) {
    rule->cfa_kind = EHP_CFA_PLT_LIT10;
    return;
  }
  if (ops[0].kind != OpKind::kBreg || ops[0].reg > 255) return;
  const auto reg = static_cast<uint8_t>(ops[0].reg);
  if (n == 1) {
    rule->cfa_kind = EHP_CFA_REG;
    rule->cfa_reg = reg;
    rule->cfa_offset = ops[0].value;
    return;
  }
  if (ops[1].kind != OpKind::kDeref) return;
  int64_t add = 0;
  if (n == 3 && ops[2].kind == OpKind::kPlusUconst) {
    add = ops[2].value;
  } else if (n == 4 && ops[2].kind == OpKind::kConst &&
             (ops[3].kind == OpKind::kPlus || ops[3].kind == OpKind::kMinus)) {
    if (ops[3].kind == OpKind::kMinus && ops[2].value == INT64_MIN) return;
    add = ops[3].kind == OpKind::kPlus ? ops[2].value : -ops[2].value;
  } else if (n != 2) {
    return;
  }
  rule->cfa_kind = EHP_CFA_DEREF;
  rule->cfa_reg = reg;
  rule->cfa_offset = ops[0].value;
  rule->cfa_deref_add = add;
}

}  // namespace ehprof
