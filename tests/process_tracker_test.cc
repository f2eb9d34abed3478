// ProcessTracker's bookkeeping without BPF (no process map, or an in-memory
// one behind the MapWriter seam): which image a
// sample resolves against across exit, pid reuse and exec, what a
// short-lived process leaves behind, and the choice of mappings when a
// process has more than a process entry holds.
#include "agent/process/process_tracker.h"

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

#include "agent/tables/table_store.h"
#include "tests/memory_map_writer.h"
#include "tests/test_support.h"

namespace ehprof {
namespace {

// A pid no process has (pid_max is at most 2^22), so nothing is opened
// through /proc: mappings keep their paths and no file key.
constexpr uint32_t kPid = 4190000;

MapsEntry Exec(uint64_t start, uint64_t end, const std::string& path) {
  return testing::TextMapping(start, end, path);
}

class ProcessTrackerTest : public ::testing::Test {
 protected:
  std::string PathAt(uint64_t time_ns, uint64_t addr) {
    auto r = tracker_.Resolve(kPid, time_ns, addr);
    return r ? r->mapping->path : "(none)";
  }
  std::string PathAtOf(uint32_t pid, uint64_t time_ns, uint64_t addr) {
    auto r = tracker_.Resolve(pid, time_ns, addr);
    return r ? r->mapping->path : "(none)";
  }
  Warnings warnings_;
  FileTables files_{nullptr, &warnings_};
  ProcessTracker tracker_{&files_, nullptr, &warnings_};
};

TEST_F(ProcessTrackerTest, ReusedPidNeverResolvesAgainstTheExitedProcess) {
  tracker_.Apply(kPid, {Exec(0x1000, 0x2000, "/old/a")}, 100);
  tracker_.Exit(kPid, 200);
  tracker_.Apply(kPid, {Exec(0x1000, 0x2000, "/new/b")}, 300);
  EXPECT_EQ(PathAt(50, 0x1500), "/old/a");   // before the first read: that image
  EXPECT_EQ(PathAt(150, 0x1500), "/old/a");
  // After the exit but before the new process was read: the new one.
  EXPECT_EQ(PathAt(250, 0x1500), "/new/b");
  EXPECT_EQ(PathAt(400, 0x1500), "/new/b");
}

TEST_F(ProcessTrackerTest, ExecEndsTheImageBeforeIt) {
  tracker_.Apply(kPid, {Exec(0x1000, 0x2000, "/bin/sh")}, 100);
  tracker_.ImageEnded(kPid, 200);
  tracker_.Apply(kPid, {Exec(0x5000, 0x6000, "/bin/child")}, 210);
  EXPECT_EQ(PathAt(150, 0x1500), "/bin/sh");
  // Between exec and the re-read: the shell's mapping is not the answer.
  EXPECT_EQ(PathAt(205, 0x1500), "(none)");
  EXPECT_EQ(PathAt(205, 0x5500), "/bin/child");
  // A later snapshot of the same image is consulted (libraries mapped
  // after the first read), never one of the image before.
  tracker_.Apply(kPid, {Exec(0x5000, 0x6000, "/bin/child"), Exec(0x9000, 0xa000, "/lib/x.so")}, 400);
  EXPECT_EQ(PathAt(300, 0x9500), "/lib/x.so");
  EXPECT_EQ(PathAt(150, 0x9500), "(none)");
}

TEST_F(ProcessTrackerTest, UnsampledShortLivedProcessLeavesNothing) {
  tracker_.Apply(kPid, {Exec(0x1000, 0x2000, "/bin/true")}, 100);
  tracker_.Exit(kPid, 200, /*keep_history=*/false);
  EXPECT_EQ(tracker_.history_size(), 0u);
  EXPECT_FALSE(tracker_.tracking(kPid));
  // An earlier image with samples stays when only the last goes.
  tracker_.Apply(kPid, {Exec(0x1000, 0x2000, "/bin/sampled")}, 300);
  tracker_.Exit(kPid, 400, /*keep_history=*/true);
  tracker_.Apply(kPid, {Exec(0x1000, 0x2000, "/bin/unsampled")}, 500);
  tracker_.Exit(kPid, 600, /*keep_history=*/false);
  EXPECT_EQ(PathAt(350, 0x1500), "/bin/sampled");
  EXPECT_EQ(PathAt(550, 0x1500), "(none)");
}

TEST_F(ProcessTrackerTest, UnsampledProcessThatExecdLeavesNothing) {
  tracker_.Apply(kPid, {Exec(0x1000, 0x2000, "/bin/sh")}, 100);  // the fork
  tracker_.ImageEnded(kPid, 150);                                  // exec
  tracker_.Apply(kPid, {Exec(0x5000, 0x6000, "/bin/child")}, 160);
  tracker_.Exit(kPid, 200, /*keep_history=*/false);
  EXPECT_EQ(tracker_.history_size(), 0u);
}

// A file mapped by this very process (opened inside its root, as for any
// process without map_files): kept while a snapshot maps it, handed back
// once none does.
TEST_F(ProcessTrackerTest, AFileIsReleasedOnceNoRememberedProcessMapsIt) {
  const std::string path = testing::TestdataPath("plt_calls");
  const auto self = static_cast<uint32_t>(getpid());
  tracker_.Apply(self, {Exec(0x1000, 0x2000, path)}, 100);
  ASSERT_EQ(tracker_.kept_files(), 1u);
  EXPECT_TRUE(tracker_.ReleaseUnmappedFiles(0).empty()) << "its process lives";
  tracker_.Exit(self, 200, /*keep_history=*/false);
  std::vector<ReleasedFile> released = tracker_.ReleaseUnmappedFiles(0);
  ASSERT_EQ(released.size(), 1u);
  EXPECT_EQ(tracker_.kept_files(), 0u);
  // Open until its new owner closes it, on the very file.
  struct stat held, on_disk;
  ASSERT_EQ(fstat(released[0].fd.get(), &held), 0);
  ASSERT_EQ(stat(path.c_str(), &on_disk), 0);
  EXPECT_EQ(held.st_ino, on_disk.st_ino);
  EXPECT_EQ(released[0].path, "/proc/self/fd/" + std::to_string(released[0].fd.get()));
  // The next process mapping it opens it anew.
  tracker_.Apply(self, {Exec(0x1000, 0x2000, path)}, 300);
  EXPECT_EQ(tracker_.kept_files(), 1u);
  const auto* maps = tracker_.MappingsAt(self, 300);
  ASSERT_TRUE(maps && maps->size() == 1);
  EXPECT_NE((*maps)[0].kept_path, released[0].path);
}

// What a walk finished late walks over: the snapshot in force, with the
// same image's later mappings that overlap none of it (a library mapped
// after it was read), never the image before's; sorted, each once.
TEST_F(ProcessTrackerTest, MappingsFromAddsLaterLibrariesOfTheSameImage) {
  tracker_.Apply(kPid, {Exec(0x1000, 0x2000, "/bin/old")}, 50);
  tracker_.ImageEnded(kPid, 90);
  tracker_.Apply(kPid, {Exec(0x5000, 0x6000, "/bin/child"), Exec(0x9000, 0xa000, "/lib/a.so")}, 100);
  // Later: /lib/a.so replaced at the same place by b.so (the in-force one
  // wins), /lib/c.so mapped below, /lib/d.so above, twice over.
  tracker_.Apply(kPid, {Exec(0x3000, 0x4000, "/lib/c.so"), Exec(0x5000, 0x6000, "/bin/child"),
                        Exec(0x9000, 0xa000, "/lib/b.so")}, 200);
  tracker_.Apply(kPid, {Exec(0x3000, 0x4000, "/lib/c.so"), Exec(0x5000, 0x6000, "/bin/child"),
                        Exec(0x9800, 0xa800, "/lib/b2.so"), Exec(0xb000, 0xc000, "/lib/d.so")}, 300);
  std::vector<std::string> paths;
  for (const TrackedMapping& m : tracker_.MappingsFrom(kPid, 150)) paths.push_back(m.path);
  EXPECT_EQ(paths, (std::vector<std::string>{"/lib/c.so", "/bin/child", "/lib/a.so", "/lib/d.so"}));
  paths.clear();
  for (const TrackedMapping& m : tracker_.MappingsFrom(kPid, 60)) paths.push_back(m.path);
  EXPECT_EQ(paths, (std::vector<std::string>{"/bin/old"}));
  EXPECT_TRUE(tracker_.MappingsFrom(kPid + 1, 150).empty());
}

// JIT code's region grows while the process runs, and the kernel merges
// the new part with the known one: a walk finished late needs the new part.
TEST_F(ProcessTrackerTest, MappingsFromAddsTheNewPartsOfGrownAnonymousCode) {
  const auto anon = [](uint64_t start, uint64_t end) {
    MapsEntry m = Exec(start, end, "");
    m.write = true;
    return m;
  };
  tracker_.Apply(kPid, {anon(0x1000, 0x2000), Exec(0x5000, 0x6000, "/bin/child"), anon(0x8000, 0x9000)}, 100);
  tracker_.Apply(kPid, {anon(0x1000, 0x3000), Exec(0x5000, 0x6000, "/bin/child"), anon(0x7000, 0xa000)}, 200);
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  for (const TrackedMapping& m : tracker_.MappingsFrom(kPid, 150)) ranges.emplace_back(m.start, m.end);
  EXPECT_EQ(ranges, (std::vector<std::pair<uint64_t, uint64_t>>{
                        {0x1000, 0x2000}, {0x2000, 0x3000}, {0x5000, 0x6000}, {0x7000, 0x8000},
                        {0x8000, 0x9000}, {0x9000, 0xa000}}));
}

// A long-lived process that unmaps a library and maps another: the
// snapshot that held the first goes once replaced long enough ago, and
// with it the fd.
TEST_F(ProcessTrackerTest, ALibraryALiveProcessUnmappedIsReleased) {
  const std::string a = testing::TestdataPath("plt_calls"), b = testing::TestdataPath("deep_recursion");
  const auto self = static_cast<uint32_t>(getpid());
  tracker_.Apply(self, {Exec(0x1000, 0x2000, a)}, 100);
  tracker_.Apply(self, {Exec(0x5000, 0x6000, b)}, 300);
  EXPECT_TRUE(tracker_.ReleaseUnmappedFiles(250).empty()) << "replaced after 250";
  EXPECT_EQ(PathAtOf(self, 200, 0x1500), a);
  std::vector<ReleasedFile> released = tracker_.ReleaseUnmappedFiles(300);
  ASSERT_EQ(released.size(), 1u);
  EXPECT_EQ(tracker_.kept_files(), 1u);
  EXPECT_EQ(PathAtOf(self, 400, 0x5500), b);
  // An exec not followed by a read of the new image keeps the old one:
  // nothing after the exec resolves against it.
  tracker_.ImageEnded(self, 500);
  EXPECT_TRUE(tracker_.ReleaseUnmappedFiles(600).empty());
  EXPECT_EQ(PathAtOf(self, 550, 0x5500), "(none)");
  EXPECT_EQ(PathAtOf(self, 450, 0x5500), b);
}

TEST_F(ProcessTrackerTest, AnExitedProcessWithSamplesKeepsItsFiles) {
  const std::string path = testing::TestdataPath("plt_calls");
  const auto self = static_cast<uint32_t>(getpid());
  tracker_.Apply(self, {Exec(0x1000, 0x2000, path)}, 100);
  tracker_.Exit(self, 200, /*keep_history=*/true);  // `record`: resolved at the end
  EXPECT_TRUE(tracker_.ReleaseUnmappedFiles(0).empty());
  EXPECT_EQ(tracker_.kept_files(), 1u);
  EXPECT_EQ(PathAtOf(self, 150, 0x1500), path);
}

TEST_F(ProcessTrackerTest, RereadingAnUnchangedImageAddsNoSnapshot) {
  const std::vector<MapsEntry> maps = {Exec(0x1000, 0x2000, "/bin/a")};
  for (uint64_t t = 100; t < 10000; t += 100) tracker_.Apply(kPid, maps, t);
  // The first snapshot still answers for every time of the image.
  EXPECT_EQ(PathAt(50, 0x1500), "/bin/a");
  EXPECT_EQ(PathAt(9950, 0x1500), "/bin/a");
  EXPECT_EQ(tracker_.MappingsAt(kPid, 9950), tracker_.MappingsAt(kPid, 100));
}

TEST_F(ProcessTrackerTest, OverTheLimitWarnsOnceAndCoversEveryMapping) {
  std::vector<MapsEntry> maps = {Exec(0x400000, 0x401000, "/bin/many")};
  for (uint64_t i = 0; i < EHP_MAX_MAPPINGS + 500; ++i) {
    const uint64_t at = 0x10000000 + i * 0x2000;
    maps.push_back(Exec(at, at + 0x1000, "//anon-like"));
  }
  maps.push_back(Exec(0x7f0000000000, 0x7f0000100000, "/lib/libc.so.6"));
  tracker_.Apply(kPid, maps, 100);
  maps.pop_back();  // changed: written again
  tracker_.Apply(kPid, maps, 200);
  std::vector<std::string> warnings = warnings_.Take();
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("more than the 1024"), std::string::npos) << warnings[0];
  // Every mapping stays known to user space (no re-read storms for pcs in
  // the ones the entry left out).
  EXPECT_TRUE(tracker_.Covers(kPid, 0x10000000 + (EHP_MAX_MAPPINGS + 400) * 0x2000));
  EXPECT_FALSE(tracker_.Covers(kPid, 0x7f0000000000));  // gone in the second read
}

TEST(ChooseEntryMappingsTest, EveryFilesFirstMappingBeforeAnyFilesSecond) {
  std::vector<TrackedMapping> all;
  auto add = [&](uint64_t start, const std::string& path) {
    TrackedMapping m;
    m.start = start;
    m.end = start + 0x1000;
    m.path = path;
    all.push_back(m);
  };
  for (uint64_t i = 0; i < 3000; ++i) add(0x10000000 + i * 0x2000, "/bin/many");
  add(0x550000000000, "/bin/many");  // the text: what the loader mapped
  add(0x7f0000000000, "/lib/libc.so.6");
  add(0x7f1000000000, "/lib/ld-linux-x86-64.so.2");
  add(0x7fff00000000, "[vdso]");
  auto loader_like = [](const TrackedMapping& m) { return m.start >= 0x550000000000; };
  auto chosen = ChooseEntryMappings(all, 1024, loader_like);
  ASSERT_EQ(chosen.size(), 1024u);
  EXPECT_TRUE(std::is_sorted(chosen.begin(), chosen.end(),
                             [](auto* a, auto* b) { return a->start < b->start; }));
  EXPECT_EQ(chosen[1019]->path, "/bin/many");
  EXPECT_EQ(chosen[1020]->start, 0x550000000000u);  // the text, over 1,019 copies
  EXPECT_EQ(chosen[1021]->path, "/lib/libc.so.6");
  EXPECT_EQ(chosen[1022]->path, "/lib/ld-linux-x86-64.so.2");
  EXPECT_EQ(chosen[1023]->path, "[vdso]");
  // Within the limit nothing is left out.
  EXPECT_EQ(ChooseEntryMappings(all, 5000, loader_like).size(), all.size());
}

// The procs map through the seam: entries written sorted, a full map said
// once and counted, an exit's entry removed, a refused process written once
// there is room.
TEST(ProcessTrackerProcsMap, FullMapIsCountedOnceAndRoomIsUsedAgain) {
  Warnings warnings;
  FileTables files{nullptr, &warnings};
  auto map = std::make_unique<MemoryMapWriter>(sizeof(ehp_proc), 2, MemoryMapWriter::Kind::kHash);
  MemoryMapWriter* procs = map.get();
  ProcessTracker tracker(&files, std::move(map), &warnings);
  tracker.Apply(kPid, {Exec(0x5000, 0x6000, "/b"), Exec(0x1000, 0x2000, "/a")}, 100);
  tracker.Apply(kPid + 1, {Exec(0x1000, 0x2000, "/a")}, 100);
  ASSERT_TRUE(procs->Has(kPid));
  const auto entry = std::make_unique<ehp_proc>(procs->Get<ehp_proc>(kPid));
  ASSERT_EQ(entry->n_mappings, 2u);
  EXPECT_EQ(entry->mappings[0].begin, 0x1000u);  // sorted for the BPF binary search
  EXPECT_EQ(entry->mappings[1].end, 0x6000u);
  EXPECT_EQ(entry->mappings[0].flags, 0u);  // no table: frame pointers there

  tracker.Apply(kPid + 2, {Exec(0x1000, 0x2000, "/a")}, 100);
  tracker.Apply(kPid + 3, {Exec(0x1000, 0x2000, "/a")}, 100);
  tracker.Apply(kPid + 2, {Exec(0x1000, 0x2000, "/a")}, 110);  // refused again: not recounted
  EXPECT_EQ(tracker.procs_refused(), 2u);
  std::vector<std::string> said = warnings.Take();
  ASSERT_EQ(said.size(), 1u) << "a full map is said once";
  EXPECT_NE(said[0].find("raise --max-procs"), std::string::npos) << said[0];

  tracker.Exit(kPid, 200);
  EXPECT_FALSE(procs->Has(kPid));
  tracker.Apply(kPid + 2, {Exec(0x1000, 0x2000, "/a")}, 210);
  EXPECT_TRUE(procs->Has(kPid + 2));
}

// Anonymous code (JIT code, YJIT's) is marked so, for the Ruby walk
// (bpf/ruby_yjit.bpf.h); a file without a table is not.
TEST(ProcessTrackerProcsMap, AnonymousCodeIsMarked) {
  Warnings warnings;
  FileTables files{nullptr, &warnings};
  auto map = std::make_unique<MemoryMapWriter>(sizeof(ehp_proc), 4, MemoryMapWriter::Kind::kHash);
  MemoryMapWriter* procs = map.get();
  ProcessTracker tracker(&files, std::move(map), &warnings);
  tracker.Apply(kPid, {Exec(0x1000, 0x2000, "/a"), Exec(0x7000, 0x9000, "")}, 100);
  ASSERT_TRUE(procs->Has(kPid));
  const auto entry = std::make_unique<ehp_proc>(procs->Get<ehp_proc>(kPid));
  ASSERT_EQ(entry->n_mappings, 2u);
  EXPECT_EQ(entry->mappings[0].flags, 0u);
  EXPECT_EQ(entry->mappings[1].begin, 0x7000u);
  EXPECT_EQ(entry->mappings[1].flags, static_cast<uint32_t>(EHP_MAPPING_ANON));
}

}  // namespace
}  // namespace ehprof
