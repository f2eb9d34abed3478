// -e probe specs: what parses, what each error says, and ELF address to
// file offset (what the kernel's uprobe takes).
#include "agent/sampling/probe_spec.h"

#include <elf.h>

#include "gtest/gtest.h"
#include "tests/test_support.h"
#include "elf/elf_file.h"

namespace ehprof {
namespace {

TEST(ProbeSpec, UprobeBySymbolWithOffsetOrByAddress) {
  auto p = ParseProbeSpec("uprobe:/usr/bin/fio:get_io_u+0x10");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->kind, ProbeSpec::Kind::kUprobe);
  EXPECT_EQ(p->path, "/usr/bin/fio");
  EXPECT_EQ(p->symbol, "get_io_u");
  EXPECT_EQ(p->offset, 0x10u);
  EXPECT_STREQ(p->type_name(), "uprobe");
  p = ParseProbeSpec("uretprobe:/bin/x:0x1a2b");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->kind, ProbeSpec::Kind::kUretprobe);
  EXPECT_TRUE(p->symbol.empty());
  EXPECT_EQ(p->address, 0x1a2bu);
}

TEST(ProbeSpec, UsdtAndTracepoint) {
  auto p = ParseProbeSpec("usdt:/usr/bin/python3.11:python:function__entry");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->kind, ProbeSpec::Kind::kUsdt);
  EXPECT_EQ(p->group, "python");
  EXPECT_EQ(p->name, "function__entry");
  p = ParseProbeSpec("tracepoint:syscalls:sys_enter_write");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->kind, ProbeSpec::Kind::kTracepoint);
  EXPECT_EQ(p->group, "syscalls");
  EXPECT_EQ(p->name, "sys_enter_write");
}

TEST(ProbeSpec, ErrorsSayWhatIsWrong) {
  struct Case {
    const char* spec;
    const char* says;
  } cases[] = {
      {"uprobe:bin/fio:f", "absolute"},          {"uprobe:/bin/fio", "PATH:SYMBOL"},
      {"uprobe:/bin/fio:", "no SYMBOL"},          {"uprobe:/bin/fio:0xzz", "hex"},
      {"uprobe:/bin/fio:f+q", "+OFF"},            {"usdt:/bin/x:prov", "usdt:PATH:PROVIDER:NAME"},
      {"tracepoint:sched", "tracepoint:CATEGORY:NAME"}, {"kprobe:", "kprobe:FUNCTION"},
      {"kprobe:a:b", "kprobe:FUNCTION"},            {"fprobe:do_sys_open", "not a probe"},
  };
  for (const Case& c : cases) {
    auto p = ParseProbeSpec(c.spec);
    ASSERT_FALSE(p.ok()) << c.spec;
    EXPECT_NE(p.status().message().find(c.says), std::string::npos) << c.spec << ": " << p.status();
    EXPECT_NE(p.status().message().find(c.spec), std::string::npos) << p.status();
  }
  EXPECT_TRUE(LooksLikeProbe("usdt:/x:a:b"));
  EXPECT_TRUE(LooksLikeProbe("kprobe:vfs_read"));
  auto k = ParseProbeSpec("kprobe:vfs_read");
  ASSERT_TRUE(k.ok()) << k.status();
  EXPECT_EQ(k->kind, ProbeSpec::Kind::kKprobe);
  EXPECT_EQ(k->name, "vfs_read");
  EXPECT_FALSE(LooksLikeProbe("cpu-clock"));
}

TEST(ProbeSpec, AddressToFileOffsetUsesTheExecutableSegment) {
  const std::string prog = testing::TestdataPath("probe_calls");
  const auto leaf = testing::FindSymbol(prog, "counted_leaf");
  ASSERT_TRUE(leaf);
  auto off = FileOffsetOfAddress(prog, leaf->addr);
  ASSERT_TRUE(off.ok()) << off.status();
  auto elf = ElfFile::Open(prog);
  ASSERT_TRUE(elf.ok());
  for (const ElfSegment& s : elf->segments()) {
    if (s.type == PT_LOAD && (s.flags & PF_X)) EXPECT_EQ(*off, leaf->addr - s.vaddr + s.offset);
  }
  EXPECT_FALSE(FileOffsetOfAddress(prog, 0x7fffffff0000).ok());
  EXPECT_FALSE(FileOffsetOfAddress("/nonexistent", 0x1000).ok());
}

}  // namespace
}  // namespace ehprof
