// The ehprof command line as a user meets it: exit codes (0 ok, 1 failure,
// 2 bad usage), one-line usage errors, --help on each command.
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <regex>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/test_support.h"

extern char** environ;

namespace ehprof {
namespace {

using ::testing::HasSubstr;

struct Result {
  int exit_code = -1;
  std::string out;
  std::string err;
};

std::string Slurp(int fd) {
  std::string s;
  char buf[4096];
  for (ssize_t n; (n = read(fd, buf, sizeof buf)) > 0;) s.append(buf, static_cast<size_t>(n));
  return s;
}

// Runs build/ehprof with `args`, stdout and stderr into temp files (pipes
// could fill up while we wait).
Result RunEhprof(const std::vector<std::string>& args) {
  // ctest runs each test as its own process, maybe in parallel.
  const std::string base = ::testing::TempDir() + "/ehprof_cli_test." + std::to_string(getpid());
  const std::string out_path = base + ".out";
  const std::string err_path = base + ".err";
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  const std::string binary = ehprof::testing::EhprofBinary();
  std::vector<char*> argv = {const_cast<char*>(binary.c_str())};
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  Result r;
  pid_t pid;
  const int rc = posix_spawn(&pid, binary.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    ADD_FAILURE() << "cannot run " << binary;
    return r;
  }
  int status = 0;
  waitpid(pid, &status, 0);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  for (auto [path, dest] : {std::pair{out_path, &r.out}, std::pair{err_path, &r.err}}) {
    const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
      *dest = Slurp(fd);
      close(fd);
    }
  }
  return r;
}

// A usage error: exit 2 and a single line on stderr.
void ExpectUsageError(const Result& r) {
  EXPECT_EQ(r.exit_code, 2) << r.err;
  ASSERT_FALSE(r.err.empty());
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "not one line: " << r.err;
}

TEST(Cli, VersionNamesTheBuild) {
  Result r = RunEhprof({"--version"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(std::regex_search(r.out, std::regex(R"(^ehprof \d+\.\d+\.\d+ \(\S+\)\n$)"))) << r.out;
}

TEST(Cli, CountAndFrequencyExcludeEachOther) {
  ExpectUsageError(RunEhprof({"record", "-c", "1000", "-F", "99", "-a"}));
}

// Several -o: each file once, standard output once, --format only with one.
TEST(Cli, SeveralOutputsAreCheckedBeforeRecording) {
  Result twice = RunEhprof({"record", "-o", "a.folded", "-o", "a.folded", "--", "true"});
  ExpectUsageError(twice);
  EXPECT_THAT(twice.err, HasSubstr("-o a.folded given twice"));
  ExpectUsageError(RunEhprof({"record", "-o", "-", "-o", "-", "--", "true"}));
  Result format = RunEhprof({"record", "--format", "svg", "-o", "a", "-o", "b", "--", "true"});
  ExpectUsageError(format);
  EXPECT_THAT(format.err, HasSubstr("--format goes with one -o"));
}

TEST(Cli, NoCommandIsUsageError) {
  Result r = RunEhprof({});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("usage"));
}

TEST(Cli, UnknownCommandIsOneLineUsageError) {
  Result r = RunEhprof({"bogus"});
  ExpectUsageError(r);
  EXPECT_THAT(r.err, HasSubstr("bogus"));
}

TEST(Cli, TablesWithoutFileIsUsageError) { ExpectUsageError(RunEhprof({"tables"})); }

TEST(Cli, TablesUnknownOptionIsUsageError) {
  Result r = RunEhprof({"tables", "--bogus", "x"});
  ExpectUsageError(r);
  EXPECT_THAT(r.err, HasSubstr("--bogus"));
}

TEST(Cli, TablesHelpMentionsStats) {
  Result r = RunEhprof({"tables", "--help"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("--stats"));
}

TEST(Cli, TablesMissingFileFailsNamingIt) {
  Result r = RunEhprof({"tables", "/nonexistent"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_THAT(r.err, HasSubstr("/nonexistent"));
}

TEST(Cli, TablesStatsPrintsOneSummaryLine) {
  Result r = RunEhprof({"tables", "--stats", ehprof::testing::TestdataPath("plt_calls")});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(std::regex_search(
      r.out, std::regex(R"(^rows=\d+ bytes=\d+ build_ms=\d+ source=eh_frame\b)")))
      << r.out;
  EXPECT_EQ(r.out.find('\n'), r.out.size() - 1) << "not one line: " << r.out;
}

}  // namespace
}  // namespace ehprof
