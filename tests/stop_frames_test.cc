// --show-stops: a walk that stopped short of the stack's bottom ends in a
// frame naming its stop reason; a finished walk gets none.
#include <string>
#include <vector>

#include "agent/process/process_tracker.h"
#include "agent/resolve/address_symbolizer.h"
#include "agent/resolve/profile_resolver.h"
#include "agent/tables/file_tables.h"
#include "bpf/ehprof_abi.h"
#include "gtest/gtest.h"
#include "tests/test_support.h"

namespace ehprof {
namespace {

constexpr uint32_t kPid = 4242;

RawSample Sample(uint8_t stop) {
  RawSample s;
  s.pid = s.tid = kPid;
  s.comm = "cc1plus";
  s.time_ns = 100;
  s.user = {0x600010 | EHP_FRAME_EXACT, 0x600020};
  s.stop_reason = stop;
  s.fp_stop_reason = EHP_STOP_FP_END;
  return s;
}

std::vector<std::string> Outermost(const std::vector<RawSample>& raws, const ResolveOptions& ro) {
  Warnings warnings;
  FileTables files(nullptr, &warnings);
  ProcessTracker tracker(&files, nullptr, &warnings);
  tracker.Apply(kPid, {testing::TextMapping(0x600000, 0x601000, "/usr/lib/gcc/cc1plus")}, 10);
  AddressSymbolizer symbols(AddressSymbolizer::Options{}, &warnings);
  std::vector<std::string> out;
  for (const ResolvedSample& s : ResolveSamples(raws, tracker, symbols, nullptr, ro)) {
    out.push_back(s.frames.empty() ? "" : s.frames.back().symbol + "@" + s.frames.back().dso);
  }
  return out;
}

TEST(StopFrames, AnUnfinishedWalkEndsInItsReason) {
  const std::vector<RawSample> raws = {Sample(EHP_STOP_NO_TABLE), Sample(EHP_STOP_END_OF_STACK),
                                       Sample(EHP_STOP_NO_CFI_BAD_FP)};
  ResolveOptions ro;
  ro.stop_frames = true;
  EXPECT_EQ(Outermost(raws, ro),
            (std::vector<std::string>{"[stop: table not loaded yet]@[stop]", "[unknown]@/usr/lib/gcc/cc1plus",
                                      "[stop: no CFI for pc, frame pointer implausible]@[stop]"}));
  ro.use_fp_walk = true;  // the frame-pointer walk's own reason
  EXPECT_EQ(Outermost({Sample(EHP_STOP_END_OF_STACK)}, ro)[0], "[stop: frame-pointer chain ended]@[stop]");
}

TEST(StopFrames, OffByDefault) {
  EXPECT_EQ(Outermost({Sample(EHP_STOP_NO_TABLE)}, ResolveOptions{})[0], "[unknown]@/usr/lib/gcc/cc1plus");
}

}  // namespace
}  // namespace ehprof
