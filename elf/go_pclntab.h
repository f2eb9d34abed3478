// Go's own function table, the pclntab (Go 1.18 and later), which `go
// build -ldflags='-s -w'` keeps when it drops .symtab and DWARF: function
// names, file:line by pc, and the functions the compiler inlined (the
// inline tree, FUNCDATA_InlTree indexed by PCDATA_InlTreeIndex). Pure
// parsing over untrusted bytes: every read goes through ByteReader or the
// caller's bounds-checked address reader, and a table that does not hold
// together is an error naming what was wrong.
#ifndef EHPROF_ELF_GO_PCLNTAB_H_
#define EHPROF_ELF_GO_PCLNTAB_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace ehprof {

class GoPclntab {
 public:
  // Bytes at an ELF virtual address (nullopt when the file does not hold
  // them); the inline trees live in go:func.*, outside the pclntab.
  using VaddrReader =
      std::function<std::optional<std::span<const uint8_t>>(uint64_t vaddr, uint64_t size)>;

  struct Layout {
    std::span<const uint8_t> table;  // from the pcHeader to the end of what holds it
    uint64_t text_start = 0;  // used when the header's textStart is 0 (Go 1.26; a PIE)
    uint64_t gofunc = 0;      // moduledata.gofunc; 0: no inline frames
    VaddrReader read;         // for the inline trees; may be empty when gofunc is 0
  };

  // `name` is the file, for messages. The bytes must outlive the table.
  static absl::StatusOr<GoPclntab> Parse(std::string name, Layout layout);

  // The pcHeader magic: Go 1.18-1.19 and Go 1.20 onwards.
  static constexpr uint32_t kMagic118 = 0xfffffff0;
  static constexpr uint32_t kMagic120 = 0xfffffff1;

  // One function at an address: the symbolizer's SourceFrame, field for
  // field, so that it converts without this library knowing the symbolizer.
  struct Frame {
    std::string function;  // raw name
    std::string file;      // empty when unknown
    uint32_t line = 0;     // 0 when unknown
    bool inlined = false;
  };
  // Innermost first: the inlined functions at `vaddr`, then the function
  // holding it, each with its file:line (an outer frame's is its call
  // site). Empty when no function holds it, or its name or inline chain
  // cannot be read.
  std::vector<Frame> Frames(uint64_t vaddr) const;
  // The entry address of the function holding `vaddr`.
  std::optional<uint64_t> FunctionStart(uint64_t vaddr) const;

  // Every function's stack-pointer delta by pc (its pcsp table): calls
  // fn(start, end, delta) for each pc range [start, end) (ELF virtual
  // addresses, ascending, within the function) where SP is `delta` bytes
  // below its value at the function's entry, the return address not
  // counted. An error names the first function whose table does not hold
  // together; ranges already given stand. At most `max_ranges` ranges.
  // `flags` is the function's _func.flag (kFuncFlag*).
  using SpDeltaFn = std::function<void(uint64_t start, uint64_t end, int32_t delta, uint8_t flags)>;
  // runtime/abi's FuncFlag: the outermost frame of a stack (goexit, mstart,
  // rt0_go), and a function that writes SP (systemstack, mcall, gogo...),
  // past which Go's own traceback does not unwind.
  static constexpr uint8_t kFuncFlagTopFrame = 1 << 0;
  static constexpr uint8_t kFuncFlagSpWrite = 1 << 1;
  absl::Status ForEachSpDelta(const SpDeltaFn& fn, size_t max_ranges) const;

  uint64_t text_start() const { return text_start_; }
  uint32_t function_count() const { return nfunc_; }
  bool go120() const { return go120_; }

 private:
  struct Func {
    uint32_t entry = 0;  // offset from text_start_
    int32_t name = 0;
    uint32_t pcsp = 0;
    uint8_t flag = 0;
    uint32_t pcfile = 0, pcln = 0, cu = 0;
    uint32_t inl_index_table = 0;  // PCDATA_InlTreeIndex's pctab offset; 0 when none
    uint64_t inl_tree = 0;         // FUNCDATA_InlTree's address; 0 when none
  };
  std::optional<Func> FuncAt(uint64_t off) const;
  // The function of functab slot i, and the next slot's entry (its end).
  std::optional<Func> FuncOfSlot(uint32_t i, uint32_t* end) const;
  // The pc-value table at pctab offset `table` of a function at `entry`,
  // at text offset `target`; -1 when none or malformed.
  int32_t PcValue(uint32_t table, uint32_t entry, uint64_t target) const;
  // Walks the pc-value table: step(pc, next_pc, value) for each range
  // (text offsets) until the table ends, `end` is reached or step returns
  // false. False when the table is malformed.
  bool WalkPcValues(uint32_t table, uint32_t entry, uint64_t end,
                    const std::function<bool(uint64_t, uint64_t, int32_t)>& step) const;
  std::string NameAt(int32_t off) const;
  std::string FileAt(uint32_t cu, int32_t index) const;

  std::string name_;
  std::span<const uint8_t> table_;
  VaddrReader read_;
  bool go120_ = false;
  uint32_t nfunc_ = 0;
  uint64_t text_start_ = 0, gofunc_ = 0;
  uint64_t funcnametab_ = 0, cutab_ = 0, filetab_ = 0, pctab_ = 0, pcln_ = 0;
};

}  // namespace ehprof

#endif  // EHPROF_ELF_GO_PCLNTAB_H_
