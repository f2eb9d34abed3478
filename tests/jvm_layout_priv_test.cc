// agent/jvm/ against live JVMs it did not start the sampler for: JDK 17
// (Debian's openjdk-17, scripts/packages.sh) and Temurin 25 where it is
// installed. The JVM runs testdata/JvmNames.java (javac'd by the test);
// the tracker must publish code heaps whose reserved ranges lie in the
// process's mappings, executable from their start, walking those heaps' segment maps as the BPF side
// does must find the JIT's nmethod of JvmNames.spin, and naming its
// Method* must give the class, method, file and, at each bci javap -c -l
// lists, its line. A pointer that is no Method* names method 0. No BPF:
// the map is an in-memory one.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <iostream>
#include <regex>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_format.h"
#include "agent/jvm/jvm_tracker.h"
#include "agent/jvm/vm_structs.h"
#include "agent/process/proc_maps.h"
#include "gtest/gtest.h"
#include "tests/memory_map_writer.h"
#include "tests/test_support.h"

namespace ehprof {
namespace {

uint64_t NowNs() {
  return static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
}

// A JVM running JvmNames from a temporary directory; killed at the end.
struct Jvm {
  pid_t pid = -1;
  std::string dir;
  ~Jvm() {
    if (pid > 0) {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
    }
    if (!dir.empty()) std::filesystem::remove_all(dir);
  }
};

void StartJvm(const std::string& jdk, Jvm* j) {
  char tmpl[] = "/tmp/ehprof-jvm-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  j->dir = tmpl;
  const std::string javac = testing::ShellOutput(jdk + "/bin/javac -d " + j->dir + " " +
                                                 testing::SourcePath("testdata/JvmNames.java") + " && echo compiled");
  ASSERT_TRUE(absl::StrContains(javac, "compiled")) << javac;
  std::string line;
  j->pid = testing::StartReadingLine({jdk + "/bin/java", "-cp", j->dir, "JvmNames"}, &line);
  ASSERT_GT(j->pid, 0);
  ASSERT_EQ(line, "ready");
}

// The (bci, line) pairs of `method`'s LineNumberTable as javap -c -l
// prints them ("line 6: 0").
std::vector<std::pair<uint32_t, int>> JavapLines(const std::string& jdk, const std::string& dir,
                                                 const std::string& method) {
  const std::string out = testing::ShellOutput(jdk + "/bin/javap -c -l -cp " + dir + " JvmNames");
  const size_t at = out.find(" " + method + "(");
  if (at == std::string::npos) return {};
  std::string rest = out.substr(at);
  const size_t table = rest.find("LineNumberTable:");
  if (table == std::string::npos) return {};
  rest = rest.substr(table, rest.find("\n\n", table) - table);  // up to the next member
  std::vector<std::pair<uint32_t, int>> pairs;
  const std::regex line("line ([0-9]+): ([0-9]+)");
  for (std::sregex_iterator it(rest.begin(), rest.end(), line), end; it != end; ++it) {
    pairs.emplace_back(std::stoul((*it)[2]), std::stoi((*it)[1]));
  }
  return pairs;
}

// The layout through the same blocks the tracker uses.
absl::StatusOr<JvmLayout> LayoutOf(pid_t pid) {
  auto maps = ReadProcMaps(pid);
  if (!maps.ok()) return maps.status();
  auto e = FindLibjvmMapping(*maps);
  if (!e) return absl::NotFoundError("no libjvm.so mapped");
  auto elf = ElfFile::Open(absl::StrFormat("/proc/%d/map_files/%x-%x", pid, e->start, e->end));
  if (!elf.ok()) return elf.status();
  auto file = InspectLibjvm(*elf);
  if (!file.ok()) return file.status();
  auto bias = LoadBias(file->loads, *e);
  if (!bias) return absl::InternalError("no bias");
  ProcessMemory mem(pid);
  auto vm = VmStructs::Read(mem, RuntimeSymbols(*file, *bias));
  if (!vm.ok()) return vm.status();
  return ReadJvmLayout(*vm, mem);
}

// The Method* of every nmethod the code heaps' segment maps lead to, as
// the BPF walk finds a blob: a block starts where the map holds 0, its
// blob follows the HeapBlock header. A heap spans its reserved range; its
// map reads as far as the heap has committed.
std::vector<uint64_t> NmethodMethods(const ProcessMemory& mem, const ehp_jvm_proc& p) {
  std::vector<uint64_t> out;
  constexpr size_t kPage = 4096;
  for (int h = 0; h < p.nheaps; ++h) {
    const ehp_jvm_heap& heap = p.heaps[h];
    std::vector<uint8_t> map((heap.high - heap.low) >> p.log2_segment);
    size_t committed = 0;
    while (committed < map.size() &&
           mem.Read(heap.segmap + committed, map.data() + committed, std::min(kPage, map.size() - committed))) {
      committed += std::min(kPage, map.size() - committed);
    }
    for (size_t i = 0; i < committed; ++i) {
      if (map[i] != 0) continue;
      const uint64_t blob = heap.low + (uint64_t{i} << p.log2_segment) + p.heap_block;
      uint64_t name = 0, method = 0;
      if (!mem.ReadU64(blob + p.blob_name, &name)) continue;
      auto s = ReadVmString(mem, name);
      if (s.ok() && *s == "nmethod" && mem.ReadU64(blob + p.nmethod_method, &method) && method) {
        out.push_back(method);
      }
    }
  }
  return out;
}

// Whether [lo, hi) lies in mappings of pid, end to end, executable ones
// from lo on for at least `exec` bytes (a heap's committed start; the
// rest of its reservation is mapped without access until committed).
bool InMappings(pid_t pid, uint64_t lo, uint64_t hi, uint64_t exec) {
  auto maps = ReadProcMaps(pid);
  if (!maps.ok()) return false;
  uint64_t at = lo, exec_to = lo;
  for (const MapsEntry& e : *maps) {
    if (e.start <= at && at < e.end) {
      if (e.exec && exec_to == at) exec_to = e.end;
      at = e.end;
    }
  }
  return at >= hi && exec_to >= lo + exec;
}

void Print(const std::string& jdk, const ehp_jvm_proc& p) {
  std::cout << jdk << ": nheaps " << int{p.nheaps} << " log2_segment " << int{p.log2_segment} << std::hex;
  for (int i = 0; i < p.nheaps; ++i) {
    std::cout << " heap[" << i << "] 0x" << p.heaps[i].low << "-0x" << p.heaps[i].high << " segmap 0x"
              << p.heaps[i].segmap;
  }
  std::cout << std::dec << "\n  code_begin_is_offset " << int{p.code_begin_is_offset} << " frame_complete_i16 "
            << int{p.blob_frame_complete_i16} << " heap_block " << p.heap_block << " blob_name " << p.blob_name
            << " frame_size " << p.blob_frame_size << " frame_complete " << p.blob_frame_complete
            << " code_begin " << p.blob_code_begin << " nmethod_method " << p.nmethod_method << " method_const "
            << p.method_const << " const_method_size " << p.const_method_size << " interp method/bcp/sender_sp "
            << int{p.interp_method} << "/" << int{p.interp_bcp} << "/" << int{p.interp_sender_sp} << "\n";
}

class JvmLayoutTest : public ::testing::TestWithParam<const char*> {};

TEST_P(JvmLayoutTest, PublishesHeapsAndNamesTheHotMethod) {
  const std::string jdk = GetParam();
  if (access((jdk + "/bin/javac").c_str(), X_OK) != 0) GTEST_SKIP() << jdk << " is not installed";
  Jvm j;
  ASSERT_NO_FATAL_FAILURE(StartJvm(jdk, &j));
  auto* writer = new MemoryMapWriter(sizeof(ehp_jvm_proc), 16, MemoryMapWriter::Kind::kHash);
  Warnings warnings;
  JvmTracker tracker(std::unique_ptr<MapWriter>(writer), &warnings);
  ehp_jvm_proc p{};
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!writer->Read(static_cast<uint32_t>(j.pid), &p) && std::chrono::steady_clock::now() < deadline) {
    tracker.Notice(static_cast<uint32_t>(j.pid), NowNs());
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_TRUE(writer->Read(static_cast<uint32_t>(j.pid), &p)) << ::testing::PrintToString(warnings.Take());
  Print(jdk, p);
  ASSERT_GE(p.nheaps, 1);
  ASSERT_LE(p.nheaps, EHP_JVM_HEAPS);
  for (int i = 0; i < p.nheaps; ++i) {
    EXPECT_LT(p.heaps[i].low, p.heaps[i].high);
    EXPECT_TRUE(InMappings(j.pid, p.heaps[i].low, p.heaps[i].high, 4096)) << "heap " << i;
    EXPECT_LE(p.code_lo, p.heaps[i].low);
    EXPECT_GE(p.code_hi, p.heaps[i].high);
  }
  for (uint32_t v : {uint32_t{p.log2_segment}, uint32_t{p.heap_block}, uint32_t{p.blob_name},
                     uint32_t{p.blob_frame_size}, uint32_t{p.blob_frame_complete}, uint32_t{p.blob_code_begin},
                     uint32_t{p.nmethod_method}, uint32_t{p.method_const}, uint32_t{p.const_method_size}}) {
    EXPECT_NE(v, 0u);
  }
  EXPECT_EQ(p.interp_method, 24);
  EXPECT_EQ(p.interp_bcp, 64);
  EXPECT_EQ(p.interp_sender_sp, 8);
  const std::vector<JvmFound> found = tracker.Found();
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].problem, "");
  EXPECT_TRUE(absl::EndsWith(found[0].libjvm, "/libjvm.so")) << found[0].libjvm;
  // The JVM's own release string: "17.0.15+6-Debian-1deb12u1", "25+36-LTS".
  EXPECT_TRUE(absl::StartsWith(found[0].version, absl::StrContains(jdk, "-25-") ? "25" : "17.")) << found[0].version;
  std::cout << jdk << ": version " << found[0].version << "\n";

