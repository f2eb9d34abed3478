// Files a local user controls, used against a real `ehprof agent` (root)
// by a child running as uid 65534 with files in a directory it owns:
// .gnu_debuglink names leading to a FIFO, a device or a symlink; a sampled
// shared library truncated while it runs; a compression bomb in a sampled
// program. Each time the agent must stay alive, write every interval,
// keep the other processes' stacks whole, say the problem once, and end
// promptly on SIGINT.
#include <elf.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gtest/gtest.h"
#include "tests/pprof_stacks.h"
#include "tests/test_support.h"
#include "tests/hostile_user.h"
#include "elf/elf_file.h"

extern char** environ;

namespace ehprof {
namespace {

namespace fs = std::filesystem;
using testing::RequireRootForBpf;
using testing::TestdataPath;

using testing::kSetpriv;
using testing::kNobody;

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// In a process group of its own, so that it and whatever it starts can be
// ended together.
pid_t Spawn(std::vector<std::string> args) {
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, argv[0], nullptr, &attr, argv.data(), environ);
  posix_spawnattr_destroy(&attr);
  return rc == 0 ? pid : -1;
}

// The peak resident set of a process, in kB (VmHWM).
uint64_t PeakRssKb(pid_t pid) {
  std::ifstream f(absl::StrCat("/proc/", pid, "/status"));
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stoull(line.substr(6));
  }
  return 0;
}

struct AgentRun {
  testing::RunResult r;
  double ended_after_sigint_s = 0;
  uint64_t peak_rss_kb = 0;
};

class HostileFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!RequireRootForBpf()) GTEST_SKIP();
    if (!testing::RequireSetpriv()) GTEST_SKIP();
    const std::string base =
        (fs::path(::testing::TempDir()) / absl::StrCat("hostile_files.", getpid())).lexically_normal();
    dir_ = base + ".user";
    out_ = base + ".out";
    for (const std::string& d : {dir_, out_, out_ + ".normal"}) fs::remove_all(d);
    fs::create_directories(dir_);
    fs::permissions(dir_, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                              fs::perms::others_read | fs::perms::others_exec);
    // The user's inputs, copied where uid 65534 can read them (the build
    // tree may be where it cannot), then the directory is the user's.
    for (const char* name : {"deep_recursion", "deep_recursion.stripped", "dlopen_main",
                             "libdlwork.so"}) {
      fs::copy_file(TestdataPath(name), dir_ + "/src." + name);
      ASSERT_EQ(chown((dir_ + "/src." + name).c_str(), kNobody, kNobody), 0);
    }
    ASSERT_EQ(chown(dir_.c_str(), kNobody, kNobody), 0);
    // The normal program, root's: its stacks must stay whole throughout.
    // A copy of this test's own (in out_, root's), told apart by its path
    // from other tests' deep_recursion at other depths, which the agent
    // samples too (it profiles the whole machine; agent profiles carry no
    // pid).
    fs::create_directories(out_ + ".normal");
    normal_path_ = out_ + ".normal/deep_recursion";
    fs::copy_file(TestdataPath("deep_recursion"), normal_path_);
    normal_ = Spawn({normal_path_, "40", "20"});
    ASSERT_GT(normal_, 0);
  }
  void TearDown() override {
    if (normal_ > 0) pids_.push_back(normal_);
    for (pid_t p : pids_) kill(-p, SIGKILL);  // its group: a shell's children too
    for (pid_t p : pids_) waitpid(p, nullptr, 0);
    for (const std::string& d : {dir_, out_, out_ + ".normal"}) {
      if (!d.empty()) fs::remove_all(d);
    }
  }

  // `script` run by sh as uid/gid 65534, no groups, in dir_.
  std::vector<std::string> NobodyShell(const std::string& script) {
    return {kSetpriv, "--reuid=65534", "--regid=65534", "--clear-groups", "/bin/sh", "-c",
            absl::StrCat("cd '", dir_, "' || exit 1\n", script)};
  }
  int AsNobody(const std::string& script) {
    const pid_t p = Spawn(NobodyShell(script));
    int status = 0;
    if (p <= 0 || waitpid(p, &status, 0) != p) return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  // Left running; killed at the end of the test.
  void StartAsNobody(const std::string& script) {
    const pid_t p = Spawn(NobodyShell(script));
    ASSERT_GT(p, 0);
    pids_.push_back(p);
  }

  // `ehprof agent` over the whole machine for `run_ms`, one profile a
  // second, then (after `before_sigint`, if given, returns) SIGINT.
  // Without the shared table cache: these tests count what this agent says
  // when it builds each hostile file's table, and another test's agent
  // (ctest -j runs them side by side, each over the whole machine) may
  // have built and cached it first.
  // The whole host unless `only` names the processes to profile.
  AgentRun RunAgent(int run_ms, const std::function<void()>& before_sigint = nullptr,
                    const std::vector<pid_t>& only = {}) {
    AgentRun a;
    std::chrono::steady_clock::time_point sigint;
    std::vector<std::string> args = {"agent",        "--output-dir", out_, "--interval", "1",
                                     "-F",           "199",          "--no-table-cache"};
    if (!only.empty()) {
      args.push_back("-p");
      args.push_back(absl::StrJoin(only, ","));
    }
    a.r = testing::RunEhprof(args, SIGINT, run_ms, [&](pid_t agent) {
      if (before_sigint) before_sigint();
      a.peak_rss_kb = PeakRssKb(agent);
      sigint = std::chrono::steady_clock::now();
    });
    a.ended_after_sigint_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - sigint).count();
    return a;
  }

  // Whether a profile written so far names a frame of `mapping` (a file
  // name) with a function starting with `prefix`.
  bool Named(const std::string& mapping, const std::string& prefix) {
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(out_, ec)) {
      auto p = testing::ReadPprof(e.path());
      if (!p) continue;  // being written
      for (const auto& [count, frames] : testing::PprofStacks(*p)) {
        if (!frames.empty() && frames[0].mapping.ends_with("/" + mapping) &&
            frames[0].function.rfind(prefix, 0) == 0) {
          return true;
        }
      }
    }
    return false;
  }

  // The agent's profiles, oldest first.
  std::vector<perftools::profiles::Profile> Profiles() {
    std::vector<std::string> files;
    for (const auto& e : fs::directory_iterator(out_)) files.push_back(e.path());
    std::sort(files.begin(), files.end());
    std::vector<perftools::profiles::Profile> out;
    for (const std::string& f : files) {
      auto p = testing::ReadPprof(f);
      EXPECT_TRUE(p.has_value()) << f;
      if (p) out.push_back(*std::move(p));
    }
    return out;
  }

  // What every attack must leave: the agent ended on SIGINT with 0 and
  // promptly, one profile per second with no interval missing, and the
  // normal program's stacks (deep_recursion, depth 20) whole from
  // recurse_leaf to main in the whole intervals. `program` names another
  // program (by its file's name) whose stacks must be whole too.
  void ExpectAgentUnharmed(const AgentRun& a, const std::string& program = "") {
    ASSERT_EQ(a.r.exit_code, 0) << a.r.err;
    // A hang check, not a speed one: the issue saw no end within 15 s.
    EXPECT_LT(a.ended_after_sigint_s, 15.0) << a.r.err;
    std::vector<perftools::profiles::Profile> profiles = Profiles();
    ASSERT_GE(profiles.size(), 4u) << a.r.err;
    // Each interval starts where the one before ended: none was dropped.
    for (size_t i = 0; i + 1 < profiles.size(); ++i) {
      const int64_t end = profiles[i].time_nanos() + profiles[i].duration_nanos();
      EXPECT_LT(std::abs(profiles[i + 1].time_nanos() - end), 200'000'000)
          << "profile " << i << " ends at " << end << ", the next starts at "
          << profiles[i + 1].time_nanos();
    }
    EXPECT_NE(a.r.err.find(" (0 intervals dropped), stopped"), std::string::npos) << a.r.err;
    for (const std::string& name : {std::string("deep_recursion"), program}) {
      if (name.empty()) continue;
      // Counted from the interval after the first with a whole stack: on
      // a loaded machine (a test suite running beside) the agent may take
      // a few seconds to load this program's table, and its stacks are cut
      // at the leaf until then. From there on, every whole interval.
      uint64_t total = 0, whole = 0, intervals = 0;
      bool loaded = false;
      std::string broken;  // one stack that is not whole, leaf first
      for (size_t i = 1; i + 1 < profiles.size(); ++i) {
        uint64_t here = 0, here_whole = 0;
        std::string here_broken;
        for (const auto& [count, frames] : testing::PprofStacks(profiles[i])) {
          if (frames.empty()) continue;
          if (name == "deep_recursion" ? frames[0].mapping != normal_path_
                                       : !frames[0].mapping.ends_with("/" + name)) {
            continue;
          }
          here += count;
          size_t recurses = 0;
          bool main = false;
          for (const testing::PprofFrame& f : frames) {
            recurses += f.function == "recurse";
            main = main || f.function == "main";
          }
          if (frames[0].function.rfind("recurse", 0) == 0 && main && recurses >= 20) {
            here_whole += count;
          } else if (here_broken.empty()) {
            for (const testing::PprofFrame& f : frames) here_broken += f.function + ";";
          }
        }
        if (loaded) {
          EXPECT_GT(here, 0u) << name << " unsampled in interval " << i << "\n" << a.r.err;
          total += here;
          whole += here_whole;
          ++intervals;
          if (broken.empty()) broken = here_broken;
        }
        loaded = loaded || here_whole > 0;
      }
      EXPECT_GE(intervals, 1u) << name << ": no whole stack before the last whole interval\n"
                               << a.r.err;
      EXPECT_GE(whole, total * 9 / 10) << name << ": " << whole << " of " << total
                                        << " whole; one that is not: " << broken;
    }
  }

  std::string dir_, out_;
  pid_t normal_ = 0;
  std::string normal_path_;
  std::vector<pid_t> pids_;
};

