// The files `ehprof agent` writes, attacked by an unprivileged user (uid
// 65534): a link at --log, links and files of theirs in an --output-dir
// they can write, the disk filled under it; and its credentials:
// --otlp-header-file against the real OpenTelemetry Collector with the
// secret in no command line, message or file of ehprof's. The agent stays
// alive, samples its workload and writes or exports every interval it can;
// the planted target never changes.
#include <fcntl.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/hostile_outputs.h"
#include "tests/otelcol_server.h"
#include "tests/server_process.h"
#include "tests/test_support.h"

namespace ehprof::hostile {
namespace {

// The agent as a service would run it, beside a workload to sample.
class HostileAgent : public HostileOutputs {
 protected:
  void SetUp() override {
    HostileOutputs::SetUp();
    if (IsSkipped()) return;
    work_ = testing::SpawnProgram({TestdataPath("deep_recursion"), "60", "20"});
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
  // Until the fourth interval is written (names end in their sequence
  // number): two more than --keep, so rotation has run.
  RunResult r = RunEhprof({"agent", "-p", std::to_string(work_), "-F", "199", "--interval", "0.5", "--keep", "2",
                           "--output-dir", shared_},
                          SIGTERM, 300, [&](pid_t) {
                            WaitFor([&] {
                              for (const std::string& f : Profiles(shared_)) {
                                if (f.find("-3.pb.gz") != std::string::npos) return true;
                              }
                              return false;
                            });
                          });
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ExpectTargetsUnchanged();
  EXPECT_TRUE(IsLink(shared_ + "/ehprof-00000000T000000.000Z-0.pb.gz"));
  EXPECT_TRUE(IsLink(shared_ + "/.tmp-ehprof-AAAAAA"));
  EXPECT_EQ(Owner(theirs), kNobody);
  const std::vector<std::string> mine = Profiles(shared_);
  EXPECT_EQ(mine.size(), 2u) << r.err;  // 4 or more intervals written, the newest 2 kept
  for (const std::string& f : mine) {
    struct stat st;
    ASSERT_EQ(::lstat(f.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 07777, 0600u) << f;
    EXPECT_FALSE(AsNobody([&] { return ::open(f.c_str(), O_RDONLY) >= 0; })) << f;
  }
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.err, m, std::regex(R"((\d+) samples in (\d+) intervals)"))) << r.err;
  EXPECT_GE(std::stoul(m[2].str()), 4u) << r.err;
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
                          SIGTERM, 300, [&](pid_t) {
                            // Full until the agent has said so, then room until it writes again.
                            WaitFor([] { return RunningStderr().find("--output-dir: ") != std::string::npos; });
                            AsNobody([&] { return ::unlink(fill.c_str()) == 0; });
                            WaitFor([] { return RunningStderr().find("writing again after") != std::string::npos; });
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
                          SIGTERM, 300, [&](pid_t agent) {
                            cmdline = ReadFile("/proc/" + std::to_string(agent) + "/cmdline");
                            // Until the Collector has written what it received.
                            WaitFor([&] {
                              for (const std::string& f : server.files()) {
                                if (fs::exists(f) && fs::file_size(f) > 0) return true;
                              }
                              return false;
                            });
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
}  // namespace ehprof::hostile
