// What user space tells the kernel side about loaded tables (file_tables,
// agent/tables/kernel_file_index.h) and how the tracker keeps the
// mappings the kernel side adds, without root: the table store writes
// in-memory maps, the file_tables map is an in-memory one. The ELF layout
// the kernel places a file by is checked against readelf's program headers.
#include "agent/tables/kernel_file_index.h"

#include <elf.h>

#include <chrono>
#include <map>
#include <sstream>
#include <thread>

#include "agent/process/process_tracker.h"
#include "gtest/gtest.h"
#include "tests/memory_map_writer.h"
#include "tests/test_support.h"

namespace ehprof {
namespace {

using ::ehprof::testing::TestdataPath;

class MemoryIndexMap : public FileIndexMap {
 public:
  explicit MemoryIndexMap(std::map<std::pair<uint64_t, uint64_t>, ehp_file_info>* out) : out_(out) {}
  absl::Status Put(const ehp_file_key& k, const ehp_file_info& info) override {
    ++*writes_;
    (*out_)[{k.dev, k.ino}] = info;
    return absl::OkStatus();
  }
  void Remove(const ehp_file_key& k) override { out_->erase({k.dev, k.ino}); }
  int* writes_ = nullptr;

 private:
  std::map<std::pair<uint64_t, uint64_t>, ehp_file_info>* out_;
};

// A pid no process has: nothing is read through /proc.
constexpr uint32_t kPid = 4190001;
const KernelFileKey kExe{EHP_KDEV(8, 1), 1001}, kInterp{EHP_KDEV(8, 1), 1002};

class KernelFileIndexTest : public ::testing::Test {
 protected:
  void SetUp() override {
    MapSizes sizes;
    sizes.tables = 2;
    MemoryTableMaps views;
    store_ = std::make_unique<TableStore>(MakeMemoryTableMaps(sizes, &views), sizes);
    files_ = std::make_unique<FileTables>(store_.get(), &warnings_);
    files_->SetClock([this] { return now_; });
    auto map = std::make_unique<MemoryIndexMap>(&bpf_);
    map->writes_ = &writes_;
    index_ = std::make_unique<KernelFileIndex>(std::move(map));
    files_->SetUnloadHook([this](const FileKey& k) { index_->Unpublish(k); });
  }
  FileKey Ready(const std::string& name) {
    const std::string path = TestdataPath(name);
    auto key = files_->Register(path, path);
    EXPECT_TRUE(key.ok()) << key.status();
    files_->AddRef(*key);
    for (int i = 0; i < 500 && files_->pending() > 0; ++i) {
      files_->CollectFinished();
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    files_->CollectFinished();
    EXPECT_EQ(files_->Find(*key)->state, FileInfo::State::kReady);
    return *key;
  }
  // /bin/main's text, as a read of the maps shows it.
  static MapsEntry MainExec() {
    MapsEntry e;
    e.start = 0x1000;
    e.end = 0x2000;
    e.read = e.exec = e.priv = true;
    e.path = "/bin/main";
    return e;
  }
  // A tracker writing an in-memory procs map (*map), the kernel index
  // knowing deep_recursion.stripped as kExe, and kPid's entry written from
  // a read of the maps at 100 showing MainExec().
  std::unique_ptr<ProcessTracker> TrackerWithEntry(MemoryMapWriter** map) {
    auto procs = std::make_unique<MemoryMapWriter>(sizeof(ehp_proc), 16, MemoryMapWriter::Kind::kHash);
    *map = procs.get();
    auto tracker = std::make_unique<ProcessTracker>(files_.get(), std::move(procs), &warnings_);
    tracker->SetKernelIndex(index_.get());
    const FileKey exe = Ready("deep_recursion.stripped");
    index_->Publish(kExe, exe, *files_->Find(exe));
    tracker->Apply(kPid, {MainExec()}, 100);
    return tracker;
  }
  const ehp_file_info* InMap(const KernelFileKey& k) {
    auto it = bpf_.find({k.dev, k.ino});
    return it == bpf_.end() ? nullptr : &it->second;
  }
  std::chrono::steady_clock::time_point now_ = std::chrono::steady_clock::now();
  Warnings warnings_;
  std::unique_ptr<TableStore> store_;
  std::unique_ptr<FileTables> files_;
  std::map<std::pair<uint64_t, uint64_t>, ehp_file_info> bpf_;
  int writes_ = 0;
  std::unique_ptr<KernelFileIndex> index_;
};

// readelf -lW's LOAD line with flags containing E: offset, vaddr, memsz.
struct Load {
  uint64_t offset = 0, vaddr = 0, memsz = 0;
};
Load ExecutableLoad(const std::string& path) {
  std::istringstream in(testing::ShellOutput("readelf -lW " + path));
  std::string line;
  Load best;
  while (std::getline(in, line)) {
    std::istringstream f(line);
    std::string type, off, va, pa, filesz, memsz, flags;
    if (!(f >> type >> off >> va >> pa >> filesz >> memsz >> flags) || type != "LOAD") continue;
    std::string rest;
    std::getline(f, rest);
    if ((flags + rest).find('E') == std::string::npos) continue;
    Load l{std::stoull(off, nullptr, 16), std::stoull(va, nullptr, 16), std::stoull(memsz, nullptr, 16)};
    if (l.memsz > best.memsz) best = l;
  }
  return best;
}

TEST_F(KernelFileIndexTest, PlacesTheExecutableSegmentAsReadelfShowsIt) {
  const FileKey key = Ready("deep_recursion.stripped");
  const Load text = ExecutableLoad(TestdataPath("deep_recursion.stripped"));
  ASSERT_GT(text.memsz, 0u);
  auto info = KernelFileInfo(*files_->Find(key), key.size);
  ASSERT_TRUE(info.has_value());
  EXPECT_EQ(info->x_begin, text.vaddr & ~uint64_t{0xfff});
  EXPECT_EQ(info->x_end, (text.vaddr + text.memsz + 0xfff) & ~uint64_t{0xfff});
  EXPECT_EQ(info->x_offset, text.offset & ~uint64_t{0xfff});
  EXPECT_EQ(info->size, key.size);
  EXPECT_EQ(info->table_id, files_->Find(key)->table_id);
  const std::string entry = testing::ShellOutput(
      "readelf -hW " + TestdataPath("deep_recursion.stripped") + " | awk '/Entry point/ {print $4}'");
  EXPECT_EQ(info->entry, std::stoull(entry, nullptr, 16));
}

TEST_F(KernelFileIndexTest, PublishesOnceWithTheInterpreterAndUnpublishesBeforeUnload) {
  const FileKey exe = Ready("deep_recursion.stripped");
  const FileKey interp = Ready("realign.stripped");
  index_->SetInterpreter(kExe, kInterp);  // before publishing: remembered
  index_->Publish(kExe, exe, *files_->Find(exe));
  index_->Publish(kInterp, interp, *files_->Find(interp));
  ASSERT_NE(InMap(kExe), nullptr);
  EXPECT_EQ(InMap(kExe)->interp.ino, kInterp.ino);
  EXPECT_EQ(InMap(kExe)->interp.dev, kInterp.dev);
  EXPECT_EQ(InMap(kInterp)->interp.ino, 0u);
  const int writes = writes_;
  index_->Publish(kExe, exe, *files_->Find(exe));  // every entry rewrite calls it
  index_->SetInterpreter(kExe, kInterp);
  EXPECT_EQ(writes_, writes) << "nothing changed, nothing written";
  EXPECT_EQ(index_->Find(kExe), exe);

  // Unused, then evicted for a third table: its entry goes first.
  files_->Release(exe);
  Ready("asm_cfi.stripped");
  EXPECT_EQ(files_->Find(exe), nullptr);
  EXPECT_EQ(InMap(kExe), nullptr);
  EXPECT_FALSE(index_->Find(kExe).has_value());
  EXPECT_NE(InMap(kInterp), nullptr);
}

// Published as soon as met, whatever its table's state, and told again
// when that changes, with no process mapping it (a plugin loaded and closed
// before its table was); a file without CFI is published for frame
// pointers, and unpublished when forgotten.
TEST_F(KernelFileIndexTest, PublishesEveryStateAndEachChangeUntilTheFileIsForgotten) {
  files_->HoldBuilds(true);
  const std::string path = TestdataPath("deep_recursion.stripped");
  auto key = files_->Register(path, path);
  ASSERT_TRUE(key.ok()) << key.status();
  files_->AddRef(*key);
  ASSERT_EQ(files_->Find(*key)->state, FileInfo::State::kPending);
  index_->Publish(kExe, *key, *files_->Find(*key));
  ASSERT_NE(InMap(kExe), nullptr);
  EXPECT_EQ(InMap(kExe)->flags, uint32_t{EHP_MAPPING_PENDING});
  EXPECT_EQ(InMap(kExe)->table_id, 0u);
  files_->Release(*key);  // its process is gone before the build ends
  files_->HoldBuilds(false);
  std::vector<FileKey> changed;
  for (int i = 0; i < 500 && changed.empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    changed = files_->CollectFinished();
  }
  for (const FileKey& k : changed) index_->Refresh(k, *files_->Find(k));
  const FileInfo* f = files_->Find(*key);
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(f->state, FileInfo::State::kReady);
  EXPECT_EQ(InMap(kExe)->flags, uint32_t{EHP_MAPPING_HAS_TABLE});
  EXPECT_EQ(InMap(kExe)->table_id, f->table_id);

  const std::string nocfi = TestdataPath("libdlwork_fp.so");
  auto nkey = files_->Register(nocfi, nocfi);
  ASSERT_TRUE(nkey.ok()) << nkey.status();
  files_->AddRef(*nkey);
  for (int i = 0; i < 500 && files_->Find(*nkey)->state == FileInfo::State::kPending; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    files_->CollectFinished();
  }
  ASSERT_EQ(files_->Find(*nkey)->state, FileInfo::State::kNoCfi);
  index_->Publish(kInterp, *nkey, *files_->Find(*nkey));
  ASSERT_NE(InMap(kInterp), nullptr);
  EXPECT_EQ(InMap(kInterp)->flags, 0u) << "frame pointers there";
  // Unused past its time: forgotten, and gone from the kernel's index.
  files_->Release(*nkey);
  now_ += std::chrono::seconds(FileTables::kUnusedTableSeconds + 1);
  files_->CollectFinished();
  EXPECT_EQ(files_->Find(*nkey), nullptr);
  EXPECT_EQ(InMap(kInterp), nullptr);
  EXPECT_FALSE(index_->Find(kInterp).has_value());
}

TEST_F(KernelFileIndexTest, TrackerResolvesWhatTheKernelMappedBeforeAnyRead) {
  const FileKey exe = Ready("deep_recursion.stripped");
  index_->Publish(kExe, exe, *files_->Find(exe));
  Warnings warnings;
  ProcessTracker tracker(files_.get(), nullptr, &warnings);
  tracker.SetKernelIndex(index_.get());
  const ehp_file_info info = *InMap(kExe);
  const uint64_t bias = 0x555555554000;
  ehp_mapping m{bias + info.x_begin, bias + info.x_end, bias, info.table_id, EHP_MAPPING_HAS_TABLE};
  tracker.ImageEnded(kPid, 100);  // the exec
  tracker.AddKernelMapping(kPid, 110, m, kExe, info.x_offset);
  // A file the index does not know is ignored.
  tracker.AddKernelMapping(kPid, 120, {0x7000000, 0x7001000, 0x7000000, 1, 1}, {1, 2}, 0);
  EXPECT_FALSE(tracker.Resolve(kPid, 130, 0x7000500).has_value());

  auto r = tracker.Resolve(kPid, 130, bias + info.x_begin + 0x10);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->mapping->path, TestdataPath("deep_recursion.stripped"));
  EXPECT_EQ(r->elf_vaddr, info.x_begin + 0x10);
  EXPECT_EQ(r->mapping->offset, info.x_offset);
  // The image before the exec does not borrow it.
  EXPECT_FALSE(tracker.Resolve(kPid, 90, bias + info.x_begin + 0x10).has_value());
  EXPECT_TRUE(tracker.tracking(kPid));
  tracker.Exit(kPid, 200);
  EXPECT_TRUE(tracker.Resolve(kPid, 130, bias + info.x_begin + 0x10).has_value());
}

TEST_F(KernelFileIndexTest, ReadingAForkedChildsMapsRewritesTheKernelsEntry) {
  auto procs = std::make_unique<MemoryMapWriter>(sizeof(ehp_proc), 16, MemoryMapWriter::Kind::kHash);
  MemoryMapWriter* map = procs.get();
  Warnings warnings;
  ProcessTracker tracker(files_.get(), std::move(procs), &warnings);
  tracker.SetKernelIndex(index_.get());
  MapsEntry e;
  e.start = 0x1000;
  e.end = 0x2000;
  e.read = e.exec = e.priv = true;
  e.path = "/bin/parent";
  const uint32_t parent = kPid, child = kPid + 1;
  tracker.Apply(parent, {e}, 100);
  tracker.Forked(parent, child, 150);
  EXPECT_EQ(map->Bytes(child), nullptr) << "the kernel copied the entry; nothing written yet";
  EXPECT_EQ(tracker.Resolve(child, 160, 0x1800)->mapping->path, "/bin/parent");
  // The same maps read later: the entry is written anyway, so the slots the
  // kernel may have added since are cleared.
  tracker.Apply(child, {e}, 200);
  ASSERT_NE(map->Bytes(child), nullptr);
  EXPECT_EQ(map->Get<ehp_proc>(child).n_mappings, 1u);
  EXPECT_EQ(map->Get<ehp_proc>(child).n_kernel, 0u);
}

// A library the kernel mapped after our last read of /proc/PID/maps (its
// event not read yet) survives the entry written from that read; one whose
// event was read, and which a later read of the maps no longer shows, does
// not (the maps are the truth for what user space has seen).
TEST_F(KernelFileIndexTest, AnEntryWrittenFromAnOlderReadKeepsWhatTheKernelAddedSince) {
  MemoryMapWriter* map = nullptr;
  const std::unique_ptr<ProcessTracker> owned = TrackerWithEntry(&map);
  ProcessTracker& tracker = *owned;
  const MapsEntry e = MainExec();
  // The kernel adds two libraries to the entry (bpf/proc_learn.bpf.h).
  auto entry = std::make_unique<ehp_proc>(map->Get<ehp_proc>(kPid));
  const ehp_mapping libc{0x7000000, 0x7100000, 0x6ff0000, 7, EHP_MAPPING_HAS_TABLE};
  const ehp_mapping overlap{0x1800, 0x1900, 0x1000, 8, EHP_MAPPING_HAS_TABLE};
  entry->kernel[0] = libc;
  entry->kernel[1] = overlap;
  entry->n_kernel = 2;
  ASSERT_TRUE(map->Write(kPid, entry.get(), 1).ok());
  // A read of the maps taken before the mmap is written.
  MapsEntry other = e;
  other.start = 0x3000;
  other.end = 0x4000;
  other.path = "/lib/other";
  tracker.Apply(kPid, {e, other}, 150);
  ehp_proc written = map->Get<ehp_proc>(kPid);
  EXPECT_EQ(written.n_mappings, 2u);
  ASSERT_EQ(written.n_kernel, 1u) << "the library kept; the slot a written mapping covers dropped";
  EXPECT_EQ(written.kernel[0].begin, libc.begin);
  EXPECT_EQ(written.kernel[0].table_id, libc.table_id);
  // Once the library's event is read (it is then in the snapshot), and a
  // later read shows it gone, its slot goes too.
  const ehp_file_info info = *InMap(kExe);
  const uint64_t bias = 0x555555554000;
  const ehp_mapping seen{bias + info.x_begin, bias + info.x_end, bias, info.table_id,
                         EHP_MAPPING_HAS_TABLE};
  entry = std::make_unique<ehp_proc>(map->Get<ehp_proc>(kPid));
  entry->kernel[1] = seen;
  entry->n_kernel = 2;
  ASSERT_TRUE(map->Write(kPid, entry.get(), 1).ok());
  tracker.AddKernelMapping(kPid, 160, seen, kExe, info.x_offset);
  tracker.Apply(kPid, {e}, 170);
  written = map->Get<ehp_proc>(kPid);
  EXPECT_EQ(written.n_mappings, 1u);
  ASSERT_EQ(written.n_kernel, 1u) << "the slot whose event was read is not carried";
  EXPECT_EQ(written.kernel[0].begin, libc.begin);
}

// The kernel's slot can be lost when our write replaces the entry between
// the kernel's lookup and its store: its event then finds the entry
// without it and writes the entry anew, with the mapping in it; an entry
// that holds it is left alone.
TEST_F(KernelFileIndexTest, AKernelMappingOurWriteReplacedIsWrittenAgain) {
  MemoryMapWriter* map = nullptr;
  const std::unique_ptr<ProcessTracker> owned = TrackerWithEntry(&map);
  ProcessTracker& tracker = *owned;
  const MapsEntry e = MainExec();
  const ehp_file_info info = *InMap(kExe);
  const uint64_t bias = 0x555555554000;
  const ehp_mapping lib{bias + info.x_begin, bias + info.x_end, bias, info.table_id,
                        EHP_MAPPING_HAS_TABLE};
  // Held in a kernel slot: nothing written.
  auto entry = std::make_unique<ehp_proc>(map->Get<ehp_proc>(kPid));
  entry->kernel[0] = lib;
  entry->n_kernel = 1;
  ASSERT_TRUE(map->Write(kPid, entry.get(), 1).ok());
  uint64_t writes = map->writes();
  tracker.AddKernelMapping(kPid, 110, lib, kExe, info.x_offset);
  EXPECT_EQ(map->writes(), writes);
  // Lost: written anew, the mapping among the sorted ones.
  entry->n_kernel = 0;
  ASSERT_TRUE(map->Write(kPid, entry.get(), 1).ok());
  writes = map->writes();
  tracker.AddKernelMapping(kPid, 120, lib, kExe, info.x_offset);
  EXPECT_EQ(map->writes(), writes + 1);
  const ehp_proc written = map->Get<ehp_proc>(kPid);
  ASSERT_EQ(written.n_mappings, 2u);
  EXPECT_EQ(written.mappings[1].begin, lib.begin);
  EXPECT_EQ(written.mappings[1].table_id, lib.table_id);
}

}  // namespace
}  // namespace ehprof
