// ehprof agent's pieces without BPF: service names from cgroup paths, the
// aggregation of samples into one interval (memory by distinct stack, not
// by sample), and the output directory's rotation.
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <string>

#include "agent/continuous/interval_profile.h"
#include "agent/continuous/output_dir.h"
#include "agent/continuous/service_name.h"
#include "agent/tables/table_store.h"
#include "gtest/gtest.h"
#include "tests/test_support.h"

namespace ehprof {
namespace {

TEST(ServiceFromCgroup, ContainersUnitsAndTheRest) {
  EXPECT_EQ(ServiceFromCgroup("0::/system.slice/nginx.service\n"), "nginx.service");
  EXPECT_EQ(ServiceFromCgroup(
                "0::/system.slice/docker-3f4e5d6c7b8a9f0e1d2c3b4a5f6e7d8c9b0a1f2e3d4c5b6a7f8e9d0c1b2a3f4e.scope\n"),
            "container/3f4e5d6c7b8a");
  EXPECT_EQ(ServiceFromCgroup("0::/kubepods.slice/kubepods-burstable.slice/"
                              "kubepods-burstable-pod1234.slice/cri-containerd-"
                              "aabbccddeeff00112233445566778899aabbccddeeff00112233445566778899.scope"),
            "container/aabbccddeeff");
  EXPECT_EQ(ServiceFromCgroup("0::/machine.slice/libpod-0123456789abcdef.scope"), "container/0123456789ab");
  // A container inside a service's slice is the container.
  EXPECT_EQ(ServiceFromCgroup("0::/system.slice/containerd.service/0123456789abcdef0123"),
            "container/0123456789ab");
  EXPECT_EQ(ServiceFromCgroup("0::/user.slice/user-1000.slice/session-3.scope"), "");
  EXPECT_EQ(ServiceFromCgroup("0::/init.scope"), "");
  EXPECT_EQ(ServiceFromCgroup("0::/"), "");
  EXPECT_EQ(ServiceFromCgroup(""), "");
  // cgroup v1 only: the first line's path.
  EXPECT_EQ(ServiceFromCgroup("12:pids:/system.slice/cron.service\n11:cpu:/\n"), "cron.service");
}

TEST(ServiceNames, FallsBackToTheCommAndForgetsPidsNotSeen) {
  ServiceNames names("/nonexistent-proc");
  EXPECT_EQ(names.Of(42, "fio"), "fio");
  EXPECT_EQ(names.Of(43, ""), "unknown");
  names.Prune();  // both seen since the last prune
  EXPECT_EQ(names.size(), 2u);
  names.Of(42, "fio");
  names.Prune();
  EXPECT_EQ(names.size(), 1u);
}

// Names a user chose arrive printable (Pyroscope refuses a whole push for
// one that is not UTF-8).
TEST(ServiceNames, CommsArePrintable) {
  ServiceNames names("/nonexistent-proc");
  EXPECT_EQ(names.Of(42, "\xff\xfe\xc3" "bad"), "\\xff\\xfe\\xc3bad");
  EXPECT_EQ(names.Of(43, "\x1b[2J"), "\\x1b[2J");
}

// Random comms cannot grow the services without end: past the bound in an
// interval, processes go to the overflow service; names with samples in
// one interval keep their places in the next, so a burst of new names
// does not push a host's services out.
TEST(ServiceNames, BoundedPerIntervalWithOverflow) {
  ServiceNames names("/nonexistent-proc", 3);
  EXPECT_EQ(names.Of(1, "nginx"), "nginx");
  EXPECT_EQ(names.Of(2, "postgres"), "postgres");
  EXPECT_EQ(names.Of(3, "r00001"), "r00001");
  for (uint32_t pid = 4; pid < 1004; ++pid) {
    EXPECT_EQ(names.Of(pid, "r" + std::to_string(pid)), ServiceNames::kOverflow);
    EXPECT_EQ(names.Of(pid, "r" + std::to_string(pid)), ServiceNames::kOverflow);  // the same pid again
  }
  EXPECT_EQ(names.Of(2, "postgres"), "postgres");  // had its place
  EXPECT_EQ(names.services(), 3u);
  EXPECT_EQ(names.overflowed(), 1000u);  // each process once
  names.Prune();
  // The next interval: r00001 keeps its place through it, unused.
  EXPECT_EQ(names.Of(1, "nginx"), "nginx");
  EXPECT_EQ(names.Of(2, "postgres"), "postgres");
  EXPECT_EQ(names.Of(5000, "r5000"), ServiceNames::kOverflow);
  names.Prune();  // r00001 had no sample in it: its place is free
  EXPECT_EQ(names.Of(5000, "r5000"), "r5000");
  EXPECT_EQ(names.Of(5001, "r5001"), ServiceNames::kOverflow);
  EXPECT_EQ(names.services(), 3u);
  names.Prune();
  names.Prune();
  EXPECT_EQ(names.services(), 0u);
  EXPECT_EQ(names.size(), 0u);
  EXPECT_EQ(names.Of(5001, "r5001"), "r5001");
}

constexpr uint32_t kPid = 4190001;  // no such process: nothing is opened

MapsEntry Exec(uint64_t start, uint64_t end, const std::string& path, uint64_t offset) {
  return testing::TextMapping(start, end, path, offset);
}

RawSample Sample(std::vector<uint64_t> user, uint64_t time_ns = 1000) {
  RawSample s;
  s.pid = s.tid = kPid;
  s.comm = "work";
  s.time_ns = time_ns;
  s.kernel = {0xffffffff81000010};
  s.user = std::move(user);
  return s;
}

TEST(StackAggregator, CountsDistinctStacksLocatedInTheirMappings) {
  Warnings warnings;
  FileTables files(nullptr, &warnings);
  ProcessTracker tracker(&files, nullptr, &warnings);
  tracker.Apply(kPid, {Exec(0x400000, 0x500000, "/bin/work", 0x1000)}, 10);
  StackAggregator agg;
  const uint64_t leaf = 0x401234 | EHP_FRAME_EXACT, ret = 0x402001;
  for (int i = 0; i < 1000; ++i) agg.Add(Sample({leaf, ret}), tracker, "svc");
  agg.Add(Sample({0x403000 | EHP_FRAME_EXACT, ret}), tracker, "svc");
  agg.Add(Sample({0x999000 | EHP_FRAME_EXACT}), tracker, "other");
  IntervalProfile p = agg.Take(5000);
  EXPECT_EQ(p.samples, 1002u);
  ASSERT_EQ(p.counts.size(), 3u);  // memory by distinct stack, not by sample
  uint64_t most = 0;
  for (const auto& [key, v] : p.counts) {
    if (v.count != 1000) continue;
    most = v.count;
    ASSERT_EQ(key.frames.size(), 3u);
    EXPECT_EQ(p.frames[key.frames[0]].mapping, LocatedFrame::kKernel);
    const LocatedFrame& l = p.frames[key.frames[1]];
    ASSERT_LT(l.mapping, p.mappings.size());
    EXPECT_EQ(p.mappings[l.mapping].path, "/bin/work");
    EXPECT_EQ(p.mappings[l.mapping].offset, 0x1000u);
    EXPECT_EQ(l.runtime, 0x401234u);
    // A return address is located at its call site.
    EXPECT_EQ(p.frames[key.frames[2]].runtime, 0x402000u);
    EXPECT_EQ(p.strings[key.service], "svc");
    EXPECT_EQ(p.strings[key.comm], "work");
  }
  EXPECT_EQ(most, 1000u);
  // An address outside every mapping stays a raw address.
  bool unmapped = false;
  for (const LocatedFrame& f : p.frames) unmapped |= f.mapping == LocatedFrame::kUnmapped;
  EXPECT_TRUE(unmapped);
  // The next interval starts empty.
  IntervalProfile next = agg.Take(6000);
  EXPECT_EQ(next.samples, 0u);
  EXPECT_TRUE(next.counts.empty());
  EXPECT_EQ(next.start_ns, 5000u);
}

TEST(StackAggregator, BoundsDistinctStacksAndCountsTheRest) {
  Warnings warnings;
  FileTables files(nullptr, &warnings);
  ProcessTracker tracker(&files, nullptr, &warnings);
  StackAggregator agg(/*max_stacks=*/10);
  for (uint64_t i = 0; i < 25; ++i) agg.Add(Sample({(0x1000 + i) | EHP_FRAME_EXACT}), tracker, "s");
  IntervalProfile p = agg.Take(1);
  EXPECT_EQ(p.counts.size(), 10u);
  EXPECT_EQ(p.dropped, 15u);
}

IntervalOutput OneSampleInterval(int i) {
  IntervalOutput iv;
  iv.start_unix_ns = 1700000000000000000ull + i * 1000000000ull;
  iv.frequency_hz = 99;
  ResolvedSample s;
  s.comm = "x";
  s.frames.push_back({});
  ServiceProfileBuilder b;
  b.Add("svc", s);
  b.Finish(&iv);
  return iv;
}

TEST(OutputDir, KeepsTheNewestFilesPrivate) {
  const std::string dir = ::testing::TempDir() + "/outdir." + std::to_string(getpid());
  std::filesystem::remove_all(dir);
  auto out = OutputDir::Open(dir, 3);
  ASSERT_TRUE(out.ok()) << out.status();
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(out->Write(OneSampleInterval(i)).ok());
  std::vector<std::string> files = out->Files();
  ASSERT_EQ(files.size(), 3u);
  EXPECT_NE(files[0].find("20231114T221322"), std::string::npos) << files[0];  // the third
  struct stat st;
  ASSERT_EQ(stat(files[2].c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  std::filesystem::remove_all(dir);
  EXPECT_FALSE(OutputDir::Open("/proc/no/such/dir", 3).ok());
}

// A write that fails (here: RLIMIT_FSIZE, as a full disk would) leaves no
// temporary file, and the oldest file was already removed to make room.
TEST(OutputDir, AFailedWriteLeavesNothingAndRotatesFirst) {
  const std::string dir = ::testing::TempDir() + "/outdir-full." + std::to_string(getpid());
  std::filesystem::remove_all(dir);
  const pid_t pid = fork();
  if (pid == 0) {
    auto out = OutputDir::Open(dir, 3);
    if (!out.ok()) _exit(10);
    for (int i = 0; i < 3; ++i) {
      if (!out->Write(OneSampleInterval(i)).ok()) _exit(11);
    }
    signal(SIGXFSZ, SIG_IGN);
    const rlimit tiny{16, 16};
    setrlimit(RLIMIT_FSIZE, &tiny);
    _exit(out->Write(OneSampleInterval(3)).ok() ? 12 : 0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_EQ(WEXITSTATUS(status), 0);
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir)) names.push_back(e.path().filename());
  std::sort(names.begin(), names.end());
  ASSERT_EQ(names.size(), 2u);  // no .tmp-ehprof-*, the oldest gone
  EXPECT_NE(names[0].find("20231114T221321"), std::string::npos) << names[0];
  EXPECT_NE(names[1].find("20231114T221322"), std::string::npos) << names[1];
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ehprof
