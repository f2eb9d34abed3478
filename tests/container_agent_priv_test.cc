// The agent's OCI image (scripts/build_image.sh) run by the real container
// runtime (Debian's podman, runc) as a DaemonSet runs it: --pid=host, only
// the capabilities it needs, a read-only root, the table cache on a host
// path, the runtime's container records mounted read-only. It profiles two
// other containers (Python 3.14 from a forky root, Ruby 3.3 from a trixie
// root: binaries the host does not have) and a host process (fio), and
// exports to the real Pyroscope and the real OpenTelemetry Collector, both
// on 127.0.0.1. Each container's samples carry its id and the name podman
// gave it, with stacks through its own binaries down to the thread's
// start; fio is the host's; what both servers hold per container is the
// agent's own --output-dir profile of it.
#include <unistd.h>

#include <cstdlib>
#include <algorithm>
#include <filesystem>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "gtest/gtest.h"
#include "tests/debian_python_root.h"
#include "tests/otelcol_server.h"
#include "tests/pprof_stacks.h"
#include "tests/pyroscope_server.h"
#include "tests/runtime_programs.h"
#include "tests/server_process.h"
#include "tests/test_support.h"

namespace ehprof {
namespace {

using testing::ShellOutput;

constexpr char kPodmanRun[] =
    "podman run --runtime runc --ulimit nofile=1024:1024 --ulimit nproc=1024:1024";
constexpr char kStorage[] = "/var/lib/containers/storage/overlay-containers";
// The table cache on a host path, kept from run to run as a DaemonSet's
// hostPath volume keeps it.
constexpr char kTableCache[] = "/var/cache/ehprof/container-tables";
constexpr size_t kIntervals = 10;
// Stacks are judged from this interval on: before, the agent that just
// started may still be building the tables of every binary on the machine
// (all of them, on a cold cache), and the walks of those without one stop
// early.
constexpr size_t kJudgedFrom = 5;

// A cached Debian root (scripts/debian_root.sh) as a podman image, imported
// once; the image's name.
std::string RootImage(const std::string& codename, const std::string& packages) {
  // The path is the output's last line: ShellOutput takes stderr too, where
  // the script says it is making the root (the first time on a machine).
  const std::string out(absl::StripTrailingAsciiWhitespace(
      ShellOutput(absl::StrCat("EHPROF_ROOT_PACKAGES=", packages, " timeout 1800 bash ",
                               testing::SourcePath("scripts/debian_root.sh"), " --tarball ", codename))));
  const std::string tarball = out.substr(out.find_last_of('\n') + 1);
  if (tarball.empty() || !absl::EndsWith(tarball, ".tar") || access(tarball.c_str(), R_OK) != 0) return "";
  const std::string image =
      "localhost/ehprof-test-root:" + std::filesystem::path(tarball).stem().string();
  if (std::system(("podman image exists " + image).c_str()) != 0 &&
      std::system(("podman import -q " + tarball + " " + image + " >/dev/null").c_str()) != 0) {
    return "";
  }
  return image;
}

struct Sample {
  size_t interval = 0;  // its file's place in time order
  std::string service, container;
  int64_t count = 0;
  std::vector<testing::PprofFrame> frames;  // leaf first
};

// A field of `podman inspect` (e.g. "State.Pid").
std::string Inspect(const std::string& container, const std::string& field) {
  return std::string(absl::StripTrailingAsciiWhitespace(
      ShellOutput("podman inspect -f '{{." + field + "}}' " + container)));
}

// The samples of the agent's CPU profiles, with their labels.
std::vector<Sample> ReadSamples(const std::string& dir) {
  std::vector<Sample> out;
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(dir)) files.push_back(e.path());
  std::sort(files.begin(), files.end());  // named by their start time
  for (size_t interval = 0; interval < files.size(); ++interval) {
    const std::string& path = files[interval];
    if (path.find(".off_cpu.") != std::string::npos) continue;
    auto p = testing::ReadPprof(path);
    EXPECT_TRUE(p.has_value()) << path;
    if (!p) continue;
    auto stacks = testing::PprofStacks(*p);
    auto str = [&](int64_t i) { return i >= 0 && i < p->string_table_size() ? p->string_table(i) : ""; };
    for (int i = 0; i < p->sample_size(); ++i) {
      Sample s;
      s.interval = interval;
      for (const auto& l : p->sample(i).label()) {
        if (str(l.key()) == "service_name") s.service = str(l.str());
        if (str(l.key()) == "container_name") s.container = str(l.str());
      }
      s.count = stacks[i].first;
      s.frames = std::move(stacks[i].second);
      out.push_back(std::move(s));
    }
  }
  return out;
}

// Whether the walk reached the thread's start: _start, or clone3 (which a
// stripped libc, trixie's, leaves unnamed: "N+0xADDR", known by the
// syscall before the address in that libc, read through the container's
// root).
bool Complete(const Sample& s, const std::string& root_dir) {
  if (s.frames.empty()) return false;
  const testing::PprofFrame& root = s.frames.back();
  if (root.function == "_start" || root.function == "clone3" || root.function == "clone") return true;
  std::smatch m;
  return std::regex_match(root.function, m, std::regex(R"(\d+\+0x([0-9a-f]+))")) &&
         testing::IsClone3Child(root_dir + root.mapping, "libc.so.6+0x" + m[1].str());
}

// Root-first folded stacks of a service's samples, sorted, merged.
std::string Folded(const std::vector<Sample>& samples, const std::string& service) {
  std::map<std::string, int64_t> m;
  for (const Sample& s : samples) {
    if (s.service != service) continue;
    std::string stack;
    for (auto it = s.frames.rbegin(); it != s.frames.rend(); ++it) stack += (stack.empty() ? "" : ";") + it->function;
    m[stack] += s.count;
  }
  std::string out;
  for (const auto& [stack, n] : m) absl::StrAppend(&out, stack, " ", n, "\n");
  return out;
}

// What the Collector received for a service (tests/otlp_fold.py).
std::string Fold(const testing::OtelcolServer& server, const std::string& args) {
  std::string cmd = "python3 " + testing::SourcePath("tests/otlp_fold.py") + " " + args;
  for (const std::string& f : server.files()) {
    if (std::filesystem::exists(f)) cmd += " '" + f + "'";
  }
  return ShellOutput(cmd);
}

// Pyroscope's total CPU nanoseconds for a series selector (URL-encoded).
double PyroscopeTicks(const testing::PyroscopeServer& server, const std::string& selector) {
  const std::string q = absl::StrCat(server.query_url(), "/pyroscope/render?query=process_cpu:cpu:nanoseconds:cpu:nanoseconds",
                                     selector, "&from=now-15m&until=now%2B1m&format=json");
  const std::string out = ShellOutput(absl::StrCat(
      "curl -sf '", q, "' | python3 -c 'import json,sys; print(json.load(sys.stdin)[\"flamebearer\"][\"numTicks\"])'"));
  return out.empty() ? -1 : std::stod(out);
}

class ContainerAgent : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!testing::RequireRootForBpf()) GTEST_SKIP();
    if (access("/usr/bin/podman", X_OK) != 0 || access("/usr/sbin/runc", X_OK) != 0) {
      if (std::getenv("CI")) FAIL() << "podman and runc (scripts/packages.sh) are not installed";
      GTEST_SKIP() << "podman and runc are not installed";
    }
    std::string error;
    if (!testing::RequireServer(pyroscope_.Start(&error), error)) GTEST_SKIP() << error;
    if (!testing::RequireServer(otelcol_.Start(&error), error)) GTEST_SKIP() << error;
    dir_ = ::testing::TempDir() + "/container_agent." + std::to_string(getpid());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_ + "/out");
    tag_ = std::to_string(getpid());
  }
  void TearDown() override {
    for (const std::string& name : names_) {
      [[maybe_unused]] int rc = std::system(("podman rm -f -t 0 " + name + " >/dev/null 2>&1").c_str());
    }
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }
  // Starts a detached container; its full id.
  std::string Run(const std::string& name, const std::string& args) {
    names_.push_back(name);
    return std::string(absl::StripTrailingAsciiWhitespace(
        ShellOutput(absl::StrCat("timeout 120 ", kPodmanRun, " -d --name ", name, " ", args))));
  }
  testing::PyroscopeServer pyroscope_;
  testing::OtelcolServer otelcol_;
  std::string dir_, tag_;
  std::vector<std::string> names_;
};

