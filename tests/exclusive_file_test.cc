// ExclusiveFile: a new file under an unpredictable name, private from its
// creation, renamed into place; a link planted at the final name is
// replaced, never written through.
#include "base/exclusive_file.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

#include "gtest/gtest.h"

namespace ehprof {
namespace {

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class ExclusiveFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = ::testing::TempDir() + "/ehprof_exclusive_XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::system(("rm -rf '" + dir_ + "'").c_str()); }
  std::string dir_;
};

TEST_F(ExclusiveFileTest, NewPrivateFilesUnderNamesOfTheirOwn) {
  auto a = ExclusiveFile::Create(dir_ + "/out-", ".svg");
  auto b = ExclusiveFile::Create(dir_ + "/out-", ".svg");
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_NE(a->path(), b->path());
  const std::string prefix = dir_ + "/out-";
  ASSERT_EQ(a->path().size(), prefix.size() + 6 + 4) << a->path();
  EXPECT_EQ(a->path().substr(0, prefix.size()), prefix);
  EXPECT_EQ(a->path().substr(a->path().size() - 4), ".svg");
  struct stat st;
  ASSERT_EQ(::stat(a->path().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

TEST_F(ExclusiveFileTest, CommitRenamesOverALinkWithoutFollowingIt) {
  const std::string victim = dir_ + "/victim";
  std::ofstream(victim) << "keep me";
  const std::string final_path = dir_ + "/profile.folded";
  ASSERT_EQ(::symlink(victim.c_str(), final_path.c_str()), 0);
  auto f = ExclusiveFile::Create(final_path + ".tmp.");
  ASSERT_TRUE(f.ok()) << f.status();
  // More than one buffer's worth.
  std::string big(200000, 'x');
  f->stream() << "main;hot 3\n" << big;
  ASSERT_TRUE(f->Commit(final_path, 0644).ok());
  EXPECT_EQ(Slurp(victim), "keep me");
  struct stat st;
  ASSERT_EQ(::lstat(final_path.c_str(), &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0644u);
  EXPECT_EQ(Slurp(final_path), "main;hot 3\n" + big);
}

TEST_F(ExclusiveFileTest, ErrorsNameThePlace) {
  auto f = ExclusiveFile::Create(dir_ + "/no-such-dir/out-");
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.status().message().find(dir_ + "/no-such-dir/out-XXXXXX"), std::string::npos) << f.status();
  auto g = ExclusiveFile::Create(dir_ + "/x-");
  ASSERT_TRUE(g.ok());
  g->stream() << "data";
  absl::Status s = g->Commit(dir_ + "/no-such-dir/final");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("cannot rename " + g->path()), std::string::npos) << s;
  EXPECT_EQ(Slurp(g->path()), "data");  // there until destruction or Keep()
}

// No failure path leaves a temporary file behind (a full disk must not
// fill up with them), unless the caller keeps it on purpose.
TEST_F(ExclusiveFileTest, AFileNotCommittedGoesUnlessKept) {
  std::string dropped, kept;
  {
    auto a = ExclusiveFile::Create(dir_ + "/a-");
    auto b = ExclusiveFile::Create(dir_ + "/b-");
    ASSERT_TRUE(a.ok() && b.ok());
    dropped = a->path();
    kept = b->path();
    ExclusiveFile moved = *std::move(a);  // the moved-from one removes nothing
    moved.stream() << "x";
    ASSERT_FALSE(moved.Commit(dir_ + "/no-such-dir/final").ok());
    b->Keep();
  }
  EXPECT_NE(::access(dropped.c_str(), F_OK), 0);
  EXPECT_EQ(::access(kept.c_str(), F_OK), 0);
}

}  // namespace
}  // namespace ehprof
