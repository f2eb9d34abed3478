// JIT perf maps as an unprivileged user can shape them, against a real
// running `ehprof agent` (root): the agent reads each process's map in the
// process's own /tmp (/proc/PID/root/tmp/perf-NSPID.map, so containers are
// named too) and must not be led anywhere else, nor made to hold what a
// map is too big to be. Each hostile process runs as uid 65534, spinning
// in JIT code of its own (anonymous executable memory); a root process
// with a perf map of its own (testdata/jit_sim) runs beside them.
#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/pprof_stacks.h"
#include "tests/server_process.h"
#include "tests/test_support.h"
#include "tests/hostile_user.h"

namespace ehprof {
namespace {

using testing::kNobody;

// An endless loop that keeps a frame pointer, as JIT code does.
#if defined(__aarch64__)
// stp x29, x30, [sp, #-16]!; mov x29, sp; b .
constexpr unsigned char kSpin[] = {0xfd, 0x7b, 0xbf, 0xa9, 0xfd, 0x03, 0x00, 0x91, 0x00, 0x00, 0x00, 0x14};
#else
// push rbp; mov rbp, rsp; jmp .
constexpr unsigned char kSpin[] = {0x55, 0x48, 0x89, 0xe5, 0xeb, 0xfe};
#endif

bool WriteString(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
  return static_cast<bool>(out.flush());
}

// The spinning code's address, mapped executable, for the perf map to name.
uint64_t MapSpin() {
  void* mem = mmap(nullptr, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) _exit(10);
  std::memcpy(mem, kSpin, sizeof(kSpin));
  __builtin___clear_cache(static_cast<char*>(mem), static_cast<char*>(mem) + sizeof(kSpin));
  return reinterpret_cast<uint64_t>(mem);
}

[[noreturn]] void Spin(uint64_t code) {
  reinterpret_cast<void (*)()>(code)();
  _exit(11);
}

void BecomeNobody() {
  if (!testing::BecomeUser()) _exit(12);
}

// Becomes uid/gid 65534, then root of a user and mount namespace of its
// own (unprivileged user namespaces), with a private tmpfs on /tmp.
void BecomeNobodyWithOwnTmp() {
  BecomeNobody();
  if (unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0) _exit(13);
  if (!WriteString("/proc/self/setgroups", "deny") || !WriteString("/proc/self/uid_map", "0 65534 1") ||
      !WriteString("/proc/self/gid_map", "0 65534 1")) {
    _exit(14);
  }
  if (mount("none", "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
      mount("tmpfs", "/tmp", "tmpfs", 0, "mode=0755") != 0) {
    _exit(15);
  }
}

enum class Attack {
  kOwnHugeMap,   // its own map: a 200 MiB line, then names of 16 KiB
  kTmpIsALink,   // its root's /tmp is a link to a root-only directory
  kMapIsALink,   // its /tmp/perf-PID.map is a link to a root-only map
  kContainer,    // pid and mount namespace of its own: a map of its own
};

struct Hostile {
  pid_t pid = -1;      // the spinning process, as the agent sees it
  pid_t parent = -1;   // the process the test forked (== pid but for kContainer)
  uint64_t code = 0;
  int failed = 0;      // the child's exit status when it could not start
};

// `secret`: a root-only directory the links point into.
Hostile Start(Attack attack, const std::string& secret, const char* comm) {
  int report[2];
  if (pipe(report) != 0) return {};
  const pid_t child = fork();
  if (child == 0) {
    close(report[0]);
    prctl(PR_SET_NAME, comm);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    uint64_t code = 0;
    pid_t spinner = getpid();
    if (attack == Attack::kOwnHugeMap) {
      BecomeNobody();
      code = MapSpin();
      std::ofstream map(absl::StrCat("/tmp/perf-", getpid(), ".map"));
      map << "1000 10 " << std::string(200u << 20, 'L') << "\n";
      map << absl::StrCat(absl::Hex(code), " 40 after_the_long_line\n");
      // 40 MiB of long names elsewhere: more than the agent keeps.
      for (uint64_t i = 0; i < 2560; ++i) {
        map << absl::StrCat(absl::Hex(0x100000000 + 0x100 * i), " 40 ", std::string(16u << 10, 'n'), "\n");
      }
      if (!map.flush()) _exit(16);
    } else if (attack == Attack::kContainer) {
      BecomeNobodyWithOwnTmp();
      if (unshare(CLONE_NEWPID) != 0) _exit(17);
      spinner = fork();  // the namespace's first process
      if (spinner == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        code = MapSpin();
        std::ofstream(absl::StrCat("/tmp/perf-", getpid(), ".map")) << absl::StrCat(absl::Hex(code), " 40 container_jit\n");
        const uint64_t msg[2] = {static_cast<uint64_t>(getpid()), code};
        if (write(report[1], msg, sizeof(msg)) != sizeof(msg)) _exit(18);
        Spin(code);
      }
      // Its pid here, as the agent sees it, then wait for it.
      const uint64_t msg[2] = {static_cast<uint64_t>(spinner), 0};
      if (write(report[1], msg, sizeof(msg)) != sizeof(msg)) _exit(18);
      waitpid(spinner, nullptr, 0);
      _exit(0);
    } else {
      BecomeNobodyWithOwnTmp();
      code = MapSpin();
      if (mkdir("/tmp/root", 0755) != 0) _exit(19);
      if (attack == Attack::kTmpIsALink) {
        if (symlink(secret.c_str(), "/tmp/root/tmp") != 0) _exit(20);
      } else if (mkdir("/tmp/root/tmp", 01777) != 0 ||
                 symlink(absl::StrCat(secret, "/perf-", getpid(), ".map").c_str(),
                         absl::StrCat("/tmp/root/tmp/perf-", getpid(), ".map").c_str()) != 0) {
        _exit(21);
      }
      if (chroot("/tmp/root") != 0 || chdir("/") != 0) _exit(22);
    }
    const uint64_t msg[2] = {static_cast<uint64_t>(spinner), code};
    if (write(report[1], msg, sizeof(msg)) != sizeof(msg)) _exit(18);
    Spin(code);
  }
  close(report[1]);
  Hostile h;
  h.parent = child;
  uint64_t msg[2];
  const int reports = attack == Attack::kContainer ? 2 : 1;
  // kContainer: its pid here (no code) and, in any order, its code.
  for (int i = 0; i < reports; ++i) {
    if (read(report[0], msg, sizeof(msg)) != sizeof(msg)) break;
    if (msg[1] == 0 || reports == 1) h.pid = static_cast<pid_t>(msg[0]);
    if (msg[1] != 0) h.code = msg[1];
  }
  close(report[0]);
  if (h.code == 0) {  // it gave up: say where
    int status = 0;
    waitpid(child, &status, 0);
    h.parent = -1;
    h.failed = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  return h;
}

void Stop(const Hostile& h) {
  if (h.pid > 0) kill(h.pid, SIGKILL);
  if (h.parent > 0) {
    kill(h.parent, SIGKILL);
    waitpid(h.parent, nullptr, 0);
  }
}

// Each comm's leaf frames' function names, with their samples.
std::map<std::string, std::map<std::string, int64_t>> LeavesByComm(const std::string& dir, size_t* files) {
  std::map<std::string, std::map<std::string, int64_t>> leaves;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    const auto p = testing::ReadPprof(e.path());
    if (!p) continue;
    ++*files;
    auto str = [&](int64_t i) { return i >= 0 && i < p->string_table_size() ? p->string_table(i) : std::string(); };
    std::map<uint64_t, std::string> leaf_name;
    for (const auto& loc : p->location()) {
      if (loc.line_size() == 0) continue;
      for (const auto& fn : p->function()) {
        if (fn.id() == loc.line(0).function_id()) leaf_name[loc.id()] = str(fn.name());
      }
    }
    for (const auto& s : p->sample()) {
      std::string comm;
      for (const auto& l : s.label()) {
        if (str(l.key()) == "comm") comm = str(l.str());
      }
      if (s.location_id_size() == 0 || s.value_size() == 0) continue;
      leaves[comm][leaf_name[s.location_id(0)]] += s.value(0);
    }
  }
  return leaves;
}

std::string Peak(pid_t pid) {
  std::ifstream in(absl::StrCat("/proc/", pid, "/status"));
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return line.substr(6);
  }
  return "";
}

class HostileUnit : public testing::RecordingTest {
 protected:
  void SetUp() override {
    testing::RecordingTest::SetUp();
    if (IsSkipped()) return;
    secret_ = dir_ + "/secret";
    std::filesystem::create_directories(secret_);
    ASSERT_EQ(chmod(secret_.c_str(), 0700), 0);
    ASSERT_EQ(chmod(dir_.c_str(), 0755), 0);
    jit_sim_ = testing::SpawnProgram({testing::TestdataPath("jit_sim"), "30"});
    ASSERT_GT(jit_sim_, 0);
  }
  void TearDown() override {
    if (jit_sim_ > 0) {
      kill(jit_sim_, SIGKILL);
      waitpid(jit_sim_, nullptr, 0);
      std::filesystem::remove(absl::StrCat("/tmp/perf-", jit_sim_, ".map"));
    }
    testing::RecordingTest::TearDown();
  }
  // A root-owned map in the secret directory naming pid's code, as the
  // links would lead a careless reader to.
  void PlantSecret(const Hostile& h) const {
    const std::string path = absl::StrCat(secret_, "/perf-", h.pid, ".map");
    ASSERT_TRUE(WriteString(path, absl::StrCat(absl::Hex(h.code), " 40 secret_from_root\n")));
    ASSERT_EQ(chmod(path.c_str(), 0600), 0);
  }
  // The agent on these processes and jit_sim, one interval a second, for
  // `ms`; peak: its VmHWM just before it is stopped.
  testing::RunResult RunAgent(const std::vector<pid_t>& pids, int ms, std::string* peak) const {
    std::vector<std::string> args = {"agent", "-F", "199", "--interval", "1", "--output-dir", dir_ + "/out"};
    for (pid_t p : pids) {
      args.push_back("-p");
      args.push_back(std::to_string(p));
    }
    args.push_back("-p");
    args.push_back(std::to_string(jit_sim_));
    return testing::RunEhprof(args, SIGTERM, ms, [&](pid_t agent) { *peak = Peak(agent); });
  }

