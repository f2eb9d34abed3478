#include "unwind_tables/cfa_program.h"

#include <dwarf.h>

#include <array>

#include "absl/strings/str_format.h"
#include "base/byte_reader.h"
#include "unwind_tables/cfa_expression.h"
#include "unwind_tables/dwarf_registers.h"

namespace ehprof {

namespace {

// GCC nests remember_state a few levels at most; the bound keeps a hostile
// program from growing memory without limit.
constexpr size_t kMaxRememberDepth = 64;

// x86-64's general registers (DWARF 0-15): where EHP_RULE_REGISTER may
// keep a return address.
constexpr uint64_t kRaRegisters = 16;

// The last register+offset CFA rule, kept while an expression is in force.
struct CfaRegOffset {
  uint64_t reg = 0;
  int64_t offset = 0;
};
// rbx's rule, kept where the file has a CFA based on rbx
// (EHP_RULE_FLAG_RBX_SAVED): the x86-64 ABI's callee-saved register is the
// caller's own until a frame saves it.
struct RbxRule {
  uint8_t kind = EHP_RULE_SAME;
  int64_t offset = 0;
};
struct Saved {
  WideRule rule;
  CfaRegOffset cfa;
  RbxRule rbx;
};

}  // namespace

// The state after a CIE's initial instructions, computed once per CIE.
struct CfaProgramRunner::CieState {
  absl::Status status;
  WideRule rule;
  CfaRegOffset cfa;
  RbxRule rbx;
  std::vector<Saved> stack;
};

namespace {

class Interpreter {
 public:
  Interpreter(const CfiRecords& recs, const Cie& cie, const Fde& fde, bool track_rbx)
      : recs_(recs), cie_(cie), fde_(fde), a64_(recs.arch == Arch::kAarch64),
        track_rbx_(track_rbx && !a64_), frame_reg_(FrameRegister(recs.arch)) {}

  // Runs the CIE's initial instructions (once per CIE: the result is cached
  // by CfaProgramRunner, so a long CIE shared by many FDEs costs once).
  void RunCie(CfaProgramRunner::CieState* out) {
    state_.flags = cie_.signal_frame ? EHP_RULE_FLAG_SIGNAL : 0;
    // x86-64: without a rule in the CIE the return address cannot be found:
    // mark it unsupported rather than pretend it is the stack's bottom.
    // aarch64: a return-address column without a rule is x30 itself (the
    // link register holds it until a prologue saves it), as libgcc reads it.
    state_.ra_kind = a64_ ? EHP_RULE_SAME : EHP_RULE_OTHER;
    state_.cfa_kind = EHP_CFA_EXPR;  // until a def_cfa
    in_cie_ = true;
    out->status = Execute(cie_.initial_instructions);
    in_cie_ = false;
    out->rule = state_;
    out->cfa = cfa_;
    out->rbx = rbx_;
    out->stack = stack_;
  }

  absl::Status Run(const CfaProgramRunner::CieState& cie, std::vector<UnwindRow>* out,
                   uint64_t* cfi_rows) {
    if (!cie.status.ok()) return cie.status;
    state_ = initial_ = cie.rule;
    cfa_ = cie.cfa;
    rbx_ = initial_rbx_ = cie.rbx;
    stack_ = cie.stack;
    out_ = out;
    first_ = out->size();
    loc_ = fde_.pc_begin;
    auto st = Execute(fde_.instructions);
    if (st.ok() && too_many_rows_) {
      st = Error(absl::StrFormat("more than %d rows", kMaxFdeRows));
    }
    if (!st.ok()) {
      out->resize(first_);
      return st;
    }
    if (!done_) AdvanceTo(fde_.pc_end);
    *cfi_rows += rows_;
    return absl::OkStatus();
  }

 private:
  absl::Status Error(std::string_view what) const {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: %s: FDE at 0x%x: %s", recs_.file, CfiSectionName(recs_.kind),
        fde_.offset, what));
  }