TEST_F(ContainerAgent, ProfilesOtherContainersByIdAndNameAndTheHost) {
  // The image, built from this build's binary and Debian's packages.
  const std::string build = ShellOutput(absl::StrCat("timeout 900 bash ", testing::SourcePath("scripts/build_image.sh"), " ",
                                                     testing::EhprofBinary(), " ", dir_, "/image.tar 2>&1"));
  ASSERT_NE(build.find("digest sha256:"), std::string::npos) << build;
  std::smatch size;
  ASSERT_TRUE(std::regex_search(build, size, std::regex(R"(layer (\d+) bytes gzipped)"))) << build;
  testing::PrintFigure("container_image_layer_bytes", std::stod(size[1].str()));
  const std::string loaded = ShellOutput("podman load -q -i " + dir_ + "/image.tar");
  std::smatch image;
  ASSERT_TRUE(std::regex_search(loaded, image, std::regex(R"(Loaded image: (\S+))"))) << loaded;
  const std::string python = RootImage("forky", "python3.14"), ruby = RootImage("trixie", "ruby3.3");
  ASSERT_FALSE(python.empty() || ruby.empty()) << "could not make the workload roots";
  ASSERT_EQ(std::system(("python3 " + testing::SourcePath("scripts/agent_seccomp.py") + " > " + dir_ +
                         "/seccomp.json").c_str()), 0);

  const std::string testdata = testing::SourcePath("testdata");
  const std::string py_name = "ehprof-test-py-" + tag_, rb_name = "ehprof-test-rb-" + tag_;
  const std::string py_id = Run(py_name, absl::StrCat("-v ", testdata, ":/t:ro ", python,
                                                      " python3.14 /t/python/shapes.py deep 120"));
  const std::string rb_id = Run(rb_name, absl::StrCat("-v ", testdata, ":/t:ro ", ruby, " ruby /t/ruby/shapes.rb hot 120"));
  ASSERT_EQ(py_id.size(), 64u) << py_id;
  ASSERT_EQ(rb_id.size(), 64u) << rb_id;
  pid_t fio = testing::SpawnProgram(
      {"fio", "--output=/dev/null", "--name=cpu", "--ioengine=null", "--size=100g", "--bs=4k", "--rw=randread",
       "--time_based", "--runtime=120"});  // testdata/workloads/fio-cpu.job's, for longer
  ASSERT_GT(fio, 0);
  std::filesystem::create_directories(kTableCache);
  const std::string agent = "ehprof-test-agent-" + tag_;
  // The DaemonSet's settings: the host's pids, network (the servers are on
  // its 127.0.0.1) and hostname; no capability but these; the runtime's
  // seccomp profile with bpf and perf_event_open let through.
  Run(agent, absl::StrCat("--pid=host --network=host --uts=host --read-only --cap-drop=all ",
                          "--cap-add=BPF,PERFMON,SYS_PTRACE,SYSLOG,CHECKPOINT_RESTORE ",
                          "--security-opt seccomp=", dir_, "/seccomp.json -v ", kTableCache, ":/var/cache/ehprof/tables ",
                          "-v ", dir_, "/out:/out -v ", kStorage, ":", kStorage, ":ro ", image[1].str(),
                          " --interval 2 --pyroscope ", pyroscope_.url(), " --otlp ", otelcol_.http_url(),
                          " --output-dir /out --metrics-every 0"));
  // Ten intervals written (20 s of samples) once it has started.
  for (int i = 0; i < 240; ++i) {
    size_t files = 0;
    for (const auto& e : std::filesystem::directory_iterator(dir_ + "/out")) files += e.is_regular_file();
    if (files >= kIntervals) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  ASSERT_EQ(std::system(("timeout 60 podman stop -t 30 " + agent + " >/dev/null").c_str()), 0);
  const std::string log = ShellOutput("podman logs " + agent + " 2>&1");
  testing::KillProgram(&fio);
  EXPECT_NE(log.find("otlp exported"), std::string::npos) << log;
  EXPECT_FALSE(std::regex_search(log, std::regex(R"(\([1-9]\d* refused)"))) << log;
  EXPECT_EQ(Inspect(agent, "State.ExitCode"), "0") << log;

  const std::vector<Sample> samples = ReadSamples(dir_ + "/out");
  struct Want {
    std::string id, name, mapping, program;
  };
  for (const Want& w : {Want{py_id, py_name, "python3.14", "/t/python/shapes.py"},
                        Want{rb_id, rb_name, "libruby", "/t/ruby/shapes.rb"}}) {
    const std::string service = "container/" + w.id.substr(0, 12);
    const std::string root_dir = "/proc/" + Inspect(w.name, "State.Pid") + "/root";
    int64_t total = 0, judged = 0, complete = 0, named = 0, with_fn = 0;
    std::set<std::string> inside;  // its binaries the host does not have
    std::map<std::string, int64_t> roots;  // of the incomplete stacks
    for (const Sample& s : samples) {
      if (s.service != service) continue;
      total += s.count;
      named += s.container == w.name ? s.count : 0;
      if (s.interval < kJudgedFrom) continue;
      judged += s.count;
      complete += Complete(s, root_dir) ? s.count : 0;
      bool fn = false;
      for (const auto& f : s.frames) {
        fn |= f.file.find(w.program) != std::string::npos;
        if (f.mapping.find(w.mapping) != std::string::npos && !std::filesystem::exists(f.mapping)) inside.insert(f.mapping);
      }
      with_fn += fn ? s.count : 0;
      if (!Complete(s, root_dir) && !s.frames.empty()) roots[s.frames.back().function + " in " + s.frames.back().mapping] += s.count;
    }
    std::string other_roots;
    for (const auto& [root, n] : roots) absl::StrAppend(&other_roots, "\n  ", root, " x", n);
    SCOPED_TRACE(service + " " + w.name);
    ASSERT_GT(total, 100) << log;
    EXPECT_EQ(named, total);
    EXPECT_FALSE(inside.empty()) << "no frame in a " << w.mapping << " the host does not have";
    ASSERT_GT(judged, 50);
    EXPECT_GT(with_fn * 10, judged * 9) << "frames of " << w.program;
    EXPECT_GE(complete * 100, judged * 90) << complete << " of " << judged << "; the others end at" << other_roots;
    testing::PrintFigure(w.mapping + "_container_samples", total);
    testing::PrintFigure(w.mapping + "_container_complete_share", double(complete) / judged);

    // The Collector's resource and stacks are the agent's own.
    const std::string summary = Fold(otelcol_, "--summary");
    EXPECT_NE(summary.find(absl::StrCat("\"container.name\": \"", w.name, "\"")), std::string::npos) << summary;
    // The runtime's full id (--cgroup-labels), as k8sattributes matches it.
    EXPECT_NE(summary.find(absl::StrCat("\"container.id\": \"", w.id, "\"")), std::string::npos) << summary;
    EXPECT_EQ(Fold(otelcol_, "--folded " + service), Folded(samples, service));
    // Pyroscope's series carries both labels, with every sample.
    const double want_ns = double(total) * (1e9 / 99);
    double ticks = -1;
    for (int i = 0; i < 20 && ticks < want_ns * 0.999; ++i) {
      ticks = PyroscopeTicks(pyroscope_, absl::StrCat("%7Bservice_name%3D%22container%2F", w.id.substr(0, 12),
                                                      "%22%2Ccontainer_name%3D%22", w.name, "%22%7D"));
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
    EXPECT_NEAR(ticks, want_ns, want_ns * 0.001);
  }
  // The host's fio: its own service, no container.
  int64_t fio_total = 0, fio_named = 0;
  for (const Sample& s : samples) {
    if (s.service != "fio") continue;
    fio_total += s.count;
    fio_named += s.container.empty() ? 0 : s.count;
  }
  EXPECT_GT(fio_total, 50);
  EXPECT_EQ(fio_named, 0);
  testing::PrintFigure("host_fio_samples", fio_total);
}

}  // namespace
}  // namespace ehprof
