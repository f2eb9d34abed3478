// FileTables' policy without root: tables shared per file, kept loaded when
// unused, evicted least recently used first when the maps are full, never
// while a process maps them, expired after kUnusedTableSeconds, and files
// refused for room retried once room appears. The table store writes
// in-memory maps (memory_map_writer.h); the clock is the test's.
#include "agent/tables/file_tables.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "tests/memory_map_writer.h"
#include "tests/test_support.h"

namespace ehprof {
namespace {

using ::ehprof::testing::TestdataPath;
using Time = std::chrono::steady_clock::time_point;

class FileTablesTest : public ::testing::Test {
 protected:
  void MakeTables(uint32_t table_slots, size_t builders = FileTables::kDefaultBuilders) {
    MapSizes sizes;
    sizes.tables = table_slots;
    MemoryTableMaps views;
    store_ = std::make_unique<TableStore>(MakeMemoryTableMaps(sizes, &views), sizes);
    files_ = std::make_unique<FileTables>(store_.get(), &warnings_, nullptr, TableBuildOptions{}, builders);
    files_->SetClock([this] { return now_; });
  }
  FileKey Map(const std::string& name) {
    const std::string path = TestdataPath(name);
    auto key = files_->Register(path, path);
    EXPECT_TRUE(key.ok()) << key.status();
    files_->AddRef(*key);
    return *key;
  }
  // Collects builds until none is pending (the worker thread builds).
  void Settle() {
    for (int i = 0; i < 500 && (files_->pending() > 0 || i == 0); ++i) {
      files_->CollectFinished();
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    files_->CollectFinished();
    ASSERT_EQ(files_->pending(), 0u);
  }
  FileInfo::State StateOf(const FileKey& k) {
    const FileInfo* f = files_->Find(k);
    EXPECT_NE(f, nullptr);
    return f ? f->state : FileInfo::State::kFailed;
  }
  Time now_ = std::chrono::steady_clock::now();
  Warnings warnings_;
  std::unique_ptr<TableStore> store_;
  std::unique_ptr<FileTables> files_;
};

TEST_F(FileTablesTest, FullMapsEvictTheLeastRecentlyUnusedTableFirst) {
  MakeTables(2);
  FileKey a = Map("realign.stripped"), b = Map("asm_cfi.stripped");
  Settle();
  ASSERT_EQ(StateOf(a), FileInfo::State::kReady);
  ASSERT_EQ(StateOf(b), FileInfo::State::kReady);
  files_->Release(a);  // unused first: evicted first
  files_->Release(b);
  FileKey c = Map("deep_recursion.stripped");
  Settle();
  EXPECT_EQ(StateOf(c), FileInfo::State::kReady);
  EXPECT_EQ(files_->Find(a), nullptr) << "the least recently used table stays";
  EXPECT_EQ(StateOf(b), FileInfo::State::kReady);
  EXPECT_EQ(files_->stats().evicted, 1u);
  // b, unused but loaded, is found again by the next process mapping it.
  FileKey b2 = Map("asm_cfi.stripped");
  EXPECT_EQ(b2, b);
  EXPECT_EQ(files_->stats().reused, 1u);
}

TEST_F(FileTablesTest, TablesInUseStayAndARefusedFileIsRetriedWhenRoomAppears) {
  MakeTables(1);
  FileKey a = Map("realign.stripped");
  Settle();
  FileKey c = Map("asm_cfi.stripped");
  Settle();
  EXPECT_EQ(StateOf(a), FileInfo::State::kReady) << "a table in use was evicted";
  EXPECT_EQ(StateOf(c), FileInfo::State::kNoSpace);
  std::vector<std::string> warnings = warnings_.Take();
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("raise --table-memory"), std::string::npos) << warnings[0];
  files_->Release(a);
  now_ += std::chrono::seconds(3);  // past the retry spacing
  files_->CollectFinished();        // queues the retry
  Settle();
  EXPECT_EQ(StateOf(c), FileInfo::State::kReady);
  EXPECT_EQ(files_->Find(a), nullptr);
}

TEST_F(FileTablesTest, UnusedTablesExpireAndGiveTheirRoomBack) {
  MakeTables(4);
  FileKey a = Map("realign.stripped");
  Settle();
  ASSERT_EQ(store_->usage().tables, 1u);
  files_->Release(a);
  now_ += std::chrono::seconds(FileTables::kUnusedTableSeconds - 1);
  files_->CollectFinished();
  EXPECT_EQ(store_->usage().tables, 1u) << "expired too early";
  now_ += std::chrono::seconds(2);
  files_->CollectFinished();
  EXPECT_EQ(files_->stats().expired, 1u);
  const TableStore::Usage u = store_->usage();
  EXPECT_EQ(u.tables + u.pages + u.row_chunks + u.palette_words + u.rules, 0u);
  EXPECT_EQ(files_->Find(a), nullptr);
}

// A file with no CFI at all (a stripped Go binary; here a C program built
// without unwind tables) loads no table: its mappings are walked by frame
// pointer, not stopped at their first pc by an empty table.
TEST_F(FileTablesTest, AFileWithoutCfiLoadsNoTable) {
  MakeTables(4);
  const std::string path = ::testing::TempDir() + "/no_cfi." + std::to_string(::getpid());
  testing::ShellOutput("printf 'void _start(void){for(;;);}\\n' | cc -x c - -O2 -nostdlib -static "
                       "-fno-asynchronous-unwind-tables -Wl,--no-eh-frame-hdr -o " + path);
  auto key = files_->Register(path, path);
  ASSERT_TRUE(key.ok()) << key.status();
  files_->AddRef(*key);
  Settle();
  EXPECT_EQ(StateOf(*key), FileInfo::State::kNoCfi);
  EXPECT_EQ(store_->usage().tables, 0u);
  EXPECT_TRUE(warnings_.Take().empty()) << "no CFI is normal for such a file, not a failure";
  std::remove(path.c_str());
}

// Distinct files mapped and unmapped faster than their tables are built:
// builds no process waits for are dropped once they queue up, so the queue
// (each build holding its file open) follows what is mapped.
TEST_F(FileTablesTest, QueuedBuildsOfFilesNoLongerMappedAreDropped) {
  MakeTables(4, /*builders=*/1);
  const std::string dir = ::testing::TempDir() + "/queued." + std::to_string(::getpid());
  testing::ShellOutput("mkdir -p " + dir);
  std::vector<FileKey> keys;
  for (int i = 0; i < 200; ++i) {
    const std::string path = dir + "/" + std::to_string(i);
    testing::ShellOutput("cp " + TestdataPath("deep_recursion") + " " + path);
  }
  // A big build first: the small ones queue behind it.
  const std::string big = testing::DebianLibLlvm();
  auto first = files_->Register(big, big);
  ASSERT_TRUE(first.ok()) << first.status();
  files_->AddRef(*first);
  for (int i = 0; i < 200; ++i) {
    const std::string path = dir + "/" + std::to_string(i);
    auto key = files_->Register(path, path);
    ASSERT_TRUE(key.ok()) << key.status();
    files_->AddRef(*key);
    keys.push_back(*key);
  }
  for (const FileKey& k : keys) files_->Release(k);
  EXPECT_GT(files_->stats().dropped_builds, 100u);
  Settle();
  // The rest were built and, no process mapping them, parked as unused
  // tables (evictable, for the next process running them and for samples
  // held for them): known beside the big file, still mapped, and only so.
  const FileTables::Stats st = files_->stats();
  EXPECT_GT(st.files, 1u);
  EXPECT_LE(st.files, 1 + 200 - st.dropped_builds);
  EXPECT_EQ(st.files, 1 + st.unused + st.idle);
  testing::ShellOutput("rm -rf " + dir);
}

// Builds go by demand: a file a sample waits for (kUrgent), then a file
// more processes map, are built before files queued earlier (the oldest
// first among equals). Builds are held while queued: on a loaded machine a
// builder could take one before the last is queued.
TEST_F(FileTablesTest, BuildsGoByDemandNotByArrival) {
  MakeTables(16, /*builders=*/1);
  files_->HoldBuilds(true);
  const FileKey earliest = Map("realign");        // one process
  const FileKey early = Map("deep_recursion");    // one process
  const FileKey shared = Map("asm_cfi");          // three processes
  files_->AddRef(shared);
  files_->AddRef(shared);
  const FileKey waited_for = Map("plt_calls");    // one, and a sample stopped there
  files_->Prioritize(waited_for, FileTables::kUrgent);
  files_->HoldBuilds(false);
  // In the order the builds finished.
  std::vector<FileKey> order;
  for (int i = 0; i < 3000 && order.size() < 4; ++i) {
    for (const FileKey& k : files_->CollectFinished()) order.push_back(k);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(order.size(), 4u);
  EXPECT_EQ(order[0], waited_for);
  EXPECT_EQ(order[1], shared);
  EXPECT_EQ(order[2], earliest);
  EXPECT_EQ(order[3], early);
  EXPECT_EQ(files_->stats().hurried, 1u);
}

// Builds that finished together load in the order they were taken, not the
// order they finished: with room for two tables, the first two queued get
// it, although the large first one (ehprof itself) finishes after the
// small ones a second builder takes meanwhile.
TEST_F(FileTablesTest, ABatchLoadsInTheOrderItsBuildsWereTaken) {
  MakeTables(2, /*builders=*/2);
  files_->HoldBuilds(true);
  const std::string large = testing::EhprofBinary();
  auto first = files_->Register(large, large);
  ASSERT_TRUE(first.ok()) << first.status();
  files_->AddRef(*first);
  const FileKey second = Map("realign.stripped");
  const FileKey third = Map("asm_cfi.stripped");
  const FileKey fourth = Map("deep_recursion.stripped");
  files_->HoldBuilds(false);
  for (int i = 0; i < 3000 && files_->building() > 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_EQ(files_->building(), 0u);
  const std::vector<FileKey> ready = files_->CollectFinished();
  EXPECT_EQ(StateOf(*first), FileInfo::State::kReady);
  EXPECT_EQ(StateOf(second), FileInfo::State::kReady);
  EXPECT_EQ(StateOf(third), FileInfo::State::kNoSpace);
  EXPECT_EQ(StateOf(fourth), FileInfo::State::kNoSpace);
  EXPECT_EQ(ready, (std::vector<FileKey>{*first, second, third, fourth}));
}

// Files without a table are remembered as long as unused tables are, then
// forgotten: a long run keeps no entry for every file it ever saw.
TEST_F(FileTablesTest, FilesWithoutATableAreForgottenWhenUnused) {
  MakeTables(4);
  const std::string not_elf = ::testing::TempDir() + "/not_elf." + std::to_string(::getpid());
  testing::ShellOutput("echo not an ELF file > " + not_elf);
  auto failed = files_->Register(not_elf, not_elf);
  ASSERT_TRUE(failed.ok()) << failed.status();
  EXPECT_EQ(StateOf(*failed), FileInfo::State::kFailed);
  files_->AddRef(*failed);
  files_->Release(*failed);
  EXPECT_EQ(files_->stats().idle, 1u);
  // Mapped again meanwhile: remembered, not built again.
  files_->AddRef(*failed);
  EXPECT_EQ(files_->stats().idle, 0u);
  files_->Release(*failed);
  now_ += std::chrono::seconds(FileTables::kUnusedTableSeconds - 1);
  files_->CollectFinished();
  EXPECT_NE(files_->Find(*failed), nullptr) << "forgotten too early";
  now_ += std::chrono::seconds(2);
  files_->CollectFinished();
  EXPECT_EQ(files_->Find(*failed), nullptr);
  // One registered and never mapped goes the same way.
  auto never = files_->Register(not_elf, not_elf);
  ASSERT_TRUE(never.ok());
  now_ += std::chrono::seconds(FileTables::kUnusedTableSeconds + 1);
  files_->CollectFinished();
  EXPECT_EQ(files_->Find(*never), nullptr);
  EXPECT_EQ(files_->stats().files, 0u);
  std::remove(not_elf.c_str());
}

}  // namespace
}  // namespace ehprof
