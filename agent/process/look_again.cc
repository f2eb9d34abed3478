#include "agent/process/look_again.h"

#include <algorithm>

namespace ehprof {

namespace {

constexpr uint64_t kFirstRetryNs = 10'000'000;
constexpr uint64_t kRetryNs = 1'000'000'000;

}  // namespace

std::optional<uint64_t> LoadBias(std::span<const ElfSegment> loads, const MapsEntry& e) {
  for (const ElfSegment& seg : loads) {
    if (e.offset >= (seg.offset & ~uint64_t{4095}) && e.offset < seg.offset + seg.filesz) {
      return e.start - (e.offset + seg.vaddr - seg.offset);
    }
  }
  return std::nullopt;
}

bool LookAgain::Due(bool unknown, bool absent, uint64_t now_ns) {
  const uint64_t retry = std::min(kRetryNs, kFirstRetryNs << std::min(absent_checks_, 7));
  if (!unknown && !(absent && maps_changed_ && now_ns - checked_ns_ > retry)) return false;
  if (absent) ++absent_checks_;
  checked_ns_ = now_ns;
  maps_changed_ = false;
  return true;
}

}  // namespace ehprof
