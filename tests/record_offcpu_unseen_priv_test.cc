// ehprof record --off-cpu when a block's switch-in fires no sched_switch
// (on Firecracker guests a switch away from the guest's init threads is not
// traced): the block must be sent at the task's next switch-out, ended
// where its run time since its last pick says, not overwritten and lost.
// No switch can be left untraced on purpose, so the test makes the state
// such a switch leaves: a block kept for a task that is on the CPU.
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <dirent.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <regex>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "agent/record/run_control.h"
#include "base/unique_fd.h"
#include "bpf/ehprof_abi.h"
#include "gtest/gtest.h"
#include "tests/test_support.h"

namespace ehprof {
namespace {

using testing::RequireRootForBpf;
using testing::RunEhprof;

// The BPF map named `name` among those process `pid` holds open.
UniqueFd MapOf(pid_t pid, const char* name, bpf_map_info* info) {
  const std::string dir = "/proc/" + std::to_string(pid) + "/fdinfo";
  std::unique_ptr<DIR, int (*)(DIR*)> d(opendir(dir.c_str()), closedir);
  if (!d) return UniqueFd();
  while (dirent* e = readdir(d.get())) {
    std::ifstream in(dir + "/" + e->d_name);
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind("map_id:", 0) != 0) continue;
      UniqueFd fd(bpf_map_get_fd_by_id(static_cast<uint32_t>(std::stoul(line.substr(7)))));
      uint32_t len = sizeof(*info);
      std::memset(info, 0, sizeof(*info));
      if (fd.get() >= 0 && bpf_obj_get_info_by_fd(fd.get(), info, &len) == 0 &&
          std::strcmp(info->name, name) == 0) {
        return fd;
      }
    }
  }
  return UniqueFd();
}

// The block is made for this very thread, from this thread: on the CPU
// while it makes it (as a task a switch-in went unseen for is), so the
// next thing the scheduler does with it is a switch-out. ehprof follows
// another process: a block kept for a task is sent whoever it is.
TEST(RecordOffCpuUnseen, ABlockWhoseSwitchInWentUnseenIsSentAtTheNextSwitchOut) {
  if (!RequireRootForBpf()) GTEST_SKIP();
  const std::string out = ::testing::TempDir() + "/unseen." + std::to_string(getpid()) + ".txt";
  // It blocks a millisecond at a time: its blocks, once sent, say that
  // ehprof's switch programs are attached (the maps exist before).
  const pid_t followed = fork();
  ASSERT_GE(followed, 0);
  if (followed == 0) {
    for (;;) usleep(1000);
  }
  const uint32_t self = static_cast<uint32_t>(gettid());
  // The made block began this long before it was made, after sampling
  // began: a block from before the recording's start is charged from the
  // start only.
  constexpr uint64_t kAge = 200000000;
  uint64_t made = 0, gone = 0;
  auto r = RunEhprof(
      {"record", "--off-cpu", "-q", "--format", "perf-script", "-o", out, "-p", std::to_string(followed)},
      SIGINT, 500, [&](pid_t ehprof) {
        bpf_map_info info;
        UniqueFd map;
        for (int i = 0; i < 100 && map.get() < 0; ++i) {
          map = MapOf(ehprof, "offcpu_tasks", &info);
          if (map.get() < 0) std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
        ASSERT_GE(map.get(), 0) << "no offcpu_tasks map held by ehprof " << ehprof;
        bpf_map_info stats_info;
        UniqueFd stats;
        for (int i = 0; i < 100 && stats.get() < 0; ++i) {
          stats = MapOf(ehprof, "stats", &stats_info);
          if (stats.get() < 0) std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
        ASSERT_GE(stats.get(), 0) << "no stats map held by ehprof " << ehprof;
        std::vector<uint64_t> per_cpu(static_cast<size_t>(libbpf_num_possible_cpus()), 0);
        const uint32_t sent_key = EHP_STAT_OFFCPU_EVENTS;
        uint64_t sent = 0;
        for (int i = 0; i < 200 && sent == 0; ++i) {
          if (bpf_map_lookup_elem(stats.get(), &sent_key, per_cpu.data()) == 0) {
            for (uint64_t v : per_cpu) sent += v;
          }
          if (sent == 0) std::this_thread::sleep_for(std::chrono::milliseconds(25));
        }
        ASSERT_GT(sent, 0u) << "the followed process's blocks never sent: switch programs not attached";
        // Sampling begins once the followed process's tables are loaded
        // (from the table cache here: the summary says 0 ms waited).
        std::this_thread::sleep_for(std::chrono::milliseconds(1000));
        ASSERT_GE(info.value_size, sizeof(ehp_event) + sizeof(uint64_t));
        // A block kept as a switch-out keeps one, with one user frame.
        std::vector<uint8_t> value(info.value_size, 0);
        ehp_event ev{};
        ev.kind = EHP_EVENT_SAMPLE;
        ev.pid = static_cast<uint32_t>(getpid());
        ev.tid = self;
        ev.flags = EHP_SAMPLE_OFF_CPU;
        ev.n_user = 1;
        ev.stop_reason = EHP_STOP_END_OF_STACK;
        std::snprintf(ev.comm, sizeof(ev.comm), "unseen");
        const uint64_t frame = 0x5eed;
        // Just picked (the sleep's end), so the last pick is this close
        // before the block is made.
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
        made = NowNs();
        ev.time_ns = made - kAge;
        std::memcpy(value.data(), &ev, sizeof(ev));
        std::memcpy(value.data() + sizeof(ev), &frame, sizeof(frame));
        ASSERT_EQ(bpf_map_update_elem(map.get(), &self, value.data(), BPF_ANY), 0) << std::strerror(errno);
        std::this_thread::sleep_for(std::chrono::milliseconds(5));  // the switch-out
        gone = bpf_map_lookup_elem(map.get(), &self, value.data()) != 0 ? NowNs() : 0;
      });
  kill(followed, SIGKILL);
  waitpid(followed, nullptr, 0);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_GT(made, 0u);
  EXPECT_GT(gone, 0u) << "the made block was still kept after its task left the CPU";
  const std::string text = testing::ReadFile(out);
  std::remove(out.c_str());
  // Sent once, as a block, said in the summary.
  std::smatch m;
  const std::regex header("unseen +" + std::to_string(getpid()) + R"( +\[[0-9]+\] +[0-9.]+: +([0-9]+) offcpu-time:)");
  ASSERT_TRUE(std::regex_search(text, m, header)) << r.err << "\n" << text.substr(0, 3000);
  const uint64_t period = std::stoull(m[1].str());
  // Counted in the summary: at least the made one (this guest's own
  // untraced switches may add more; CI's run counted 5).
  std::smatch said;
  ASSERT_TRUE(std::regex_search(r.err, said, std::regex(R"(([0-9]+) blocks ended by a switch-in no sched_switch event showed)")))
      << r.err;
  EXPECT_GE(std::stoull(said[1].str()), 1u) << r.err;
  // It ended at this thread's last pick: before the block was made, and
  // after the sleep before that ended (microseconds before, unless a busy
  // machine kept the woken thread waiting for a CPU).
  std::printf("made block: %.3f ms\n", period / 1e6);
  EXPECT_LE(period, kAge) << text.substr(0, 2000);
  EXPECT_GE(period, kAge - 20000000) << text.substr(0, 2000);
  EXPECT_EQ(std::regex_search(m.suffix().str(), header), false) << "sent twice";
}

}  // namespace
}  // namespace ehprof
