// --wall's view: on-CPU samples weigh count x period, off-CPU samples keep
// their nanoseconds under an [off-cpu] leaf, threads apart; the SVG draws
// [off-cpu] in its own colour.
#include "agent/output/wall_view.h"

#include <sstream>

#include "agent/output/output_folded.h"
#include "agent/output/output_svg.h"
#include "gtest/gtest.h"

namespace ehprof {
namespace {

ResolvedSample Sample(uint32_t tid, const std::string& leaf, uint64_t count, bool off_cpu, uint64_t ns) {
  ResolvedSample s;
  s.comm = "app";
  s.pid = 10;
  s.tid = tid;
  s.count = count;
  s.off_cpu = off_cpu;
  s.weight_ns = ns;
  ResolvedFrame f;
  f.symbol = leaf;
  f.dso = "/bin/app";
  s.frames = {f};
  return s;
}

TEST(WallView, WeighsAndMarksPerThread) {
  std::vector<ResolvedSample> v = {Sample(10, "spin", 3, false, 0), Sample(11, "wait", 2, true, 5000000)};
  for (ResolvedSample& s : v) ToWallView(&s, 1000000, /*per_thread=*/true);
  std::ostringstream out;
  ASSERT_TRUE(WriteFolded(v, out).ok());
  EXPECT_EQ(out.str(), "app-10/10;spin 3000000\napp-10/11;wait;[off-cpu] 5000000\n");
}

TEST(WallView, OffCpuFramesHaveTheirOwnColour) {
  std::vector<ResolvedSample> v = {Sample(10, "spin", 3, false, 0), Sample(11, "wait", 2, true, 5000000)};
  for (ResolvedSample& s : v) ToWallView(&s, 1000000, true);
  std::ostringstream svg;
  FlameGraphOptions o;
  o.nanoseconds = true;
  ASSERT_TRUE(WriteFlameGraphSvg(v, svg, o).ok());
  const std::string text = svg.str();
  const size_t at = text.find("<title>[off-cpu] (5.0 ms");
  ASSERT_NE(at, std::string::npos) << text.substr(0, 3000);
  // Its fill, and no other frame's (the legend, above the frames, shows
  // it too).
  const size_t fill = text.find("fill=\"", at);
  ASSERT_NE(fill, std::string::npos);
  const std::string colour = text.substr(fill, text.find('"', fill + 6) - fill + 1);
  const size_t frames = text.find("<g><title>");
  ASSERT_NE(frames, std::string::npos);
  EXPECT_EQ(text.find(colour, frames), fill) << colour;
  EXPECT_EQ(text.find(colour, fill + 1), std::string::npos) << colour;
  EXPECT_LT(text.find(colour), frames) << "the legend names the off-CPU colour";
}

}  // namespace
}  // namespace ehprof
