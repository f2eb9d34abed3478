// The files `ehprof record` writes, attacked by an unprivileged user (uid
// 65534) who can write a shared sticky directory (as /tmp): links planted
// at every path root will write (-o, --compare, --diff-folded,
// --verify-report, --save-captures) to a root-owned file or directory of
// the test's, a FIFO or a file of theirs at -o, a directory of theirs for
// the captures. ehprof either refuses clearly, before the command runs, or
// writes its own file; the planted target never changes; captures stay
// private (0600 in 0700). Also: `-o -` and `-o /dev/stdout` into a
// redirected stdout leave /dev/stdout alone; an unwritable -o fails before
// anything runs. The agent's side: hostile_outputs_agent_priv_test.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "base/output_target.h"
#include "gtest/gtest.h"
#include "tests/hostile_outputs.h"
#include "tests/test_support.h"

namespace ehprof::hostile {
namespace {

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

}  // namespace
}  // namespace ehprof::hostile
