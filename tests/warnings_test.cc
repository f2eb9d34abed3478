#include "base/warnings.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace ehprof {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

TEST(Warnings, EachDistinctTextOnceOverAllTakes) {
  Warnings w;
  w.Add("a");
  w.Add("b");
  w.Add("a");
  EXPECT_THAT(w.Take(), ElementsAre("a", "b"));
  w.Add("a");
  w.Add("c");
  EXPECT_THAT(w.Take(), ElementsAre("c"));
  EXPECT_THAT(w.Take(), IsEmpty());
}

TEST(Warnings, OncePerTopicWhateverTheText) {
  Warnings w;
  w.AddOnce("/bin/x", "first about x");
  w.AddOnce("/bin/x", "second about x");
  w.AddAll({"b", "b"});
  EXPECT_THAT(w.Take(), ElementsAre("first about x", "b"));
}

TEST(Warnings, PastTheBoundDroppedAndCounted) {
  Warnings w(2);
  w.Add("a");
  w.Add("b");
  w.Add("c");
  w.Add("a");  // a repeat past the bound is counted too: nothing is looked up
  EXPECT_THAT(w.Take(), ElementsAre("a", "b"));
  EXPECT_EQ(w.TakeDropped(), 2u);
  EXPECT_EQ(w.TakeDropped(), 0u);
}

}  // namespace
}  // namespace ehprof