  // The current state governs [loc_, to).
  void AdvanceTo(uint64_t to) {
    if (in_cie_ || done_) return;
    if (to >= fde_.pc_end) {
      to = fde_.pc_end;
      done_ = true;
    }
    if (to <= loc_) return;
    ++rows_;
    UnwindRule rule = NarrowRule(state_);
    if (track_rbx_) AddRbx(&rule);
    if (out_->size() == first_ || !(out_->back().rule == rule)) {
      if (out_->size() - first_ == kMaxFdeRows) {
        too_many_rows_ = done_ = true;
        return;
      }
      out_->push_back({loc_, rule});
    }
    loc_ = to;
  }

  // rbx's rule in the row: where the caller's rbx is, when it is in a
  // save slot the compact rule can hold (an s16 in cfa_deref_add of a
  // register-based CFA); else the walk loses it.
  void AddRbx(UnwindRule* rule) const {
    if (rbx_.kind == EHP_RULE_SAME) {
      rule->flags |= EHP_RULE_FLAG_RBX_SAME;
    } else if (rbx_.kind == EHP_RULE_CFA_OFFSET && rule->cfa_kind == EHP_CFA_REG &&
               rbx_.offset >= INT16_MIN && rbx_.offset <= INT16_MAX) {
      rule->flags |= EHP_RULE_FLAG_RBX_SAVED;
      rule->cfa_deref_add = static_cast<int32_t>(rbx_.offset);
    }
  }

  void SetReg(uint64_t reg, uint8_t kind, int64_t offset, uint8_t base_reg = 0) {
    if (kind == EHP_RULE_SAME || kind == EHP_RULE_UNDEFINED || kind == EHP_RULE_OTHER) {
      offset = 0;
      base_reg = 0;
    }
    if (track_rbx_ && reg == EHP_REG_RBX) {
      rbx_.kind = kind == EHP_RULE_DEREF ? static_cast<uint8_t>(EHP_RULE_OTHER) : kind;
      rbx_.offset = offset;
    }
    if (reg == frame_reg_) {
      state_.rbp_kind = kind;
      state_.rbp_offset = offset;
      state_.rbp_reg = base_reg;
    }
    if (reg == cie_.ra_reg) {
      // The return address cannot live in another register or at *(reg+N);
      // on aarch64 "same" is the link register itself.
      state_.ra_kind = kind == EHP_RULE_DEREF || (kind == EHP_RULE_SAME && !a64_)
                           ? static_cast<uint8_t>(EHP_RULE_OTHER) : kind;
      state_.ra_offset = kind == EHP_RULE_CFA_OFFSET ? offset : 0;
    }
  }

  // factored * data_align; hostile values that overflow make the rule
  // unsupported instead of wrapping.
  void SetRegScaled(uint64_t reg, int64_t factored) {
    int64_t off;
    if (__builtin_mul_overflow(factored, cie_.data_align, &off)) {
      SetReg(reg, EHP_RULE_OTHER, 0);
    } else {
      SetReg(reg, EHP_RULE_CFA_OFFSET, off);
    }
  }
  void SetCfaScaled(uint64_t reg, int64_t factored) {
    int64_t off;
    if (__builtin_mul_overflow(factored, cie_.data_align, &off)) {
      SetCfaReg(reg, 0);
      state_.cfa_kind = EHP_CFA_EXPR;
      state_.cfa_reg = 0;
    } else {
      SetCfaReg(reg, off);
    }
  }

  void RestoreReg(uint64_t reg) {
    if (track_rbx_ && reg == EHP_REG_RBX) rbx_ = initial_rbx_;
    if (reg == frame_reg_) {
      state_.rbp_kind = initial_.rbp_kind;
      state_.rbp_offset = initial_.rbp_offset;
      state_.rbp_reg = initial_.rbp_reg;
    }
    if (reg == cie_.ra_reg) {
      state_.ra_kind = initial_.ra_kind;
      state_.ra_offset = initial_.ra_offset;
    }
  }

