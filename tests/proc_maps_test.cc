// /proc/PID/maps parsing: the real file of this test, the kernel's odd
// corners (padding, spaces in paths, " (deleted)", pseudo-names) and broken
// text, which must fail with the source and line, never crash.
#include "agent/process/proc_maps.h"

#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace ehprof {
namespace {

using ::testing::HasSubstr;
using ::testing::SizeIs;

// Something whose address is in this binary's text.
__attribute__((noinline)) int AnchorFunction() { return 42; }

std::vector<MapsEntry> ParseOk(const std::string& text) {
  auto r = ParseProcMaps(text, "test.maps");
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *r : std::vector<MapsEntry>{};
}

std::string ParseError(const std::string& text) {
  auto r = ParseProcMaps(text, "test.maps");
  EXPECT_FALSE(r.ok()) << "parsed: " << text;
  return r.ok() ? "" : std::string(r.status().message());
}

TEST(ProcMapsTest, SelfMapsHasThisBinaryExecutable) {
  auto maps = ReadProcMaps(getpid());
  ASSERT_TRUE(maps.ok()) << maps.status();
  char* exe = realpath("/proc/self/exe", nullptr);
  ASSERT_NE(exe, nullptr);
  const std::string exe_path = exe;
  std::free(exe);
  const auto pc = reinterpret_cast<uint64_t>(&AnchorFunction);
  bool found = false;
  for (const MapsEntry& e : *maps) {
    if (pc >= e.start && pc < e.end) {
      EXPECT_TRUE(e.exec);
      EXPECT_TRUE(e.read);
      EXPECT_TRUE(e.priv);
      EXPECT_EQ(e.path, exe_path);
      EXPECT_FALSE(e.deleted);
      EXPECT_NE(e.inode, 0u);
      found = true;
    }
  }
  EXPECT_TRUE(found) << "no mapping holds " << std::hex << pc;
  AnchorFunction();
}

TEST(ProcMapsTest, RealFileLine) {
  auto v = ParseOk(
      "7efec44f6000-7efec464c000 r-xp 00026000 fe:00 332835                     "
      "/usr/lib/x86_64-linux-gnu/libc.so.6\n");
  ASSERT_THAT(v, SizeIs(1));
  const MapsEntry& e = v[0];
  EXPECT_EQ(e.start, 0x7efec44f6000u);
  EXPECT_EQ(e.end, 0x7efec464c000u);
  EXPECT_TRUE(e.read);
  EXPECT_FALSE(e.write);
  EXPECT_TRUE(e.exec);
  EXPECT_TRUE(e.priv);
  EXPECT_EQ(e.offset, 0x26000u);
  EXPECT_EQ(e.dev_major, 0xfeu);
  EXPECT_EQ(e.dev_minor, 0u);
  EXPECT_EQ(e.inode, 332835u);
  EXPECT_EQ(e.path, "/usr/lib/x86_64-linux-gnu/libc.so.6");
  EXPECT_FALSE(e.deleted);
}

TEST(ProcMapsTest, AnonymousPseudoNamesSharedAndSpaces) {
  auto v = ParseOk(
      // Anonymous: the kernel leaves a space after the inode and no name.
      "7efec43ac000-7efec4470000 rw-p 00000000 00:00 0 \n"
      "7ffd1a2b3000-7ffd1a2b5000 r-xp 00000000 00:00 0                          [vdso]\n"
      "7ffd1a200000-7ffd1a221000 rw-p 00000000 00:00 0                          [stack]\n"
      "7f0000000000-7f0000001000 rw-s 00000010 103:1a 7 /tmp/my dir/a  b.so\n"
      "7f0000002000-7f0000003000 r--p 00000000 00:00 0 [anon:glibc: malloc arena]\n"
      "ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]");
  ASSERT_THAT(v, SizeIs(6));
  EXPECT_EQ(v[0].path, "");
  EXPECT_TRUE(v[0].write);
  EXPECT_FALSE(v[0].exec);
  EXPECT_EQ(v[1].path, "[vdso]");
  EXPECT_TRUE(v[1].exec);
  EXPECT_EQ(v[2].path, "[stack]");
  EXPECT_EQ(v[3].path, "/tmp/my dir/a  b.so");
  EXPECT_FALSE(v[3].priv);
  EXPECT_EQ(v[3].offset, 0x10u);
  EXPECT_EQ(v[3].dev_major, 0x103u);
  EXPECT_EQ(v[3].dev_minor, 0x1au);
  EXPECT_EQ(v[4].path, "[anon:glibc: malloc arena]");
  EXPECT_EQ(v[5].start, 0xffffffffff600000u);
  EXPECT_FALSE(v[5].read);
  EXPECT_EQ(v[5].path, "[vsyscall]");
}

TEST(ProcMapsTest, DeletedSuffixIsStripped) {
  auto v = ParseOk(
      "1000-2000 r-xp 00000000 08:01 12 /opt/app/lib foo.so (deleted)\n"
      "3000-4000 rw-s 00000000 00:01 5 /memfd:jit code (deleted)\n"
      "5000-6000 r--p 00000000 08:01 13 /opt/(deleted)\n");
  ASSERT_THAT(v, SizeIs(3));
  EXPECT_EQ(v[0].path, "/opt/app/lib foo.so");
  EXPECT_TRUE(v[0].deleted);
  EXPECT_EQ(v[1].path, "/memfd:jit code");
  EXPECT_TRUE(v[1].deleted);
  EXPECT_EQ(v[2].path, "/opt/(deleted)");
  EXPECT_FALSE(v[2].deleted);
}

TEST(ProcMapsTest, EmptyTextAndMissingFinalNewline) {
  EXPECT_THAT(ParseOk(""), SizeIs(0));
  EXPECT_THAT(ParseOk("1000-2000 r--p 0 00:00 0"), SizeIs(1));
}

TEST(ProcMapsTest, MalformedLineNamesSourceAndLine) {
  const std::string good = "1000-2000 r--p 00000000 00:00 0 /a\n";
  EXPECT_THAT(ParseError(good + good + "1000-2000 r--q 00000000 00:00 0 /a\n"),
              HasSubstr("test.maps:3: bad permissions"));
  EXPECT_THAT(ParseError(good + "\n" + good), HasSubstr("test.maps:2: empty line"));
  EXPECT_THAT(ParseError("10002000 r--p 0 00:00 0\n"), HasSubstr("test.maps:1: address range"));
  EXPECT_THAT(ParseError("2000-1000 r--p 0 00:00 0\n"), HasSubstr("ends before it starts"));
  EXPECT_THAT(ParseError("1000-1000 r--p 0 00:00 0\n"), HasSubstr("ends before it starts"));
  EXPECT_THAT(ParseError("1000-2000 r--p 0 0000 0\n"), HasSubstr("bad device"));
  EXPECT_THAT(ParseError("1000-2000 r--p 0 00:100000000 0\n"), HasSubstr("bad device"));
  EXPECT_THAT(ParseError("1000-2000 r--p 0 00:00 12a\n"), HasSubstr("bad inode"));
  EXPECT_THAT(ParseError("1000-2000 r--p 0 00:00\n"), HasSubstr("bad inode"));
  EXPECT_THAT(ParseError("1000-2000 r--p 0 00:00 99999999999999999999\n"),
              HasSubstr("bad inode"));
  EXPECT_THAT(ParseError("1000-10000000000000000 r--p 0 00:00 0\n"),
              HasSubstr("bad hex address"));
  EXPECT_THAT(ParseError("1000-2000 r--p 0x0 00:00 0\n"), HasSubstr("bad hex offset"));
  EXPECT_THAT(ParseError(" 1000-2000 r--p 0 00:00 0\n"), HasSubstr("test.maps:1:"));
  // The quoted line is escaped and cut short.
  const std::string msg = ParseError("zz\x01" + std::string(500, 'a') + "\n");
  EXPECT_THAT(msg, HasSubstr("'zz\\001aaa"));
  EXPECT_THAT(msg, HasSubstr("...'"));
  EXPECT_LT(msg.size(), 300u);
}

// Every prefix and single-byte change of valid text either parses or fails
// cleanly; under ASan this is a small deterministic fuzz.
TEST(ProcMapsTest, MutationsNeverCrash) {
  const std::string text =
      "55d56bc64000-55d56bc69000 r-xp 00002000 fe:00 247134   /usr/bin/cat\n"
      "7efec43ac000-7efec4470000 rw-p 00000000 00:00 0 \n"
      "7ffd1a2b3000-7ffd1a2b5000 r-xp 00000000 00:00 0  /x (deleted)\n";
  const char replacements[] = {'\0', '\n', ' ', '-', ':', 'f', 'g', '9', '\xff'};
  for (size_t i = 0; i <= text.size(); ++i) {
    (void)ParseProcMaps(text.substr(0, i), "prefix");
    if (i == text.size()) break;
    for (char c : replacements) {
      std::string mutated = text;
      mutated[i] = c;
      auto r = ParseProcMaps(mutated, "mutated");
      if (!r.ok()) EXPECT_THAT(std::string(r.status().message()), HasSubstr("mutated:"));
    }
  }
}

TEST(ProcMapsTest, ExitedProcessIsNotFound) {
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) _exit(0);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  auto r = ReadProcMaps(child);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(absl::IsNotFound(r.status())) << r.status();
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("/proc/"));
  // No pid reaches INT_MAX (pid_max is at most 2^22).
  EXPECT_TRUE(absl::IsNotFound(ReadProcMaps(INT_MAX).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(ReadProcMaps(0).status()));
}

