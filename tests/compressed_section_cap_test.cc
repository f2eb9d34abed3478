// Compression bombs: a section whose compression header claims (or whose
// stream really expands to) more than a section may take is refused before
// anything is decompressed, with an error naming the file and the section;
// the table is still built from the rest of the file. Real compressed
// sections still decompress.
#include <lzma.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "symbolizer/xz_decompress.h"
#include "tests/test_support.h"
#include "elf/elf_file.h"
#include "unwind_tables/table_builder.h"

namespace ehprof {
namespace {

namespace fs = std::filesystem;

int64_t MaxRssKb() {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_maxrss;
}

class CompressedSectionCap : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = absl::StrCat(::testing::TempDir(), "/compressed_cap.", getpid());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  // A copy of testdata's deep_recursion with a .debug_frame of `mib` MiB of
  // zeros, zlib-compressed (it shrinks about 1000-fold).
  std::string Bomb(int mib) {
    const std::string out = dir_ + "/bomb";
    const std::string cmd = absl::StrCat(
        "cd ", dir_, " && truncate -s ", mib, "M zeros && objcopy --add-section .debug_frame=zeros ",
        testing::TestdataPath("deep_recursion"), " plain && rm zeros && ",
        "objcopy --compress-debug-sections=zlib plain ", out, " && rm plain");
    EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
    return out;
  }
  std::string dir_;
};

TEST_F(CompressedSectionCap, ASectionExpandingPastTheCapIsRefusedNamingFileAndSection) {
  const std::string bomb = Bomb(128);
  EXPECT_LT(fs::file_size(bomb), fs::file_size(testing::TestdataPath("deep_recursion")) + (1 << 20));
  absl::StatusOr<ElfFile> elf = ElfFile::Open(bomb);
  ASSERT_TRUE(elf.ok()) << elf.status();
  const int64_t rss_before = MaxRssKb();
  absl::StatusOr<std::optional<ElfSection>> s = elf->Section(".debug_frame");
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(absl::IsResourceExhausted(s.status())) << s.status();
  EXPECT_EQ(s.status().message(),
            absl::StrCat(bomb, ": section .debug_frame not read: it expands to ", 128 << 20,
                         " bytes, over the ", kMaxExpandedSectionBytes, " a section may take"));
  EXPECT_LT(MaxRssKb() - rss_before, 16 * 1024);  // nothing was expanded
}

TEST_F(CompressedSectionCap, TheTableIsBuiltFromEhFrameAndTheBombIsAWarning) {
  const std::string bomb = Bomb(128);
  absl::StatusOr<UnwindTable> table = BuildUnwindTableFromPath(bomb);
  ASSERT_TRUE(table.ok()) << table.status();
  absl::StatusOr<UnwindTable> plain = BuildUnwindTableFromPath(testing::TestdataPath("deep_recursion"));
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_EQ(table->rows.size(), plain->rows.size());
  bool said = false;
  for (const std::string& w : table->warnings) said = said || w.find(".debug_frame not read") != std::string::npos;
  EXPECT_TRUE(said) << ::testing::PrintToString(table->warnings);
}

TEST_F(CompressedSectionCap, ASectionUnderTheCapStillDecompresses) {
  const std::string out = dir_ + "/zsmall";
  const std::string cmd = absl::StrCat("cd ", dir_, " && truncate -s 1M zeros && ",
                                       "objcopy --add-section .debug_frame=zeros ",
                                       testing::TestdataPath("deep_recursion"), " plain && ",
                                       "objcopy --compress-debug-sections=zlib plain ", out);
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  absl::StatusOr<ElfFile> elf = ElfFile::Open(out);
  ASSERT_TRUE(elf.ok()) << elf.status();
  absl::StatusOr<std::optional<ElfSection>> s = elf->Section(".debug_frame");
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_TRUE(s->has_value());
  EXPECT_EQ((*s)->data.size(), 1u << 20);
}

TEST(XzCap, OutputPastTheCapIsAnErrorNamingTheSection) {
  // 1 MiB of zeros, xz-compressed: a few hundred bytes.
  const std::vector<uint8_t> zeros(1 << 20, 0);
  std::vector<uint8_t> in(lzma_stream_buffer_bound(zeros.size()));
  size_t n = 0;
  ASSERT_EQ(lzma_easy_buffer_encode(6, LZMA_CHECK_CRC64, nullptr, zeros.data(), zeros.size(),
                                    in.data(), &n, in.size()),
            LZMA_OK);
  in.resize(n);
  auto small = XzDecompress("f [.gnu_debugdata]", in, 2 << 20);
  ASSERT_TRUE(small.ok()) << small.status();
  EXPECT_EQ(small->size(), 1u << 20);
  auto capped = XzDecompress("f [.gnu_debugdata]", in, 64 << 10);
  ASSERT_FALSE(capped.ok());
  EXPECT_EQ(capped.status().message(), "f [.gnu_debugdata]: xz data decompresses to more than 65536 bytes");
}

}  // namespace
}  // namespace ehprof