TEST_F(HostileFiles, DebugLinksToAFifoADeviceOrASymlinkAreRefusedOnce) {
  // objcopy needs the named file to exist (for its CRC): a regular file
  // first, replaced afterwards. A link holding a path is written over a
  // placeholder name of the same length (objcopy records only a name).
  // The copies lose their build-id: the .gnu_debuglink is then the only
  // lookup, and no cache keyed by build-id mixes them with the normal
  // program (the same build).
  ASSERT_EQ(AsNobody("set -e\n"
                     "objcopy --remove-section .note.gnu.build-id src.deep_recursion.stripped noid\n"
                     "cp noid prog_fifo && : > prog_fifo.dbg\n"
                     "objcopy --remove-section .gnu_debuglink --add-gnu-debuglink=prog_fifo.dbg prog_fifo\n"
                     "rm prog_fifo.dbg && mkfifo prog_fifo.dbg\n"
                     "cp noid prog_dev && : > XXXXXXXXXXXXXXXXX\n"
                     "objcopy --remove-section .gnu_debuglink --add-gnu-debuglink=XXXXXXXXXXXXXXXXX prog_dev\n"
                     "rm XXXXXXXXXXXXXXXXX\n"
                     "perl -pi -e 's{XXXXXXXXXXXXXXXXX}{../../../dev/zero}' prog_dev\n"
                     "grep -q ../../../dev/zero prog_dev\n"
                     "cp noid prog_link && : > zero\n"
                     "objcopy --remove-section .gnu_debuglink --add-gnu-debuglink=zero prog_link\n"
                     "rm zero && ln -s /dev/zero zero\n"),
            0);
  const auto before = fs::status(dir_ + "/prog_fifo.dbg");
  ASSERT_EQ(before.type(), fs::file_type::fifo);
  // Niced: they only need to be sampled, the normal program to run.
  StartAsNobody("exec nice -n 19 ./prog_fifo 40 20");
  StartAsNobody("exec nice -n 19 ./prog_dev 40 20");
  StartAsNobody("exec nice -n 19 ./prog_link 40 20");
  AgentRun a = RunAgent(8000);
  ExpectAgentUnharmed(a);
  EXPECT_EQ(Count(a.r.err, "prog_fifo.dbg: not read: a FIFO, not a regular file"), 1u) << a.r.err;
  EXPECT_EQ(Count(a.r.err, "its .gnu_debuglink names \"../../../dev/zero\", not a plain file name"), 1u)
      << a.r.err;
  EXPECT_EQ(Count(a.r.err, "/zero: not read: a symbolic link, not a regular file"), 1u) << a.r.err;
  // Nothing of the user's was touched: the FIFO is still there, unopened.
  EXPECT_EQ(fs::status(dir_ + "/prog_fifo.dbg").type(), fs::file_type::fifo);

  // `ehprof record -a` meets the same programs, and symbolizes their
  // frames with libdwfl (whose own search opened the FIFO).
  const std::string folded = out_ + "/record.folded";
  testing::RunResult rec = testing::RunEhprof({"record", "-a", "-q", "-d", "2", "-o", folded});
  ASSERT_EQ(rec.exit_code, 0) << rec.err;
  std::ifstream in(folded);
  std::string line;
  uint64_t normal = 0, whole = 0;
  while (std::getline(in, line)) {
    if (line.rfind("deep_recursion;", 0) != 0) continue;
    const uint64_t n = std::stoull(line.substr(line.rfind(' ') + 1));
    normal += n;
    if (line.find(";main;") != std::string::npos && line.find(";recurse_leaf") != std::string::npos) {
      whole += n;
    }
  }
  // Whole stacks, named (a recording's first second also holds stacks cut
  // short while tables load: not counted against it).
  EXPECT_GT(normal, 0u) << rec.err;
  EXPECT_GT(whole, 0u) << rec.err;
}