  void SetCfaReg(uint64_t reg, int64_t offset) {
    cfa_.reg = reg;
    cfa_.offset = offset;
    state_.cfa_kind = reg <= 255 ? EHP_CFA_REG : EHP_CFA_EXPR;
    state_.cfa_reg = reg <= 255 ? static_cast<uint8_t>(reg) : 0;
    state_.cfa_offset = reg <= 255 ? offset : 0;
    state_.cfa_deref_add = 0;
  }

  void ExpressionRule(uint64_t reg, std::span<const uint8_t> expr) {
    std::array<Op, kMaxOps> ops;
    size_t n = 0;
    if (DecodeOps(expr, &ops, &n) && n == 1 && ops[0].kind == OpKind::kBreg &&
        ops[0].reg <= 255) {
      SetReg(reg, EHP_RULE_DEREF, ops[0].value, static_cast<uint8_t>(ops[0].reg));
    } else {
      SetReg(reg, EHP_RULE_OTHER, 0);
    }
  }

  absl::Status Execute(std::span<const uint8_t> program) {
    ByteReader r(program);
    while (!r.at_end() && !done_) {
      const uint8_t op = r.u8();
      if (Primary(op, r)) continue;
      if (absl::Status st = Extended(op, r); !st.ok()) return st;
      if (!r.ok()) return Error(absl::StrFormat("truncated operand of instruction 0x%02x", op));
    }
    if (!r.ok()) return Error("truncated call frame instructions");
    return absl::OkStatus();
  }

  // The three instructions with an operand in their low 6 bits; false for
  // any other.
  bool Primary(uint8_t op, ByteReader& r) {
    const uint8_t hi = op & 0xc0, low = op & 0x3f;
    if (hi == DW_CFA_advance_loc) {
      AdvanceTo(loc_ + low * cie_.code_align);
    } else if (hi == DW_CFA_offset) {
      SetRegScaled(low, static_cast<int64_t>(r.uleb128()));
    } else if (hi == DW_CFA_restore) {
      RestoreReg(low);
    } else {
      return false;
    }
    return true;
  }

  // Every other instruction, by what it changes: the location, a
  // register's rule, the CFA rule, or the remembered states.
  absl::Status Extended(uint8_t op, ByteReader& r) {
    switch (op) {
      case DW_CFA_nop: return absl::OkStatus();
      case DW_CFA_set_loc:
      case DW_CFA_advance_loc1:
      case DW_CFA_advance_loc2:
      case DW_CFA_advance_loc4:
      case DW_CFA_MIPS_advance_loc8: return Advance(op, r);
      case DW_CFA_offset_extended:
      case DW_CFA_offset_extended_sf:
      case DW_CFA_GNU_negative_offset_extended:
      case DW_CFA_restore_extended:
      case DW_CFA_undefined:
      case DW_CFA_same_value:
      case DW_CFA_register:
      case DW_CFA_val_offset:
      case DW_CFA_val_offset_sf:
      case DW_CFA_expression:
      case DW_CFA_val_expression: return RegisterRule(op, r);
      case DW_CFA_def_cfa:
      case DW_CFA_def_cfa_sf:
      case DW_CFA_def_cfa_register:
      case DW_CFA_def_cfa_offset:
      case DW_CFA_def_cfa_offset_sf:
      case DW_CFA_def_cfa_expression: return CfaRule(op, r);
      case DW_CFA_remember_state:
        if (stack_.size() == kMaxRememberDepth) return Error("DW_CFA_remember_state nested too deep");
        stack_.push_back({state_, cfa_, rbx_});
        return absl::OkStatus();
      case DW_CFA_restore_state:
        if (stack_.empty()) return Error("DW_CFA_restore_state without remember_state");
        state_ = stack_.back().rule;
        cfa_ = stack_.back().cfa;
        rbx_ = stack_.back().rbx;
        stack_.pop_back();
        return absl::OkStatus();
      case DW_CFA_GNU_args_size: r.uleb128(); return absl::OkStatus();
      // 0x2d: SPARC's window save, AArch64's DW_CFA_AARCH64_negate_ra_state
      // (the return address is signed from here on, or no longer is). Part
      // of the row, so remember_state/restore_state keep it too.
      case DW_CFA_GNU_window_save:
        if (a64_) state_.flags ^= EHP_RULE_FLAG_RA_SIGNED;
        return absl::OkStatus();
      default:
        return Error(absl::StrFormat("unknown call frame instruction 0x%02x", op));
    }
  }

