// Where a separate debug file is looked for, in which order, and that a
// root prefixes every place (a container's files seen from the host).
#include "elf/debug_file_finder.h"

#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/test_support.h"
#include "elf/elf_file.h"

namespace ehprof {
namespace {

namespace fs = std::filesystem;

TEST(DebugFileCandidates, BuildIdFirstThenTheDebugLinkBesideInDotDebugAndUnderUsrLibDebug) {
  EXPECT_EQ(DebugFileCandidates("abcdef", std::string("app.debug"), "/opt/app"),
            (std::vector<std::string>{"/usr/lib/debug/.build-id/ab/cdef.debug",
                                      "/opt/app/app.debug", "/opt/app/.debug/app.debug",
                                      "/usr/lib/debug/opt/app/app.debug"}));
}

TEST(DebugFileCandidates, NoBuildIdNoLinkOrALinkWithASlash) {
  EXPECT_EQ(DebugFileCandidates("", std::string("a.debug"), "/d"),
            (std::vector<std::string>{"/d/a.debug", "/d/.debug/a.debug",
                                      "/usr/lib/debug/d/a.debug"}));
  EXPECT_EQ(DebugFileCandidates("abcdef", std::nullopt, "/d"),
            (std::vector<std::string>{"/usr/lib/debug/.build-id/ab/cdef.debug"}));
  // A link naming another directory would be read from wherever it says.
  EXPECT_EQ(DebugFileCandidates("", std::string("../../etc/x"), "/d"), std::vector<std::string>{});
}

TEST(FindSeparateDebugFile, LooksUnderTheRootByBuildId) {
  const std::string root = ::testing::TempDir() + "/debug_root." + std::to_string(getpid());
  fs::remove_all(root);
  auto elf = ElfFile::Open(testing::TestdataPath("deep_recursion.stripped"));
  ASSERT_TRUE(elf.ok()) << elf.status();
  const std::string id = elf->BuildId();
  ASSERT_GT(id.size(), 2u);
  EXPECT_FALSE(FindSeparateDebugFile(*elf, root).has_value());
  const std::string debug =
      root + "/usr/lib/debug/.build-id/" + id.substr(0, 2) + "/" + id.substr(2) + ".debug";
  fs::create_directories(fs::path(debug).parent_path());
  // The unstripped build: the same build-id, so it is accepted.
  fs::copy_file(testing::TestdataPath("deep_recursion"), debug);
  std::optional<DebugFile> found = FindSeparateDebugFile(*elf, root);
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->path, debug);
  EXPECT_TRUE(found->fd.valid());
  fs::remove_all(root);
}

}  // namespace
}  // namespace ehprof
