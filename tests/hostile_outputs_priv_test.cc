// The files ehprof writes, attacked by an unprivileged user (uid 65534)
// who can write a shared sticky directory (as /tmp): links planted at every
// path root will write (--compare, --diff-folded, --verify-report, -o,
// --save-captures, --log, the agent's --output-dir) to a root-owned file or
// directory of the test's, a FIFO of theirs at an -o, the disk filled
// under the agent; and what root writes must stay private (captures 0600 in
// 0700). ehprof either refuses clearly or writes its own file; the planted
// target never changes; the agent stays alive, samples and writes its
// intervals. Also: `-o -` and `-o /dev/stdout` into a redirected stdout
// leave /dev/stdout alone; an unwritable -o fails before anything runs;
// --otlp-header-file reaches the real OpenTelemetry Collector with the
// secret in no command line, message or file of ehprof's.
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <regex>
#include <string>
#include <vector>

#include "base/output_target.h"
#include "gtest/gtest.h"
#include "tests/otelcol_server.h"
#include "tests/server_process.h"
#include "tests/test_support.h"

namespace ehprof {
namespace {

namespace fs = std::filesystem;
using testing::ReadFile;
using testing::RunEhprof;
using testing::RunResult;
using testing::TestdataPath;

constexpr uid_t kNobody = 65534;
constexpr char kPrecious[] = "root's file: must not change\n";

// Runs `attack` in a child as uid/gid 65534; true when it returned true.
bool AsNobody(const std::function<bool()>& attack) {
  const pid_t pid = fork();
  if (pid == 0) {
    if (::setgroups(0, nullptr) != 0 || ::setgid(kNobody) != 0 || ::setuid(kNobody) != 0) _exit(2);
    _exit(attack() ? 0 : 1);
  }
  int status = 0;
  return waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

std::vector<std::string> Names(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename());
  std::sort(out.begin(), out.end());
  return out;
}

uid_t Owner(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0 ? st.st_uid : static_cast<uid_t>(-1);
}

bool IsLink(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode);
}

// dir_: the test's own (root, 0755) with the planted links' targets:
// precious_ (a root-owned file) and vault_ (a root-owned directory);
// shared_: a sticky world-writable directory, as /tmp.
class HostileOutputs : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!testing::RequireRootForBpf()) GTEST_SKIP();
    dir_ = ::testing::TempDir() + "/hostile_outputs." + std::to_string(getpid());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    ::chmod(dir_.c_str(), 0755);
    precious_ = dir_ + "/precious";
    std::ofstream(precious_) << kPrecious;
    vault_ = dir_ + "/vault";
    fs::create_directories(vault_);
    shared_ = dir_ + "/shared";
    fs::create_directories(shared_);
    ::chmod(shared_.c_str(), 01777);
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }
  // uid 65534 plants a link at shared_/name to target.
  void Plant(const std::string& name, const std::string& target) {
    ASSERT_TRUE(AsNobody([&] { return ::symlink(target.c_str(), (shared_ + "/" + name).c_str()) == 0; })) << name;
  }
  void ExpectTargetsUnchanged() {
    EXPECT_EQ(ReadFile(precious_), kPrecious);
    EXPECT_TRUE(Names(vault_).empty());
  }
  std::string dir_, precious_, vault_, shared_;
};

