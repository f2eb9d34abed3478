// Offsets read from libperl's x86-64 machine code: the loads and stores
// small exported functions make of the interpreter, its stackinfo and its
// contexts (agent/perl/perl_binary.cc says which). Byte patterns over each
// function's bytes, not a disassembler: each probe looks for a short
// sequence whose registers must chain, so a stray match is refused rather
// than taken.
#ifndef EHPROF_AGENT_PERL_PERL_PROBE_H_
#define EHPROF_AGENT_PERL_PERL_PROBE_H_

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace ehprof {

// One instruction with a memory operand `disp(%base)` or `disp(%base,%index,s)`
// whose opcode is one the probes read: 8B (mov load), 63 (movslq), 89 (mov
// store), C7 (mov imm32 store), 8D (lea), 83 /7 (cmp imm8).
struct X86MemOp {
  size_t at = 0, len = 0;  // offset in the code, bytes
  uint8_t opcode = 0;
  bool wide = false;  // REX.W
  int reg = 0;        // ModRM.reg (with REX.R): the register operand
  int base = 0, index = -1, scale = 1;  // index -1: none
  int32_t disp = 0;
  int32_t imm = 0;  // C7's imm32, 83's imm8
};

// Every such instruction decoded at any byte position of code, in order
// (the probes' register chains refuse the stray ones).
std::vector<X86MemOp> FindMemOps(std::span<const uint8_t> code);

// The offsets Perl_pp_leavesub shows: PL_curstackinfo (its first load from
// the interpreter, %rdi), the stackinfo's si_cxix (movslq) and si_cxstack,
// a context's size (the index times 13 by two leas, times 8 by the
// addressing), and from the context register: blk_oldcop (loaded, then
// stored to PL_curcop, `curcop` given), blk_sub.cv (loaded, then cleared
// with `movq $0`) and blk_sub.retop (the value the function returns).
struct LeavesubOffsets {
  uint32_t curstackinfo = 0, si_cxix = 0, si_cxstack = 0, cx_size = 0;
  uint32_t cx_oldcop = 0, cx_cv = 0, cx_retop = 0;
};
std::optional<LeavesubOffsets> ProbeLeavesub(std::span<const uint8_t> code, uint32_t curcop);

// Perl_ckwarn's first load from the interpreter: PL_curcop (tested for 0,
// then its cop_warnings compared with 0).
std::optional<uint32_t> ProbeCurcop(std::span<const uint8_t> code);

// Perl_caller_cx's walk to the stackinfo below (`si = si->si_prev`: a load
// whose destination is its base, from the register that took
// PL_curstackinfo).
std::optional<uint32_t> ProbeSiPrev(std::span<const uint8_t> code, uint32_t curstackinfo);

}  // namespace ehprof

#endif  // EHPROF_AGENT_PERL_PERL_PROBE_H_
