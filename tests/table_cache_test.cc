// The on-disk table cache: what it gives back is exactly what was built, and
// nothing it did not write itself (for this file, intact, valid, private)
// ever comes back.
#include "unwind_tables/table_cache.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "absl/strings/str_format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/test_support.h"
#include "unwind_tables/compact_table_check.h"
#include "unwind_tables/table_builder.h"

namespace ehprof {
namespace {

using ::testing::HasSubstr;

class TableCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/ehprof-table-cache-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    root_ = tmpl;
    dir_ = root_ + "/cache";
  }
  void TearDown() override { std::filesystem::remove_all(root_); }

  static StoredTable Build(const std::string& path) {
    auto rows = BuildUnwindTableFromPath(path);
    EXPECT_TRUE(rows.ok()) << rows.status();
    auto t = EncodeCompactTable(rows->rows, path);
    EXPECT_TRUE(t.ok()) << t.status();
    return {*std::move(t), rows->rows.size()};
  }
  static TableFileKey KeyOf(const std::string& path) {
    struct stat st;
    stat(path.c_str(), &st);
    return {"0123abcd", static_cast<uint64_t>(st.st_ino), static_cast<uint64_t>(st.st_size),
            int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec};
  }

  std::string root_, dir_;
};

TEST_F(TableCacheTest, GivesBackExactlyWhatWasStored) {
  const std::string fio = "/usr/bin/fio";
  StoredTable built = Build(fio);
  auto cache = TableCache::Open(dir_, 1 << 30);
  ASSERT_TRUE(cache.ok()) << cache.status();
  EXPECT_FALSE(cache->Load(KeyOf(fio)));
  ASSERT_TRUE(cache->Store(KeyOf(fio), built).ok());
  struct stat st;
  ASSERT_EQ(stat(cache->PathOf(KeyOf(fio)).c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  auto back = cache->Load(KeyOf(fio));
  ASSERT_TRUE(back);
  const CompactTable& a = built.table;
  const CompactTable& b = back->table;
  EXPECT_EQ(back->plain_rows, built.plain_rows);
  EXPECT_EQ(b.start, a.start);
  EXPECT_EQ(b.end, a.end);
  EXPECT_EQ(b.page_shift, a.page_shift);
  EXPECT_EQ(b.rows, a.rows);
  EXPECT_EQ(b.palette, a.palette);
  ASSERT_EQ(b.pages.size(), a.pages.size());
  ASSERT_EQ(b.rules.size(), a.rules.size());
  for (uint64_t pc = a.start; pc < a.end; pc += 7) {
    ehp_rule x = CompactLookup(a, pc), y = CompactLookup(b, pc);
    ASSERT_EQ(std::memcmp(&x, &y, sizeof(x)), 0) << std::hex << pc;
  }
  EXPECT_EQ(cache->stats().hits, 1u);
  EXPECT_EQ(cache->stats().misses, 1u);
}

TEST_F(TableCacheTest, EncodedTablesOfRealFilesAreValid) {
  for (const char* f : {"/usr/bin/fio", "/usr/lib/x86_64-linux-gnu/libc.so.6"}) {
    StoredTable t = Build(f);
    EXPECT_TRUE(ValidateCompactTable(t.table, f).ok()) << ValidateCompactTable(t.table, f);
  }
}

// A file without CFI makes an empty table; it round-trips like any other
// (it was refused once as "end not after start" and rebuilt every run).
TEST_F(TableCacheTest, AnEmptyTableRoundTrips) {
  auto empty = EncodeCompactTable({}, "empty");
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(ValidateCompactTable(*empty, "empty").ok()) << ValidateCompactTable(*empty, "empty");
  auto cache = TableCache::Open(dir_, 1 << 30);
  ASSERT_TRUE(cache.ok());
  const TableFileKey key{"", 7, 8, 9};
  ASSERT_TRUE(cache->Store(key, {*empty, 0}).ok());
  std::string why;
  EXPECT_TRUE(cache->Load(key, &why)) << why;
}

TEST_F(TableCacheTest, ACorruptEntryIsRefusedRemovedAndSaid) {
  const std::string bin = testing::TestdataPath("plt_calls.stripped");
  auto cache = TableCache::Open(dir_, 1 << 30);
  ASSERT_TRUE(cache.ok());
  ASSERT_TRUE(cache->Store(KeyOf(bin), Build(bin)).ok());
  const std::string path = cache->PathOf(KeyOf(bin));
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(-5, std::ios::end);
    f.put('\x5a');
  }
  std::string why;
  EXPECT_FALSE(cache->Load(KeyOf(bin), &why));
  EXPECT_THAT(why, HasSubstr("checksum mismatch"));
  EXPECT_THAT(why, HasSubstr(path));
  EXPECT_FALSE(std::filesystem::exists(path));
  EXPECT_EQ(cache->stats().rejected, 1u);
}

// Two ehprof versions sharing a cache keep one entry each for a file: the
// name carries the format, so neither finds (and replaces) the other's.
TEST_F(TableCacheTest, EntriesAreNamedForTheirFormat) {
  const std::string bin = testing::TestdataPath("plt_calls.stripped");
  auto cache = TableCache::Open(dir_, 1 << 30);
  ASSERT_TRUE(cache.ok());
  const std::string path = cache->PathOf(KeyOf(bin));
  EXPECT_THAT(path, HasSubstr(absl::StrFormat("-f%08x.ehpt", TableFormatTag())));
  // An older version's name for the same file (no format in it) is not
  // looked at: a miss, nothing refused.
  const std::string old_name = path.substr(0, path.rfind("-f")) + ".ehpt";
  std::ofstream(old_name) << "an older format";
  std::string why;
  EXPECT_FALSE(cache->Load(KeyOf(bin), &why));
  EXPECT_EQ(why, "");
  EXPECT_EQ(cache->stats().rejected, 0u);
}

TEST_F(TableCacheTest, AnEntryForAnotherFileIsRefused) {
  const std::string bin = testing::TestdataPath("plt_calls.stripped");
  auto cache = TableCache::Open(dir_, 1 << 30);
  ASSERT_TRUE(cache.ok());
  TableFileKey other = KeyOf(bin);
  other.mtime_ns += 1;  // rebuilt since
  ASSERT_TRUE(cache->Store(other, Build(bin)).ok());
  std::filesystem::rename(cache->PathOf(other), cache->PathOf(KeyOf(bin)));
  std::string why;
  EXPECT_FALSE(cache->Load(KeyOf(bin), &why));
  EXPECT_THAT(why, HasSubstr("built from another file"));
}

TEST_F(TableCacheTest, AStructurallyBrokenTableWithAGoodChecksumIsRefused) {
  const std::string bin = testing::TestdataPath("plt_calls.stripped");
  StoredTable t = Build(bin);
  ASSERT_GT(t.table.num_rows(), 2u);
  t.table.rows[EHP_ROW_BYTES + 2] = 0xff;  // a palette index past the page's palette
  std::string bytes = SerializeTable(KeyOf(bin), t);
  auto parsed = ParseTable({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()},
                           KeyOf(bin), "x");
  ASSERT_FALSE(parsed.ok());
  EXPECT_THAT(std::string(parsed.status().message()), HasSubstr("palette index out of range"));
  // Truncations never parse (and never read past the end).
  for (size_t cut = 0; cut < bytes.size(); cut += std::max<size_t>(1, bytes.size() / 97)) {
    EXPECT_FALSE(ParseTable({reinterpret_cast<const uint8_t*>(bytes.data()), cut}, KeyOf(bin), "x").ok());
  }
}

TEST_F(TableCacheTest, EntriesOthersCouldHaveWrittenAreRefused) {
  const std::string bin = testing::TestdataPath("plt_calls.stripped");
  auto cache = TableCache::Open(dir_, 1 << 30);
  ASSERT_TRUE(cache.ok());
  ASSERT_TRUE(cache->Store(KeyOf(bin), Build(bin)).ok());
  const std::string path = cache->PathOf(KeyOf(bin));
  chmod(path.c_str(), 0666);
  std::string why;
  EXPECT_FALSE(cache->Load(KeyOf(bin), &why));
  EXPECT_THAT(why, HasSubstr("not a private regular file"));
  // A symlink planted where an entry goes is not followed.
  ASSERT_TRUE(cache->Store(KeyOf(bin), Build(bin)).ok());
  std::filesystem::rename(path, root_ + "/elsewhere");
  std::filesystem::create_symlink(root_ + "/elsewhere", path);
  EXPECT_FALSE(cache->Load(KeyOf(bin), &why));
  EXPECT_EQ(cache->stats().rejected, 2u);
}

TEST_F(TableCacheTest, ADirectoryOthersCanWriteIsNotUsed) {
  std::filesystem::create_directories(dir_);
  chmod(dir_.c_str(), 0777);
  auto cache = TableCache::Open(dir_, 1 << 30);
  ASSERT_FALSE(cache.ok());
  EXPECT_THAT(std::string(cache.status().message()), HasSubstr("writable by others"));
  std::filesystem::create_symlink(root_, root_ + "/link");
  EXPECT_FALSE(TableCache::Open(root_ + "/link", 1 << 30).ok());
  EXPECT_FALSE(TableCache::Open("relative/dir", 1 << 30).ok());
}

TEST_F(TableCacheTest, StaysWithinItsBudgetDroppingTheLeastRecentlyUsed) {
  const std::string bin = testing::TestdataPath("plt_calls.stripped");
  StoredTable t = Build(bin);
  const uint64_t entry = SerializeTable(KeyOf(bin), t).size();
  auto cache = TableCache::Open(dir_, 3 * entry);
  ASSERT_TRUE(cache.ok());
  TableFileKey keys[5];
  for (int i = 0; i < 5; ++i) {
    keys[i] = KeyOf(bin);
    keys[i].inode += i;
    ASSERT_TRUE(cache->Store(keys[i], t).ok());
    usleep(20000);  // distinct mtimes
    if (i == 2) {
      ASSERT_TRUE(cache->Load(keys[0]));  // used again: kept over keys[1]
      usleep(20000);
    }
  }
  EXPECT_EQ(cache->stats().evicted, 2u);
  EXPECT_TRUE(std::filesystem::exists(cache->PathOf(keys[0])));
  EXPECT_FALSE(std::filesystem::exists(cache->PathOf(keys[1])));
  EXPECT_FALSE(std::filesystem::exists(cache->PathOf(keys[2])));
  EXPECT_TRUE(std::filesystem::exists(cache->PathOf(keys[4])));
}

// Under systemd's CacheDirectory= the cache lives there ($CACHE_DIRECTORY,
// the first of several); nothing else is taken for it.
TEST(ServiceTableCacheDir, IsTheServicesCacheDirectory) {
  const char* saved = std::getenv("CACHE_DIRECTORY");
  const std::string restore = saved ? saved : "";
  ::setenv("CACHE_DIRECTORY", "/var/cache/ehprof", 1);
  EXPECT_EQ(ServiceTableCacheDir(), "/var/cache/ehprof/tables");
  ::setenv("CACHE_DIRECTORY", "/var/cache/ehprof:/var/cache/other", 1);
  EXPECT_EQ(ServiceTableCacheDir(), "/var/cache/ehprof/tables");
  ::setenv("CACHE_DIRECTORY", "relative", 1);
  EXPECT_EQ(ServiceTableCacheDir(), std::nullopt);
  ::unsetenv("CACHE_DIRECTORY");
  EXPECT_EQ(ServiceTableCacheDir(), std::nullopt);
  if (saved) ::setenv("CACHE_DIRECTORY", restore.c_str(), 1);
}

}  // namespace
}  // namespace ehprof
