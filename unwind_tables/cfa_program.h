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
#include <span>
#include <vector>

#include "absl/status/status.h"
#include "unwind_tables/cfi_records.h"
#include "unwind_tables/unwind_row.h"

namespace ehprof {

// Appends the rows of `fde` to `out`: the first at fde.pc_begin, all below
// fde.pc_end, consecutive equal rules merged. `*cfi_rows` counts the rows
// the program defines (as readelf prints them). On error nothing is
// appended and the message names the file, section and FDE.
absl::Status RunCfaProgram(const CfiRecords& records, const Fde& fde,
                           std::vector<UnwindRow>* out, uint64_t* cfi_rows);

// Classifies a DW_CFA_def_cfa_expression block into the rule's cfa fields
// (PLT patterns, *(reg+off)+add, reg+off), or EHP_CFA_EXPR.
void ClassifyCfaExpression(std::span<const uint8_t> expr, UnwindRule* rule);

}  // namespace ehprof

#endif  // EHPROF_UNWIND_TABLES_CFA_PROGRAM_H_
