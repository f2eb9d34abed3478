#include "agent/output/output_text.h"

#include <sstream>

#include "gtest/gtest.h"

namespace ehprof {
namespace {

TEST(OutputText, HeaderSectionsOffsetsAndSourcePositions) {
  ResolvedFrame k;
  k.addr = 0xffffffff81000071;
  k.symbol = "do_syscall_64";
  k.symbol_start = 0xffffffff81000000;
  k.dso = "[kernel.kallsyms]";
  k.kernel = true;
  ResolvedFrame inl;
  inl.addr = 0x1234;
  inl.symbol = "helper";
  inl.dso = "/bin/x";
  inl.src_file = "x.h";
  inl.line = 7;
  inl.inlined = true;
  ResolvedFrame u;
  u.addr = 0x1234;
  u.symbol = "work";
  u.symbol_start = 0x1200;
  u.dso = "/bin/x";
  u.src_file = "x.c";
  u.line = 42;
  ResolvedSample a;
  a.comm = "x";
  a.pid = 10;
  a.tid = 11;
  a.cpu = 1;
  a.time_ns = 5000000000;
  a.frames = {k, inl, u};
  ResolvedSample b = a;
  b.time_ns = 5001500000;
  b.frames = {u};
  std::ostringstream out;
  ASSERT_TRUE(WriteText({a, b}, out).ok());
  EXPECT_EQ(out.str(),
            "[0.000000] x: x (pid=10, tid=11) @ CPU 1\n"
            "Kernel:\n"
            "  0xffffffff81000071: do_syscall_64 @ 0xffffffff81000000+0x71\n"
            "Userspace:\n"
            "  0x1234: helper x.h:7 (inlined) (/bin/x)\n"
            "  0x1234: work @ 0x1200+0x34 x.c:42 (/bin/x)\n"
            "\n"
            "[0.001500] x: x (pid=10, tid=11) @ CPU 1\n"
            "Userspace:\n"
            "  0x1234: work @ 0x1200+0x34 x.c:42 (/bin/x)\n"
            "\n");
}

}  // namespace
}  // namespace ehprof