  absl::Status Advance(uint8_t op, ByteReader& r) {
    const uint64_t ca = cie_.code_align;
    switch (op) {
      case DW_CFA_set_loc: {
        uint64_t to = 0;
        const uint64_t field = recs_.section_vaddr +
            static_cast<uint64_t>(r.pos() - recs_.section_data.data());
        uint8_t enc = recs_.kind == CfiSectionKind::kEhFrame ? cie_.fde_encoding
                                                             : static_cast<uint8_t>(DW_EH_PE_absptr);
        if (!ReadEncodedPointer(r, enc, field, &to)) return Error("bad DW_CFA_set_loc");
        if (to < loc_) return Error("DW_CFA_set_loc moves backwards");
        AdvanceTo(to);
        break;
      }
      case DW_CFA_advance_loc1: AdvanceTo(loc_ + r.u8() * ca); break;
      case DW_CFA_advance_loc2: AdvanceTo(loc_ + r.u16() * ca); break;
      case DW_CFA_advance_loc4: AdvanceTo(loc_ + r.u32() * ca); break;
      case DW_CFA_MIPS_advance_loc8: {
        uint64_t d = r.u64();
        AdvanceTo(d > fde_.pc_end - loc_ ? fde_.pc_end : loc_ + d * ca);
        break;
      }
    }
    return absl::OkStatus();
  }

  absl::Status RegisterRule(uint8_t op, ByteReader& r) {
    const uint64_t reg = r.uleb128();
    switch (op) {
      case DW_CFA_offset_extended: SetRegScaled(reg, static_cast<int64_t>(r.uleb128())); break;
      case DW_CFA_offset_extended_sf: SetRegScaled(reg, r.sleb128()); break;
      case DW_CFA_GNU_negative_offset_extended:
        SetRegScaled(reg, static_cast<int64_t>(0 - r.uleb128()));
        break;
      case DW_CFA_restore_extended: RestoreReg(reg); break;
      case DW_CFA_undefined: SetReg(reg, EHP_RULE_UNDEFINED, 0); break;
      case DW_CFA_same_value: SetReg(reg, EHP_RULE_SAME, 0); break;
      case DW_CFA_register: {
        uint64_t from = r.uleb128();
        SetReg(reg, reg == from ? EHP_RULE_SAME : EHP_RULE_OTHER, 0);
        // x86-64's return address in a general register (glibc's __vfork
        // keeps it in rdi around the syscall): the walk reads that
        // register, known in the leaf's frame.
        if (reg == cie_.ra_reg && reg != from && !a64_ && from < kRaRegisters) {
          state_.ra_kind = EHP_RULE_REGISTER;
          state_.ra_offset = static_cast<int64_t>(from);
        }
        break;
      }
      case DW_CFA_val_offset:
      case DW_CFA_val_offset_sf:
        if (op == DW_CFA_val_offset) r.uleb128(); else r.sleb128();
        SetReg(reg, EHP_RULE_OTHER, 0);
        break;
      case DW_CFA_expression:
      case DW_CFA_val_expression: {
        uint64_t len = r.uleb128();
        ByteReader e = r.sub(len);
        if (!r.ok()) return Error("truncated DW_CFA_expression");
        if (op == DW_CFA_expression) ExpressionRule(reg, {e.pos(), e.remaining()});
        else SetReg(reg, EHP_RULE_OTHER, 0);
        break;
      }
    }
    return absl::OkStatus();
  }

