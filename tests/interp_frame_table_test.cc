// The interpreter frame table the Ruby/PHP/Perl trackers fill, and how the
// resolver turns their words into frames in the walk's order.
#include "agent/interp/interp_frame_table.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "agent/resolve/profile_resolver.h"

namespace ehprof {
namespace {

InterpFrameName Named(ehp_interp_kind kind, std::string function, std::string file, int32_t line) {
  InterpFrameName n;
  n.kind = kind;
  n.function = std::move(function);
  n.file = std::move(file);
  n.line = line;
  return n;
}

TEST(InterpFrameTable, InternsNamesAndNeverHandsOutIndexZero) {
  InterpFrameTable t;
  const uint32_t a = t.Add(Named(EHP_INTERP_RUBY, "Greeter#hi", "app.rb", 3));
  const uint32_t b = t.Add(Named(EHP_INTERP_PHP, "Cart::total", "cart.php", 7));
  EXPECT_NE(a, 0u);
  EXPECT_NE(a, b);
  EXPECT_EQ(t.Add(Named(EHP_INTERP_RUBY, "Greeter#hi", "app.rb", 3)), a);
  EXPECT_NE(t.Add(Named(EHP_INTERP_RUBY, "Greeter#hi", "app.rb", 4)), a);  // another line
  const uint64_t wa = t.Word(a), wb = t.Word(b);
  EXPECT_TRUE(EHP_IS_INTERP_FRAME(wa));
  EXPECT_FALSE(EHP_IS_PY_FRAME(wa));
  EXPECT_FALSE(EHP_IS_JVM_FRAME(wa));
  EXPECT_FALSE(EHP_IS_V8_FRAME(wa));
  EXPECT_EQ(EHP_INTERP_FRAME_KIND(wa), uint32_t{EHP_INTERP_RUBY});
  EXPECT_EQ(EHP_INTERP_FRAME_KIND(wb), uint32_t{EHP_INTERP_PHP});
  EXPECT_EQ(t.Name(wb), Named(EHP_INTERP_PHP, "Cart::total", "cart.php", 7));
}

TEST(InterpFrameTable, UnknownIndexNamesTheRuntime) {
  InterpFrameTable t;
  const uint32_t a = t.Add(Named(EHP_INTERP_PHP, "f", "x.php", 1));
  const uint64_t w = t.Word(a);
  t.Clear();
  EXPECT_EQ(t.Name(w).function, "[php unknown]");
  EXPECT_EQ(t.Name(EHP_INTERP_FRAME(EHP_INTERP_RUBY, 0, 0)).function, "[ruby unknown]");
}

// A BPF word is never taken for another runtime's, nor theirs for it.
TEST(InterpFrameTable, WordsOfTheWalkAreTheirOwnKind) {
  const uint64_t w = EHP_INTERP_FRAME(EHP_INTERP_PHP, 0x7f0012345678ull, 42);
  EXPECT_TRUE(EHP_IS_INTERP_FRAME(w));
  EXPECT_EQ(EHP_INTERP_FRAME_OBJECT(w), 0x7f0012345678ull & ~7ull);
  EXPECT_EQ(EHP_INTERP_FRAME_AUX(w), 42u);
  EXPECT_EQ(EHP_INTERP_FRAME_AUX(EHP_INTERP_FRAME(EHP_INTERP_PHP, 8, 1u << 20)), 0u);  // masked, not spilled
  EXPECT_FALSE(EHP_IS_INTERP_FRAME(EHP_PY_FRAME(0x1000, 3)));
  // A Python frame's offset field reaches bit 60, a compiled Java frame and
  // its pc word set bit 59: neither is an interpreter frame.
  EXPECT_FALSE(EHP_IS_INTERP_FRAME(EHP_PY_FRAME(0x1000, EHP_PY_OFFSET_UNKNOWN)));
  EXPECT_TRUE(EHP_IS_PY_FRAME(EHP_PY_FRAME(0x1000, EHP_PY_OFFSET_UNKNOWN)));
  EXPECT_FALSE(EHP_IS_INTERP_FRAME(EHP_JVM_FRAME(0x1000, 3, 1)));
  EXPECT_FALSE(EHP_IS_INTERP_FRAME(EHP_JVM_PC_WORD(0x401000, 1)));
  EXPECT_FALSE(EHP_IS_PY_FRAME(w));
  EXPECT_FALSE(EHP_IS_JVM_FRAME(w));
  EXPECT_FALSE(EHP_IS_JVM_PC(w));
  EXPECT_FALSE(EHP_IS_INTERP_FRAME(EHP_V8_FRAME(0x1000, 3)));
  EXPECT_FALSE(EHP_IS_INTERP_FRAME(0x401000 | EHP_FRAME_EXACT));
}

// Interpreter frames stand leaf-side of their interpreter loop's native
// frame, as Python's: function, then the interpreter's frames above it.
TEST(InterpFrameTable, ResolvedAboveTheirInterpreterLoop) {
  InterpFrameTable t;
  const uint64_t leaf = t.Word(t.Add(Named(EHP_INTERP_RUBY, "Object#work", "app.rb", 12)));
  const uint64_t each = t.Word(t.Add(Named(EHP_INTERP_RUBY, "Array#each", "", -1)));
  const std::vector<uint64_t> user = {0x1000, leaf, each, 0x2000, 0x3000};
  std::vector<ResolvedFrame> out;
  AppendUserFrames(
      user, IsInterpreterLoopFrame, [&](uint64_t v) { return InterpFrame(v, &t); },
      [](uint64_t v, std::vector<ResolvedFrame>* o) {
        ResolvedFrame f;
        f.symbol = v == 0x2000 ? "vm_exec_core" : "native";
        o->push_back(f);
      },
      &out);
  std::vector<std::string> names;
  for (const ResolvedFrame& f : out) names.push_back(f.symbol);
  EXPECT_EQ(names, (std::vector<std::string>{"native", "Object#work", "Array#each", "vm_exec_core", "native"}));
  EXPECT_EQ(out[1].runtime, FrameRuntime::kRuby);
  EXPECT_EQ(out[1].src_file, "app.rb");
  EXPECT_EQ(out[1].line, 12u);
  EXPECT_EQ(out[2].dso, "[ruby]");  // a C method: no script
  EXPECT_EQ(out[2].line, 0u);
}

}  // namespace
}  // namespace ehprof