  std::string secret_;
  pid_t jit_sim_ = -1;
};

// Links, from a user's own mount namespace, toward a root-only map: the
// agent follows neither (/tmp nor the map), names the container's JIT code
// from the map in the container's own /tmp under its pid there, and keeps
// naming root's jit_sim.
TEST_F(HostileUnit, PerfMapLinksLeadNowhereAndContainersAreNamed) {
  const Hostile tmp_link = Start(Attack::kTmpIsALink, secret_, "tmp_link");
  const Hostile map_link = Start(Attack::kMapIsALink, secret_, "map_link");
  const Hostile container = Start(Attack::kContainer, secret_, "container");
  // Exit status 13: no user namespace for uid 65534 (user.max_user_namespaces).
  ASSERT_GT(tmp_link.code, 0u) << "exit status " << tmp_link.failed;
  ASSERT_GT(map_link.code, 0u) << "exit status " << map_link.failed;
  ASSERT_GT(container.code, 0u) << "exit status " << container.failed;
  PlantSecret(tmp_link);
  PlantSecret(map_link);
  std::string peak;
  const testing::RunResult r = RunAgent({tmp_link.pid, map_link.pid, container.pid}, 6000, &peak);
  Stop(tmp_link);
  Stop(map_link);
  Stop(container);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  size_t files = 0;
  auto leaves = LeavesByComm(dir_ + "/out", &files);
  EXPECT_GE(files, 3u) << "an interval every second";
  for (const auto& [comm, names] : leaves) {
    EXPECT_EQ(names.count("secret_from_root"), 0u) << comm << " named from a root-only map";
  }
  EXPECT_GT(leaves["container"]["container_jit"], 0) << "the container's JIT code, from its own /tmp/perf-1.map";
  EXPECT_GT(leaves["tmp_link"]["[unknown]"], 0) << "its JIT code is sampled, unnamed";
  EXPECT_GT(leaves["map_link"]["[unknown]"], 0) << "its JIT code is sampled, unnamed";
  EXPECT_GT(leaves["jit_sim"]["jit_spin_loop"], 0) << "root's JIT process is still named";
  // Nothing the agent should not touch changed.
  EXPECT_EQ(testing::ReadFile(absl::StrCat(secret_, "/perf-", tmp_link.pid, ".map")),
            absl::StrCat(absl::Hex(tmp_link.code), " 40 secret_from_root\n"));
  struct stat st;
  ASSERT_EQ(stat(secret_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0700u);
  EXPECT_EQ(st.st_uid, 0u);
}

// A user's own map, valid for its process (its user owns it), made to
// exhaust the agent: a 200 MiB line, then 40 MiB of 16 KiB names. The line
// is skipped (1 MiB at a time), the entry after it still names the code,
// and what is kept stays within the agent's bound (32 MiB): its peak
// resident memory stays far below what reading the map whole would take
// (over 400 MiB, the map and its longest name each held at once).
TEST_F(HostileUnit, AHugePerfMapIsReadWithinBounds) {
  const Hostile huge = Start(Attack::kOwnHugeMap, secret_, "huge_map");
  ASSERT_GT(huge.code, 0u) << "exit status " << huge.failed;
  std::string peak;
  const testing::RunResult r = RunAgent({huge.pid}, 6000, &peak);
  Stop(huge);
  std::filesystem::remove(absl::StrCat("/tmp/perf-", huge.pid, ".map"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  size_t files = 0;
  auto leaves = LeavesByComm(dir_ + "/out", &files);
  EXPECT_GE(files, 3u) << "an interval every second";
  EXPECT_GT(leaves["huge_map"]["after_the_long_line"], 0) << "the entry after the long line";
  EXPECT_GT(leaves["jit_sim"]["jit_spin_loop"], 0) << "root's JIT process is still named";
  const uint64_t peak_kb = std::strtoull(peak.c_str(), nullptr, 10);
  std::printf("agent's peak resident memory with a 240 MiB perf map: %llu kB\n",
              static_cast<unsigned long long>(peak_kb));
  ASSERT_GT(peak_kb, 0u) << "VmHWM of the agent not read";
  // Measured: about 80 MB (the agent alone on these processes, ~45 MB; the
  // map's kept entries, 32 MiB).
  EXPECT_LT(peak_kb, 150u << 10);
}

}  // namespace
}  // namespace ehprof