// Each report and -o path, and the --save-captures directory, a link of
// uid 65534's: refused before the command runs, naming the path, the
// target untouched.
TEST_F(HostileOutputs, RecordFollowsNoOtherUsersLink) {
  const std::string ran = dir_ + "/ran";
  const std::vector<std::string> cmd = {"--", "/bin/sh", "-c", "touch " + ran};
  struct Case {
    std::string name;
    std::vector<std::string> args;
  };
  const std::vector<Case> cases = {
      {"out.folded", {"-o", shared_ + "/out.folded"}},
      {"cmp.txt", {"--unwinder", "both", "--compare", shared_ + "/cmp.txt"}},
      {"diff.folded", {"--unwinder", "both", "--diff-folded", shared_ + "/diff.folded"}},
      {"verify.txt", {"--verify", "--verify-report", shared_ + "/verify.txt"}},
      {"caps", {"--verify", "--save-captures", shared_ + "/caps"}},
  };
  for (const Case& c : cases) {
    Plant(c.name, c.name == "caps" ? vault_ : precious_);
    std::vector<std::string> args = {"record", "-q", "-o", dir_ + "/p.folded"};
    args.insert(args.end(), c.args.begin(), c.args.end());
    args.insert(args.end(), cmd.begin(), cmd.end());
    RunResult r = RunEhprof(args);
    EXPECT_EQ(r.exit_code, 1) << c.name << ": " << r.err;
    EXPECT_NE(r.err.find(shared_ + "/" + c.name + ": a symbolic link owned by uid 65534"), std::string::npos)
        << r.err;
    EXPECT_NE(::access(ran.c_str(), F_OK), 0) << c.name << ": the command ran";
    EXPECT_TRUE(IsLink(shared_ + "/" + c.name)) << c.name;
    ExpectTargetsUnchanged();
  }
  EXPECT_FALSE(fs::exists(dir_ + "/p.folded"));
}