  absl::Status CfaRule(uint8_t op, ByteReader& r) {
    switch (op) {
      case DW_CFA_def_cfa: {
        uint64_t reg = r.uleb128();
        SetCfaReg(reg, static_cast<int64_t>(r.uleb128()));
        break;
      }
      case DW_CFA_def_cfa_sf: {
        uint64_t reg = r.uleb128();
        SetCfaScaled(reg, r.sleb128());
        break;
      }
      // After an expression, these use the last register+offset rule's
      // values, as libgcc's unwinder and readelf do: the register alone
      // switches back to reg+offset, the offset alone does not.
      case DW_CFA_def_cfa_register:
        SetCfaReg(r.uleb128(), cfa_.offset);
        break;
      case DW_CFA_def_cfa_offset:
        cfa_.offset = static_cast<int64_t>(r.uleb128());
        if (state_.cfa_kind == EHP_CFA_REG) state_.cfa_offset = cfa_.offset;
        break;
      case DW_CFA_def_cfa_offset_sf: {
        int64_t off;
        if (__builtin_mul_overflow(r.sleb128(), cie_.data_align, &off)) {
          state_.cfa_kind = EHP_CFA_EXPR;
          state_.cfa_reg = 0;
          state_.cfa_offset = 0;
          break;
        }
        cfa_.offset = off;
        if (state_.cfa_kind == EHP_CFA_REG) state_.cfa_offset = cfa_.offset;
        break;
      }
      case DW_CFA_def_cfa_expression: {
        uint64_t len = r.uleb128();
        ByteReader e = r.sub(len);
        if (!r.ok()) return Error("truncated DW_CFA_def_cfa_expression");
        ClassifyCfaExpression({e.pos(), e.remaining()}, &state_);
        break;
      }
    }
    return absl::OkStatus();
  }

  const CfiRecords& recs_;
  const Cie& cie_;
  const Fde& fde_;
  const bool a64_;
  const bool track_rbx_;
  const unsigned frame_reg_;
  WideRule state_;
  WideRule initial_;
  CfaRegOffset cfa_;
  RbxRule rbx_;
  RbxRule initial_rbx_;
  std::vector<Saved> stack_;
  std::vector<UnwindRow>* out_ = nullptr;
  size_t first_ = 0;
  uint64_t loc_ = 0;
  uint64_t rows_ = 0;
  bool in_cie_ = false;
  bool done_ = false;
  bool too_many_rows_ = false;
};

}  // namespace

CfaProgramRunner::CfaProgramRunner(const CfiRecords& records, bool track_rbx)
    : records_(records), track_rbx_(track_rbx), cie_states_(records.cies.size()) {}

CfaProgramRunner::~CfaProgramRunner() = default;

absl::Status CfaProgramRunner::Run(const Fde& fde, std::vector<UnwindRow>* out,
                                   uint64_t* cfi_rows) {
  if (fde.cie >= records_.cies.size()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: %s: FDE at 0x%x: no CIE", records_.file, CfiSectionName(records_.kind),
        fde.offset));
  }
  const Cie& cie = records_.cies[fde.cie];
  std::unique_ptr<CieState>& state = cie_states_[fde.cie];
  if (!state) {
    state = std::make_unique<CieState>();
    Interpreter(records_, cie, fde, track_rbx_).RunCie(state.get());
  }
  return Interpreter(records_, cie, fde, track_rbx_).Run(*state, out, cfi_rows);
}

absl::Status RunCfaProgram(const CfiRecords& records, const Fde& fde,
                           std::vector<UnwindRow>* out, uint64_t* cfi_rows) {
  return CfaProgramRunner(records).Run(fde, out, cfi_rows);
}

}  // namespace ehprof
