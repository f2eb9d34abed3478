// Interprets one FDE's call frame instructions (after its CIE's initial
// instructions) into unwind rows for the CFA, rbp and the return address.
//
// Our own interpreter instead of libdw's dwarf_cfi_addrframe: that re-runs
// the FDE's program from the start for every row (quadratic in long FDEs)
// and allocates per call; this runs each program once. The results are
// checked against libdw in tests/cfa_program_test.cc.
#ifndef EHPROF_UNWIND_TABLES_CFA_PROGRAM_H_
#define EHPROF_UNWIND_TABLES_CFA_PROGRAM_H_

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "absl/status/status.h"
#include "unwind_tables/cfi_records.h"
#include "unwind_tables/unwind_row.h"

namespace ehprof {

// A function has a few rows per call site; a million means a hostile
// program (a row costs 3 bytes of CFI and 32 of memory), which fails as an
// FDE error instead of growing memory with the section.
inline constexpr size_t kMaxFdeRows = size_t{1} << 20;

// Appends the rows of `fde` to `out`: the first at fde.pc_begin, all below
// fde.pc_end, consecutive equal rules merged. `*cfi_rows` counts the rows
// the program defines (as readelf prints them). On error nothing is
// appended and the message names the file, section and FDE.
absl::Status RunCfaProgram(const CfiRecords& records, const Fde& fde,
                           std::vector<UnwindRow>* out, uint64_t* cfi_rows);

// RunCfaProgram for many FDEs of one section: each CIE's initial
// instructions run once, not once per FDE (a long CIE shared by many FDEs
// would otherwise cost their product). `records` must outlive it.
//
// track_rbx (x86-64): rows also say where the caller's rbx is
// (EHP_RULE_FLAG_RBX_SAVED / RBX_SAME), for sections with a CFA based on
// rbx; elsewhere rows stay as few as without it.
class CfaProgramRunner {
 public:
  explicit CfaProgramRunner(const CfiRecords& records, bool track_rbx = false);
  ~CfaProgramRunner();
  absl::Status Run(const Fde& fde, std::vector<UnwindRow>* out, uint64_t* cfi_rows);

  struct CieState;

 private:
  const CfiRecords& records_;
  const bool track_rbx_;
  std::vector<std::unique_ptr<CieState>> cie_states_;
};

// Classifies a DW_CFA_def_cfa_expression block into the rule's cfa fields
// (PLT patterns, *(reg+off)+add, reg+off), or EHP_CFA_EXPR.
void ClassifyCfaExpression(std::span<const uint8_t> expr, WideRule* rule);

}  // namespace ehprof

#endif  // EHPROF_UNWIND_TABLES_CFA_PROGRAM_H_
