#include "agent/jvm/code_heaps.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace ehprof {

namespace {

// HotSpot's ReservedCodeCacheSize is at most 2 GB.
constexpr uint64_t kMaxHeapBytes = uint64_t{2} << 30;

struct Heap {
  ehp_jvm_heap range;
  int32_t log2 = 0;
};

absl::StatusOr<Heap> ReadHeap(const ProcessMemory& mem, const CodeHeapFields& f, uint64_t heap) {
  Heap h{};
  const uint64_t memory = heap + f.heap_memory, segmap = heap + f.heap_segmap;
  if (!heap || !mem.ReadU64(memory + f.space_low_boundary, &h.range.low) ||
      !mem.ReadU64(memory + f.space_high_boundary, &h.range.high) ||
      !mem.ReadU64(segmap + f.space_low_boundary, &h.range.segmap) ||
      !mem.Read(heap + f.heap_log2_segment, &h.log2, sizeof(h.log2))) {
    return absl::UnavailableError(absl::StrCat("CodeHeap at 0x", absl::Hex(heap), " unreadable"));
  }
  if (h.range.low == 0 || h.range.high < h.range.low || h.range.high - h.range.low > kMaxHeapBytes ||
      h.range.segmap == 0 || h.log2 < 4 || h.log2 > 16) {
    return absl::InvalidArgumentError(absl::StrCat("CodeHeap at 0x", absl::Hex(heap), ": code [0x",
                                                   absl::Hex(h.range.low), ", 0x", absl::Hex(h.range.high),
                                                   "), segment map 0x", absl::Hex(h.range.segmap),
                                                   ", segments of 2^", h.log2, " bytes"));
  }
  return h;
}

}  // namespace

absl::StatusOr<bool> ReadCodeHeaps(const ProcessMemory& mem, const CodeHeapFields& f, ehp_jvm_proc* p) {
  uint64_t array = 0, data = 0;
  int32_t len = 0;
  if (!mem.ReadU64(f.heaps_addr, &array)) return absl::UnavailableError("CodeCache::_heaps unreadable");
  if (!array) return false;
  if (!mem.Read(array + f.array_len, &len, sizeof(len)) || !mem.ReadU64(array + f.array_data, &data)) {
    return absl::UnavailableError("CodeCache::_heaps' array unreadable");
  }
  if (len == 0) return false;
  if (len < 0 || len > EHP_JVM_HEAPS || !data) {
    return absl::InvalidArgumentError(absl::StrCat("CodeCache::_heaps holds ", len, " heaps (at most ",
                                                   EHP_JVM_HEAPS, ")"));
  }
  uint64_t heaps[EHP_JVM_HEAPS] = {};
  if (!mem.Read(data, heaps, sizeof(uint64_t) * static_cast<size_t>(len))) {
    return absl::UnavailableError("CodeCache::_heaps' data unreadable");
  }
  ehp_jvm_proc out = *p;
  std::fill(std::begin(out.heaps), std::end(out.heaps), ehp_jvm_heap{});
  out.code_lo = ~uint64_t{0};
  out.code_hi = 0;
  for (int i = 0; i < len; ++i) {
    auto h = ReadHeap(mem, f, heaps[i]);
    if (!h.ok()) return h.status();
    if (i > 0 && h->log2 != out.log2_segment) {
      return absl::InvalidArgumentError(absl::StrCat("code heaps of segments of 2^", out.log2_segment, " and 2^",
                                                     h->log2, " bytes"));
    }
    out.heaps[i] = h->range;
    out.log2_segment = static_cast<ehp_u8>(h->log2);
    out.code_lo = std::min(out.code_lo, h->range.low);
    out.code_hi = std::max(out.code_hi, h->range.high);
  }
  out.nheaps = static_cast<ehp_u8>(len);
  *p = out;
  return true;
}

}  // namespace ehprof
