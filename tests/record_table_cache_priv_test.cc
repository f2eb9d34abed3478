// The on-disk table cache under `ehprof record`: a second run loads the
// tables of the first (stacks as complete), a corrupt entry is said once,
// rebuilt and replaced, and a cache directory others can write is not used.
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <string>

#include "gtest/gtest.h"
#include "tests/test_support.h"

namespace ehprof {
namespace {

using testing::RequireRootForBpf;
using testing::RunEhprof;
using testing::TestdataPath;

class RecordTableCache : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!RequireRootForBpf()) GTEST_SKIP();
    dir_ = ::testing::TempDir() + "/tablecache." + std::to_string(getpid());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    cache_ = dir_ + "/cache";
  }
  void TearDown() override {
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }
  // Records deep_recursion.stripped; returns stderr and sets *complete to
  // the share of samples whose chain runs from recurse_leaf through main
  // to _start.
  std::string Record(double* complete) {
    const std::string out = dir_ + "/out.txt";
    auto r = RunEhprof({"record", "-F", "499", "-q", "--table-cache", cache_, "--format", "perf-script",
                        "-o", out, "--", TestdataPath("deep_recursion.stripped"), "1", "5"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    auto chains = testing::UserChains(testing::ReadFile(out), TestdataPath("deep_recursion.stripped"),
                                      TestdataPath("deep_recursion"),
                                      {"recurse_leaf", "recurse", "main", "_start"});
    size_t all = 0, whole = 0;
    for (const auto& [chain, n] : chains) {
      all += n;
      if (chain.rfind("recurse_leaf;", 0) == 0 && chain.find(";main;") != std::string::npos &&
          chain.size() >= 7 && chain.compare(chain.size() - 7, 7, ";_start") == 0) {
        whole += n;
      }
    }
    *complete = all ? double(whole) / all : 0;
    return r.err;
  }
  static int FromCache(const std::string& err) {
    std::smatch m;
    return std::regex_search(err, m, std::regex(R"(\((\d+) from the table cache\))")) ? std::stoi(m[1]) : -1;
  }

  std::string dir_, cache_;
};

TEST_F(RecordTableCache, TheSecondRunLoadsTheFirstRunsTables) {
  double first = 0, second = 0;
  std::string err = Record(&first);
  EXPECT_EQ(FromCache(err), 0) << err;
  size_t entries = 0;
  for (const auto& e : std::filesystem::directory_iterator(cache_)) {
    ++entries;
    EXPECT_EQ(std::filesystem::status(e).permissions() & std::filesystem::perms::all,
              std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  }
  EXPECT_GE(entries, 3u);  // the program, libc, ld.so
  err = Record(&second);
  EXPECT_GE(FromCache(err), 3) << err;
  EXPECT_GT(first, 0.9) << err;
  EXPECT_GT(second, 0.9) << err;
}

TEST_F(RecordTableCache, ACorruptEntryIsSaidRebuiltAndReplaced) {
  double complete = 0;
  Record(&complete);
  for (const auto& e : std::filesystem::directory_iterator(cache_)) {
    std::fstream f(e.path(), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(-3, std::ios::end);
    f.put('\x7f');
  }
  std::string err = Record(&complete);
  EXPECT_NE(err.find("checksum mismatch"), std::string::npos) << err;
  EXPECT_NE(err.find("(rebuilt)"), std::string::npos) << err;
  EXPECT_EQ(FromCache(err), 0) << err;
  EXPECT_GT(complete, 0.9) << err;
  err = Record(&complete);  // replaced by the rebuild
  EXPECT_GE(FromCache(err), 3) << err;
  EXPECT_EQ(err.find("checksum mismatch"), std::string::npos) << err;
}

TEST_F(RecordTableCache, ADirectoryOthersCanWriteIsNotUsed) {
  std::filesystem::create_directories(cache_);
  chmod(cache_.c_str(), 0777);
  double complete = 0;
  std::string err = Record(&complete);
  EXPECT_NE(err.find("writable by others"), std::string::npos) << err;
  EXPECT_NE(err.find("tables are built every run"), std::string::npos) << err;
  EXPECT_TRUE(std::filesystem::is_empty(cache_));
  EXPECT_GT(complete, 0.9) << err;
}

}  // namespace
}  // namespace ehprof