// Inside a SharedProcMaps every reader of its pid gets the scope's one
// read: a mapping made after it is not in what a later reader gets, but
// is once the scope is gone; another pid's reads are their own.
TEST(ProcMapsTest, SharedScopeReadsOnce) {
  const int self = static_cast<int>(::getpid());
  auto holds = [](const std::vector<MapsEntry>& maps, uintptr_t at) {
    for (const MapsEntry& e : maps) {
      if (e.start <= at && at < e.end) return true;
    }
    return false;
  };
  void* region = nullptr;
  {
    const SharedProcMaps scope(self);
    auto first = ReadProcMaps(self);
    ASSERT_TRUE(first.ok()) << first.status();
    region = ::mmap(nullptr, 3 * 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(region, MAP_FAILED);
    auto second = ReadProcMaps(self);
    ASSERT_TRUE(second.ok()) << second.status();
    EXPECT_EQ(second->size(), first->size());
    EXPECT_FALSE(holds(*second, reinterpret_cast<uintptr_t>(region)));
    {
      const SharedProcMaps other(INT_MAX);
      EXPECT_TRUE(absl::IsNotFound(ReadProcMaps(INT_MAX).status()));
      EXPECT_TRUE(ReadProcMaps(self).ok());  // the outer scope's
      EXPECT_EQ(other.reads(), 1);
    }
    EXPECT_EQ(scope.reads(), 1);
  }
  auto after = ReadProcMaps(self);
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_TRUE(holds(*after, reinterpret_cast<uintptr_t>(region)));
  ::munmap(region, 3 * 4096);
}

}  // namespace
}  // namespace ehprof