TEST_F(HostileFiles, ALibraryTruncatedWhileItRunsIsSurvivedAndSaidOnce) {
  // The user's own library, which its program runs all along: 64 KiB of
  // .data it never reads lie between what it uses and the symbol tables
  // and DWARF (which follow the loaded bytes in the file); it keeps no
  // global it writes (.bss would share the last page). Cutting the file
  // inside that padding leaves the program running and puts what the
  // agent reads through its mappings past the end of the file. It runs 64
  // functions in turn, so that each interval has addresses the agent has
  // not named yet.
  ASSERT_EQ(AsNobody("set -e\n"
                     "{ echo 'char lib_pad[65536] = {1};'\n"
                     "  i=0; while [ $i -lt 64 ]; do\n"
                     "    echo \"__attribute__((noinline)) unsigned long lib_f$i(unsigned long n) {\n"
                     "      volatile unsigned long s = $i; for (unsigned long k = 0; k < n; ++k) s += k;\n"
                     "      return s; }\"; i=$((i+1)); done\n"
                     "  printf 'void lib_spin(void) { for (;;) {'\n"
                     "  i=0; while [ $i -lt 64 ]; do printf ' lib_f%d(20000000);' $i; i=$((i+1)); done\n"
                     "  echo '} }'; } > lib.c\n"
                     "echo 'void lib_spin(void); int main(void) { lib_spin(); }' > victim.c\n"
                     "cc -O2 -g -fPIC -shared -o libhostile.so lib.c\n"
                     "cc -O2 -o victim victim.c ./libhostile.so -Wl,-rpath,\"$PWD\"\n"),
            0);
  absl::StatusOr<ElfFile> lib = ElfFile::Open(dir_ + "/libhostile.so");
  ASSERT_TRUE(lib.ok()) << lib.status();
  uint64_t loaded_end = 0;
  for (const ElfSegment& seg : lib->segments()) {
    if (seg.type == PT_LOAD) loaded_end = std::max(loaded_end, seg.offset + seg.filesz);
  }
  // Two cuts inside lib_pad, the second deeper: pages the agent read
  // after the first go too.
  const uint64_t cut1 = (loaded_end - 16384) / 4096 * 4096, cut2 = cut1 - 16384;
  // The program runs until the agent has named it (its table built, its
  // symbols read and kept), then the user cuts the file twice, and the
  // agent runs two more intervals.
  StartAsNobody("exec ./victim");
  AgentRun a = RunAgent(1000, [&] {
    for (int i = 0; i < 600 && !Named("libhostile.so", "lib_f"); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    EXPECT_EQ(AsNobody(absl::StrCat("truncate -s ", cut1, " libhostile.so")), 0);
    std::this_thread::sleep_for(std::chrono::milliseconds(2500));
    EXPECT_EQ(AsNobody(absl::StrCat("truncate -s ", cut2, " libhostile.so")), 0);
    std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  });
  ExpectAgentUnharmed(a);
  EXPECT_EQ(Count(a.r.err, "libhostile.so: shrank while ehprof read it through a mapping"), 1u)
      << a.r.err;
  // The agent sampled the library and named it (before the cut).
  uint64_t in_lib = 0, named = 0;
  for (const auto& p : Profiles()) {
    for (const auto& [count, frames] : testing::PprofStacks(p)) {
      if (frames.empty() || !frames[0].mapping.ends_with("/libhostile.so")) continue;
      in_lib += count;
      if (frames[0].function.rfind("lib_f", 0) == 0) named += count;
    }
  }
  EXPECT_GT(named, 0u) << in_lib << " samples in the library";
  // The program itself ran on.
  ASSERT_FALSE(pids_.empty());
  EXPECT_EQ(waitpid(pids_.back(), nullptr, WNOHANG), 0) << "the user's program ended";
}

TEST_F(HostileFiles, ACompressionBombIsNotExpandedAndSaidOnce) {
  // 256 MiB of zeros in a zlib-compressed .debug_frame: about 0.25 MB in
  // the file.
  ASSERT_EQ(AsNobody("set -e\n"
                     "truncate -s 256M zeros\n"
                     "objcopy --add-section .debug_frame=zeros src.deep_recursion plain\n"
                     "rm zeros\n"
                     "objcopy --compress-debug-sections=zlib plain bomb\n"
                     "rm plain\n"),
            0);
  ASSERT_LT(fs::file_size(dir_ + "/bomb"), 4u << 20);
  StartAsNobody("exec ./bomb 40 20");
  // The bomb and the normal program alone: a whole-host agent's peak also
  // holds the tables of whatever else runs (a compiler's libLLVM in CI
  // took it to 136 MB).
  AgentRun a = RunAgent(8000, nullptr, {normal_, pids_.back()});
  ExpectAgentUnharmed(a, "bomb");
  EXPECT_EQ(Count(a.r.err, "section .debug_frame not read: it expands to 268435456 bytes"), 1u)
      << a.r.err;
  // The agent's own steady figure is about 36 MB (42 MB peak here, for
  // these two programs): nothing near the bomb's 256 MiB was ever resident.
  std::printf("agent peak RSS %.1f MB\n", a.peak_rss_kb / 1024.0);
  EXPECT_LT(a.peak_rss_kb, 64u * 1024) << a.r.err;
}

}  // namespace
}  // namespace ehprof
