// libFuzzer target: bytes through GoPclntab::Parse, Frames,
// FunctionStart and ForEachSpDelta (elf/go_pclntab.h).
//
// Input: a pclntab (pcHeader first), taken as mapped at kBase, which is
// also moduledata.gofunc, so the inline trees' offsets point into the
// input too. Seeds: testdata/seeds/go_pclntab (a two-function Go 1.20
// table with one inlined call, made by hand; see go_pclntab_test). Checks:
// no read outside the input (ASan), at most the reader's 64 inline levels
// plus the function, the outermost frame never marked inlined, and a
// function's start at or below the address it holds.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include "elf/go_pclntab.h"

namespace {
constexpr uint64_t kBase = 0x10000;
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::span<const uint8_t> bytes(data, size);
  ehprof::GoPclntab::Layout layout;
  layout.table = bytes;
  layout.text_start = 0x1000;
  layout.gofunc = kBase;
  layout.read = [bytes](uint64_t vaddr, uint64_t n) -> std::optional<std::span<const uint8_t>> {
    if (vaddr < kBase || vaddr - kBase > bytes.size() || n > bytes.size() - (vaddr - kBase)) {
      return std::nullopt;
    }
    return bytes.subspan(vaddr - kBase, n);
  };
  auto table = ehprof::GoPclntab::Parse("fuzz", std::move(layout));
  if (!table.ok()) return 0;
  const uint64_t text = table->text_start();
  for (uint64_t k = 0; k < 512; k += 3) {
    for (uint64_t pc : {text + k, text - 1 - k, text + (k << 12)}) {
      const auto frames = table->Frames(pc);
      if (frames.size() > 65) __builtin_trap();
      if (!frames.empty() && frames.back().inlined) __builtin_trap();
      if (auto start = table->FunctionStart(pc); start && *start > pc) __builtin_trap();
    }
  }
  // The pcsp walk (unwind_tables/go_unwind_rows.h): ranges non-empty, within
  // the bound asked for.
  size_t ranges = 0;
  const absl::Status st = table->ForEachSpDelta(
      [&](uint64_t start, uint64_t end, int32_t, uint8_t) {
        if (end <= start || ++ranges > 4096) __builtin_trap();
      },
      4096);
  (void)st;
  return 0;
}
