// agent/php/ against a live php8.2 it did not start the sampler for: finds
// the binary and publishes its VM and offsets, and names the frames the
// process's own executor_globals chain holds (words built here as the BPF
// walk builds them) as testdata/php/names.php has them: usleep (internal,
// no file), {closure} at its line, array_map, K::m at its line, the script
// named by its file; a word of a function address the process does not
// have names "[php: unreadable function]", a stop marker its reason.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "agent/php/php_binary.h"
#include "agent/php/php_tracker.h"
#include "agent/process/look_again.h"
#include "agent/process/proc_maps.h"
#include "gtest/gtest.h"
#include "tests/memory_map_writer.h"
#include "tests/test_support.h"

namespace ehprof {
namespace {

constexpr char kPhp[] = "/usr/bin/php8.2";

struct Child {
  pid_t pid = -1;
  ~Child() {
    if (pid > 0) {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
    }
  }
};

// The words the BPF walk would push for pid's current frames, leaf first.
std::vector<uint64_t> FrameWords(pid_t pid) {
  std::vector<uint64_t> words;
  auto maps = ReadProcMaps(pid);
  if (!maps.ok()) return words;
  for (const MapsEntry& e : *maps) {
    if (!e.exec || e.path != kPhp) continue;
    auto elf = ElfFile::Open(kPhp);
    auto bin = InspectPhpBinary(*elf, kPhp);
    if (!bin.ok() || !*bin) return words;
    const ehp_php_proc p = PhpProcFor(**bin, *LoadBias((*bin)->loads, e));
    ProcessMemory mem(pid);
    uint64_t ex = 0;
    if (!mem.ReadU64(p.current_execute_data, &ex)) return words;
    for (int i = 0; ex && i < 64; ++i) {
      uint64_t func = 0, opline = 0, prev = 0;
      mem.ReadU64(ex + p.ex_func, &func);
      mem.ReadU64(ex + p.ex_opline, &opline);
      mem.ReadU64(ex + p.ex_prev, &prev);
      // bpf/php.bpf.h's aux: the opline's masked index, no line read.
      const uint32_t aux = opline ? (opline >> EHP_PHP_OP_SHIFT) & EHP_PHP_OPLINE_MASK : EHP_INTERP_AUX_UNKNOWN;
      words.push_back(EHP_INTERP_FRAME(EHP_INTERP_PHP, func, aux));
      ex = prev;
    }
  }
  return words;
}

TEST(PhpTracker, NamesTheFramesOfALivePhp) {
  if (access(kPhp, X_OK) != 0) GTEST_SKIP() << kPhp << " is not installed (php8.2-cli)";
  const std::string script = testing::SourcePath("testdata/php/names.php");
  Child c;
  std::string line;
  c.pid = testing::StartReadingLine({kPhp, script}, &line);
  ASSERT_GT(c.pid, 0);
  ASSERT_EQ(line, "ready");
  InterpFrameTable table;
  Warnings warnings;
  auto map = std::make_unique<MemoryMapWriter>(sizeof(ehp_php_proc), 16, MemoryMapWriter::Kind::kHash);
  MemoryMapWriter* published = map.get();
  PhpTracker tracker(std::move(map), &table, &warnings);
  std::vector<uint64_t> words;
  for (int i = 0; i < 200 && words.size() < 5; ++i) {  // until it sleeps in usleep
    usleep(10000);
    words = FrameWords(c.pid);
  }
  ASSERT_EQ(words.size(), 5u);
  std::vector<uint64_t> named = words;
  named.push_back(EHP_INTERP_FRAME(EHP_INTERP_PHP, 0x10ull, 7));  // no function there
  named.push_back(EHP_INTERP_FRAME(EHP_INTERP_PHP, 0ull, EHP_PHP_STOP_READ_FAULT));
  tracker.NameFrames(static_cast<uint32_t>(c.pid), 1, &named);
  ehp_php_proc value{};
  ASSERT_TRUE(published->Read(static_cast<uint32_t>(c.pid), &value));
  EXPECT_NE(value.vm_begin[0], 0u);
  auto name = [&](size_t i) { return table.Name(named[i]); };
  EXPECT_EQ(name(0).function, "usleep");
  EXPECT_TRUE(name(0).native);
  EXPECT_EQ(name(0).file, "");
  EXPECT_EQ(name(1).function, "{closure}");
  EXPECT_EQ(name(1).file, script);
  EXPECT_EQ(name(1).line, testing::SourceLineWith("testdata/php/names.php", "// sleep line"));
  EXPECT_EQ(name(2).function, "array_map");
  EXPECT_TRUE(name(2).native);
  EXPECT_EQ(name(3).function, "K::m");
  EXPECT_EQ(name(3).line, testing::SourceLineWith("testdata/php/names.php", "// map line"));
  EXPECT_EQ(name(4).function, script);
  EXPECT_EQ(name(4).line, testing::SourceLineWith("testdata/php/names.php", "// main line"));
  EXPECT_FALSE(name(4).native);
  EXPECT_EQ(name(5).function, "[php: unreadable function]");
  EXPECT_EQ(name(6).function, "[php: frame read fault]");
  auto check = tracker.CheckProcess(static_cast<uint32_t>(c.pid));
  ASSERT_TRUE(check.has_value());
  EXPECT_TRUE(check->readable) << check->detail;
  EXPECT_EQ(check->runtime, "PHP");
  // Gone: its map entry goes with it.
  kill(c.pid, SIGKILL);
  waitpid(c.pid, nullptr, 0);
  tracker.Exit(static_cast<uint32_t>(c.pid));
  EXPECT_FALSE(published->Read(static_cast<uint32_t>(c.pid), &value));
  c.pid = -1;
}

}  // namespace
}  // namespace ehprof