  // The JIT compiles spin within seconds of the loop's start.
  auto layout = LayoutOf(j.pid);
  ASSERT_TRUE(layout.ok()) << layout.status();
  ProcessMemory mem(j.pid);
  uint64_t spin = 0;
  for (auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
       !spin && std::chrono::steady_clock::now() < until;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    writer->Read(static_cast<uint32_t>(j.pid), &p);
    for (uint64_t m : NmethodMethods(mem, p)) {
      auto read = ReadJvmMethod(mem, layout->method, m);
      if (read.ok() && read->class_name == "JvmNames" && read->name == "spin") spin = m;
    }
  }
  ASSERT_NE(spin, 0u) << "no nmethod of JvmNames.spin in the code heaps";

  std::vector<uint64_t> frames = {EHP_JVM_FRAME(spin, 0, 0), EHP_JVM_FRAME(spin, 0, 1),
                                  EHP_JVM_FRAME(spin + 8, 3, 0), EHP_JVM_FRAME(p.code_lo, 0, 1)};
  tracker.NameFrames(static_cast<uint32_t>(j.pid), NowNs(), &frames);
  const JvmFrameName interpreted = tracker.methods().Name(frames[0]);
  EXPECT_EQ(interpreted.class_name, "JvmNames");
  EXPECT_EQ(interpreted.method, "spin");
  EXPECT_EQ(interpreted.file, "JvmNames.java");
  EXPECT_FALSE(interpreted.compiled);
  EXPECT_EQ(interpreted.line, testing::SourceLineWith("testdata/JvmNames.java", "long acc = x ^"));
  // Every pair javac wrote, as the interpreter's frames would carry them.
  const auto pairs = JavapLines(jdk, j.dir, "spin");
  ASSERT_GE(pairs.size(), 3u);
  EXPECT_EQ(pairs[0], std::make_pair(uint32_t{0}, interpreted.line));
  for (const auto& [bci, line] : pairs) {
    std::vector<uint64_t> at = {EHP_JVM_FRAME(spin, bci, 0)};
    tracker.NameFrames(static_cast<uint32_t>(j.pid), NowNs(), &at);
    EXPECT_EQ(tracker.methods().Name(at[0]).line, line) << "bci " << bci;
  }
  const JvmFrameName compiled = tracker.methods().Name(frames[1]);
  EXPECT_EQ(compiled.class_name + "." + compiled.method, "JvmNames.spin");
  EXPECT_TRUE(compiled.compiled);
  EXPECT_EQ(compiled.line, -1);
  // Not Method*s: method 0, never a name.
  EXPECT_EQ(frames[2] & EHP_JVM_METHOD_MASK, 0u);
  EXPECT_EQ(frames[3] & EHP_JVM_METHOD_MASK, 0u);
  EXPECT_EQ(tracker.methods().Name(frames[2]).method, "[jvm: interpreter]");
  EXPECT_TRUE(tracker.methods().Name(frames[3]).class_name.empty());

  // Gone: the names read stay, the map entry goes.
  kill(j.pid, SIGKILL);
  waitpid(j.pid, nullptr, 0);
  std::vector<uint64_t> after = {EHP_JVM_FRAME(spin, 0, 0)};
  tracker.NameFrames(static_cast<uint32_t>(j.pid), NowNs() + 1'000'000'000, &after);
  EXPECT_EQ(tracker.methods().Name(after[0]).method, "spin");
  tracker.Exit(static_cast<uint32_t>(j.pid));
  EXPECT_FALSE(writer->Read(static_cast<uint32_t>(j.pid), &p));
  j.pid = -1;
}

INSTANTIATE_TEST_SUITE_P(Jdks, JvmLayoutTest,
                         ::testing::Values("/usr/lib/jvm/java-17-openjdk-amd64", "/usr/lib/jvm/temurin-25-jdk-amd64"),
                         [](const auto& info) {
                           return std::string(absl::StrContains(info.param, "temurin-25") ? "Temurin25" : "Jdk17");
                         });

}  // namespace
}  // namespace ehprof
