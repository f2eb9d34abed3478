// Splits a .eh_frame or .debug_frame section into CIEs and FDEs.
//
// The section is untrusted: every length, pointer and encoding is checked,
// and a malformed entry yields an error naming the file, the section and the
// entry's offset. Instructions are not interpreted here (cfa_program.h does).
#ifndef EHPROF_UNWIND_TABLES_CFI_RECORDS_H_
#define EHPROF_UNWIND_TABLES_CFI_RECORDS_H_

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "elf/arch.h"

namespace ehprof {

enum class CfiSectionKind { kEhFrame, kDebugFrame };

const char* CfiSectionName(CfiSectionKind kind);

struct CfiSectionRef {
  CfiSectionKind kind = CfiSectionKind::kEhFrame;
  std::span<const uint8_t> data;
  uint64_t vaddr = 0;  // sh_addr, the base of pc-relative pointers
  std::string file;    // for messages
  // More FDEs fail the parse: 48 bytes each from as few as 16 of section,
  // so without a bound a hostile section's records outgrow the file.
  size_t max_fdes = SIZE_MAX;
  // Whose registers the instructions name (the ELF's e_machine).
  Arch arch = Arch::kX86_64;
};

struct Cie {
  uint64_t offset = 0;  // within the section
  uint64_t code_align = 1;
  int64_t data_align = -8;
  uint64_t ra_reg = 16;
  uint8_t fde_encoding = 0;  // DW_EH_PE_* for FDE addresses (.eh_frame)
  uint8_t address_size = 8;
  bool has_augmentation_data = false;  // 'z': FDEs carry augmentation data
  bool signal_frame = false;           // 'S'
  std::span<const uint8_t> initial_instructions;
};

struct Fde {
  uint64_t offset = 0;  // within the section
  uint64_t pc_begin = 0;
  uint64_t pc_end = 0;
  uint32_t cie = 0;  // index into CfiRecords::cies
  std::span<const uint8_t> instructions;
};

struct CfiRecords {
  CfiSectionKind kind = CfiSectionKind::kEhFrame;
  uint64_t section_vaddr = 0;
  std::span<const uint8_t> section_data;
  std::string file;  // for messages
  Arch arch = Arch::kX86_64;
  std::vector<Cie> cies;
  std::vector<Fde> fdes;
};

absl::StatusOr<CfiRecords> ParseCfiRecords(const CfiSectionRef& section);

// Decodes one DW_EH_PE_* encoded pointer at `field_vaddr` (the address the
// field is mapped at, for pcrel). Returns false for encodings that cannot be
// resolved from the section alone (datarel, textrel, funcrel, indirect).
class ByteReader;
bool ReadEncodedPointer(ByteReader& r, uint8_t encoding, uint64_t field_vaddr,
                        uint64_t* out);

}  // namespace ehprof

#endif  // EHPROF_UNWIND_TABLES_CFI_RECORDS_H_