// A FIFO of uid 65534's at -o would stall root's write for ever: refused.
// A regular file of theirs is replaced by root's own (renamed over, not
// written into), which they can no longer read.
TEST_F(HostileOutputs, AnotherUsersPipeIsRefusedAndTheirFileReplaced) {
  const std::string fifo = shared_ + "/fifo.folded", theirs = shared_ + "/theirs.folded";
  ASSERT_TRUE(AsNobody([&] {
    return ::mkfifo(fifo.c_str(), 0666) == 0 && std::ofstream(theirs).write("x", 1).good() &&
           ::chmod(theirs.c_str(), 0666) == 0;
  }));
  RunResult r = RunEhprof({"record", "-q", "-o", fifo, "--", "/bin/true"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find(fifo + ": a pipe or device owned by uid 65534"), std::string::npos) << r.err;
  r = RunEhprof({"record", "-q", "-F", "499", "-o", theirs, "--", TestdataPath("plt_calls"), "0.3"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  struct stat st;
  ASSERT_EQ(::lstat(theirs.c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 0u);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  EXPECT_GE(testing::FoldedSamples(theirs), 20u);
  EXPECT_FALSE(AsNobody([&] { return std::ifstream(theirs).good(); }));
}

// The other way round, for a writer without root: uid 65534 naming root's
// file in the sticky directory learns at Open (before any sampling) that
// it cannot be replaced, and root's file stays.
TEST_F(HostileOutputs, AFileThatCannotBeReplacedIsSaidAtOpen) {
  const std::string roots = shared_ + "/roots.folded";
  std::ofstream(roots) << kPrecious;
  EXPECT_TRUE(AsNobody([&] {
    auto t = OutputTarget::Open(roots);
    return !t.ok() && t.status().message().find(": a file of uid 0 in a sticky directory") != std::string::npos;
  }));
  EXPECT_EQ(ReadFile(roots), kPrecious);
  EXPECT_EQ(Names(shared_), std::vector<std::string>{"roots.folded"});
}

// --save-captures holds other users' stack bytes: the directory ehprof
// makes is 0700, each capture 0600, and uid 65534 reads none of them.
TEST_F(HostileOutputs, CapturesArePrivate) {
  const std::string caps = shared_ + "/caps";
  RunResult r = RunEhprof({"record", "-q", "-F", "499", "--verify=5", "--verify-report", dir_ + "/verify.txt",
                           "--save-captures", caps, "-o", dir_ + "/p.folded", "--", TestdataPath("plt_calls"),
                           "0.4"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  struct stat st;
  ASSERT_EQ(::lstat(caps.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0700u);
  const std::vector<std::string> files = Names(caps);
  ASSERT_GE(files.size(), 1u) << r.err;
  for (const std::string& f : files) {
    ASSERT_EQ(::lstat((caps + "/" + f).c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 07777, 0600u) << f;
  }
  // A directory of uid 65534's (they could swap it for a link while root
  // writes): refused before the command runs, nothing written into it.
  const std::string theirs = shared_ + "/their-caps";
  ASSERT_TRUE(AsNobody([&] { return ::mkdir(theirs.c_str(), 0777) == 0; }));
  RunResult refused = RunEhprof({"record", "-q", "--verify", "--save-captures", theirs, "-o", dir_ + "/q.folded",
                                 "--", "/bin/true"});
  EXPECT_EQ(refused.exit_code, 1) << refused.err;
  EXPECT_NE(refused.err.find(theirs + ": a directory owned by uid 65534"), std::string::npos) << refused.err;
  EXPECT_TRUE(Names(theirs).empty());
  const std::string first = caps + "/" + files[0];
  EXPECT_FALSE(AsNobody([&] { return ::open(first.c_str(), O_RDONLY) >= 0; }));
  ::chmod(caps.c_str(), 0755);  // even with the directory opened up, the file stays closed
  EXPECT_FALSE(AsNobody([&] { return ::open(first.c_str(), O_RDONLY) >= 0; }));
}

// Root's `ehprof record -o - > FILE` and `-o /dev/stdout > FILE`: the
// profile in FILE, /dev/stdout still the system's link.
TEST_F(HostileOutputs, StandardOutputIsWrittenInPlace) {
  for (const std::string o : {"-", "/dev/stdout"}) {
    const std::string file = dir_ + "/stdout.folded";
    const std::string err = testing::ShellOutput(testing::EhprofBinary() + " record -q -F 499 --format folded -o " +
                                                 o + " -- " + TestdataPath("plt_calls") + " 0.3 > " + file +
                                                 " 2>" + dir_ + "/err; echo rc=$?");
    EXPECT_NE(err.find("rc=0"), std::string::npos) << o << ": " << err << ReadFile(dir_ + "/err");
    EXPECT_GE(testing::FoldedSamples(file), 20u) << o;
    EXPECT_TRUE(IsLink("/dev/stdout")) << "/dev/stdout was replaced";
    EXPECT_EQ(fs::read_symlink("/dev/stdout"), "/proc/self/fd/1");
    fs::remove(file);
  }
}

// Unwritable: a missing directory, a read-only file system, a directory in
// the way. Said before the command runs; nothing sampled, nothing left.
TEST_F(HostileOutputs, AnUnwritableOutputFailsBeforeSampling) {
  const std::string ran = dir_ + "/ran";
  fs::create_directories(dir_ + "/adir");
  for (const std::string& out : {dir_ + "/missing/p.folded", std::string("/proc/p.folded"), dir_ + "/adir"}) {
    RunResult r = RunEhprof({"record", "-q", "-o", out, "--", "/bin/sh", "-c", "touch " + ran});
    EXPECT_EQ(r.exit_code, 1) << out << ": " << r.err;
    EXPECT_NE(r.err.find(out), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("samples"), std::string::npos) << r.err;
    EXPECT_NE(::access(ran.c_str(), F_OK), 0) << out << ": the command ran";
  }
  EXPECT_EQ(Names(dir_ + "/adir").size(), 0u);
}

// The agent as a service would run it, beside a workload to sample.
class HostileAgent : public HostileOutputs {
 protected:
  void SetUp() override {
    HostileOutputs::SetUp();
    if (IsSkipped()) return;
    work_ = testing::SpawnProgram({TestdataPath("deep_recursion"), "8", "20"});
    ASSERT_GT(work_, 0);
  }
  void TearDown() override {
    if (work_ > 0) {
      kill(work_, SIGKILL);
      waitpid(work_, nullptr, 0);
    }
    HostileOutputs::TearDown();
  }
  // Root's own profiles in dir (regular files of uid 0 named ehprof-*).
  std::vector<std::string> Profiles(const std::string& dir) {
    std::vector<std::string> out;
    for (const std::string& n : Names(dir)) {
      struct stat st;
      if (n.rfind("ehprof-", 0) == 0 && ::lstat((dir + "/" + n).c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
          st.st_uid == 0) {
        out.push_back(dir + "/" + n);
      }
    }
    return out;
  }
  pid_t work_ = 0;
};

// --log at uid 65534's link: refused at start, the target untouched.
TEST_F(HostileAgent, ALogLinkIsRefused) {
  Plant("agent.log", precious_);
  RunResult r = RunEhprof({"agent", "-p", std::to_string(work_), "--output-dir", dir_ + "/out", "--log",
                           shared_ + "/agent.log"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find(shared_ + "/agent.log: a symbolic link (of uid 65534): not followed"), std::string::npos)
      << r.err;
  ExpectTargetsUnchanged();
}

// --output-dir a directory uid 65534 can write: their links (one named as
// the oldest profile, which rotation would remove) and their own
// profile-named file are neither followed nor removed; root's intervals are
// written, private, and rotated among themselves.
TEST_F(HostileAgent, OutputDirIgnoresPlantedFiles) {
  Plant("ehprof-00000000T000000.000Z-0.pb.gz", precious_);
  Plant(".tmp-ehprof-AAAAAA", precious_);
  const std::string theirs = shared_ + "/ehprof-00000000T000000.000Z-1.pb.gz";
  ASSERT_TRUE(AsNobody([&] { return std::ofstream(theirs).write("x", 1).good(); }));
  RunResult r = RunEhprof({"agent", "-p", std::to_string(work_), "-F", "199", "--interval", "0.5", "--keep", "2",
                           "--output-dir", shared_},
                          SIGTERM, 4000);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ExpectTargetsUnchanged();
  EXPECT_TRUE(IsLink(shared_ + "/ehprof-00000000T000000.000Z-0.pb.gz"));
  EXPECT_TRUE(IsLink(shared_ + "/.tmp-ehprof-AAAAAA"));
  EXPECT_EQ(Owner(theirs), kNobody);
  const std::vector<std::string> mine = Profiles(shared_);
  EXPECT_EQ(mine.size(), 2u) << r.err;  // 3 or more intervals written, the newest 2 kept
  for (const std::string& f : mine) {
    struct stat st;
    ASSERT_EQ(::lstat(f.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 07777, 0600u) << f;
    EXPECT_FALSE(AsNobody([&] { return ::open(f.c_str(), O_RDONLY) >= 0; })) << f;
  }
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.err, m, std::regex(R"((\d+) samples in (\d+) intervals)"))) << r.err;
  EXPECT_GE(std::stoul(m[2].str()), 3u) << r.err;
  EXPECT_GT(std::stoul(m[1].str()), 0u) << r.err;
  EXPECT_EQ(r.err.find("--output-dir: "), std::string::npos) << "an interval was not written: " << r.err;
}

// uid 65534 fills the file system the agent writes to (a 4 MiB tmpfs here)
// and frees it later: the agent goes on sampling, leaves no temporary file,
// says the failure once, and writes again once there is room.
TEST_F(HostileAgent, AFullDiskIsSaidOnceAndSurvived) {
  const std::string mnt = dir_ + "/small";
  fs::create_directories(mnt);
  if (::mount("tmpfs", mnt.c_str(), "tmpfs", 0, "size=4m,mode=1777") != 0) {
    GTEST_SKIP() << "SKIPPED: cannot mount a tmpfs: " << std::strerror(errno);
  }
  const std::string out = mnt + "/out", fill = mnt + "/fill";
  fs::create_directories(out);
  ::chmod(out.c_str(), 0700);
  ASSERT_TRUE(AsNobody([&] {
    const int fd = ::open(fill.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    std::string block(65536, 'x');
    while (fd >= 0 && ::write(fd, block.data(), block.size()) > 0) {
    }
    return fd >= 0 && errno == ENOSPC;
  }));
  RunResult r = RunEhprof({"agent", "-p", std::to_string(work_), "-F", "199", "--interval", "0.5",
                           "--output-dir", out},
                          SIGTERM, 4000, [&](pid_t) {
                            // Two seconds of a full disk (about four intervals), then room.
                            usleep(2000000);
                            AsNobody([&] { return ::unlink(fill.c_str()) == 0; });
                          });
  const std::vector<std::string> names = Names(out);
  const std::vector<std::string> written = Profiles(out);
  ::umount2(mnt.c_str(), MNT_DETACH);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  size_t said = 0;
  for (size_t at = r.err.find("--output-dir: "); at != std::string::npos; at = r.err.find("--output-dir: ", at + 1)) {
    ++said;
  }
  EXPECT_EQ(said, 2u) << r.err;  // the failure once, the recovery once
  EXPECT_NE(r.err.find("writing again after"), std::string::npos) << r.err;
  EXPECT_GE(written.size(), 1u) << r.err;
  EXPECT_EQ(written.size(), names.size()) << "a temporary file was left behind";
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.err, m, std::regex(R"((\d+) samples in (\d+) intervals)"))) << r.err;
  EXPECT_GT(std::stoul(m[1].str()), 0u) << r.err;  // sampling went on
}

// OTLP headers from a file (as systemd's LoadCredential= gives it) reach
// the real Collector; the secret is in no command line, message or file of
// ehprof's. One that others may write, and credentials in the URL, are
// refused without showing the secret.
TEST_F(HostileAgent, OtlpHeadersFromAFileStaySecret) {
  testing::OtelcolServer server;
  std::string error;
  if (!testing::RequireServer(server.Start(&error), error)) GTEST_SKIP() << error;
  const std::string secret = "s3cret-" + std::to_string(getpid());
  const std::string creds = dir_ + "/credentials";
  fs::create_directories(creds);
  const std::string headers = creds + "/otlp-headers";
  std::ofstream(headers) << "# LoadCredential=otlp-headers\nAuthorization: Bearer " << secret << "\n";
  ::chmod(headers.c_str(), 0400);
  std::string cmdline;
  RunResult r = RunEhprof({"agent", "-p", std::to_string(work_), "-F", "199", "--interval", "1", "--otlp",
                           server.http_url(), "--otlp-header-file", headers, "--output-dir", dir_ + "/out"},
                          SIGTERM, 3000, [&](pid_t agent) {
                            cmdline = ReadFile("/proc/" + std::to_string(agent) + "/cmdline");
                          });
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(cmdline.find("--otlp-header-file"), std::string::npos) << "the agent was not seen running";
  EXPECT_EQ(cmdline.find(secret), std::string::npos);
  EXPECT_EQ(r.err.find(secret), std::string::npos) << r.err;
  // Every interval exported.
  std::smatch m, e;
  ASSERT_TRUE(std::regex_search(r.err, m, std::regex(R"((\d+) samples in (\d+) intervals)"))) << r.err;
  ASSERT_TRUE(std::regex_search(r.err, e, std::regex(R"(otlp exported (\d+) intervals)"))) << r.err;
  EXPECT_GE(std::stoul(m[2].str()), 1u) << r.err;
  EXPECT_EQ(e[1].str(), m[2].str()) << r.err;
  for (const std::string& f : Profiles(dir_ + "/out")) EXPECT_EQ(ReadFile(f).find(secret), std::string::npos);
  size_t received = 0;
  for (const std::string& f : server.files()) received += fs::exists(f) ? ReadFile(f).size() : 0;
  EXPECT_GT(received, 0u);

  ::chmod(headers.c_str(), 0606);
  r = RunEhprof({"agent", "-p", std::to_string(work_), "--otlp", server.http_url(), "--otlp-header-file", headers});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("writable by no group or other"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find(secret), std::string::npos) << r.err;
  r = RunEhprof({"agent", "-p", std::to_string(work_), "--otlp",
                 "http://user:" + secret + "@" + server.http_url().substr(7)});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("--otlp-header-file"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find(secret), std::string::npos) << r.err;
}

}  // namespace
}  // namespace ehprof
