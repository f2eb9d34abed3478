#include "agent/session/bpf_session.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/perf_event.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "agent/session/capabilities.h"
#include "agent/session/kernel_features.h"
#include "agent/session/tail_walk.h"
// The skeleton declares libbpf's usdt.bpf.h kconfig extern as C's _Bool.
#define _Bool bool
#include "profiler.skel.h"
#undef _Bool

namespace ehprof {

void DestroyLink(bpf_link* l) { bpf_link__destroy(l); }
void DestroySkeleton(ehprof_bpf* s) { ehprof_bpf__destroy(s); }

std::vector<int> OnlineCpus() {
  std::vector<int> cpus;
  std::ifstream f("/sys/devices/system/cpu/online");
  std::string text;
  std::getline(f, text);
  for (absl::string_view range : absl::StrSplit(text, ',', absl::SkipEmpty())) {
    std::vector<std::string> ends = absl::StrSplit(range, '-');
    int lo = 0, hi = 0;
    if (!absl::SimpleAtoi(ends[0], &lo)) continue;
    hi = lo;
    if (ends.size() > 1 && !absl::SimpleAtoi(ends[1], &hi)) continue;
    for (int c = lo; c <= hi; ++c) cpus.push_back(c);
  }
  if (cpus.empty()) {
    for (long c = 0; c < sysconf(_SC_NPROCESSORS_ONLN); ++c) cpus.push_back(static_cast<int>(c));
  }
  return cpus;
}

namespace {

std::string Errno(int err) { return std::strerror(err < 0 ? -err : err); }

// While the programs load, libbpf's messages still go to stderr (its log is
// what a user sends with a bug report) and the lines that say why a load
// failed are kept, so the error can name the cause.
class LibbpfLog {
 public:
  LibbpfLog() {
    lines_ = &kept_;
    previous_ = libbpf_set_print(&LibbpfLog::Print);
  }
  ~LibbpfLog() {
    libbpf_set_print(previous_);
    lines_ = nullptr;
  }
  LibbpfLog(const LibbpfLog&) = delete;
  LibbpfLog& operator=(const LibbpfLog&) = delete;

  // The first kept line containing needle, without libbpf's prefix.
  std::string Find(const char* needle) const {
    for (const std::string& l : kept_) {
      if (l.find(needle) != std::string::npos) return l;
    }
    return "";
  }

 private:
  static int Print(libbpf_print_level level, const char* fmt, va_list args) {
    if (level == LIBBPF_DEBUG) return 0;
    va_list copy;
    va_copy(copy, args);
    char buf[1024];
    std::vsnprintf(buf, sizeof(buf), fmt, copy);
    va_end(copy);
    if (lines_ && lines_->size() < 256) {
      std::string line(buf);
      while (!line.empty() && line.back() == '\n') line.pop_back();
      if (line.rfind("libbpf: ", 0) == 0) line.erase(0, 8);
      lines_->push_back(std::move(line));
    }
    return std::vfprintf(stderr, fmt, args);
  }

  static inline std::vector<std::string>* lines_ = nullptr;
  std::vector<std::string> kept_;
  libbpf_print_fn_t previous_ = nullptr;
};

// Why ehprof_bpf__load failed, from what libbpf said: a CO-RE relocation
// that does not fit this kernel's types is ehprof's bug, a verifier
// rejection names the program; neither is "the kernel lacks a feature"
// (those are probed before loading).
absl::Status LoadError(int err, const LibbpfLog& log) {
  std::string kernel = KernelRelease();
  if (std::string relo = log.Find("relo #"); !relo.empty() || !log.Find("CO-RE").empty()) {
    if (relo.empty()) relo = log.Find("CO-RE");
    return absl::InternalError(absl::StrCat(
        "loading the BPF programs: a CO-RE relocation does not fit this kernel's types (", relo,
        "): ehprof reads a kernel field whose type differs on ", kernel,
        "; this is a bug in ehprof, please report it with this message"));
  }
  if (std::string failed = log.Find("BPF program load failed"); !failed.empty()) {
    return absl::InternalError(absl::StrCat(
        "loading the BPF programs: the verifier of kernel ", kernel, " rejected them (", failed,
        "; its log is printed above): please report it with that log"));
  }
  return absl::InternalError(absl::StrCat("loading the BPF programs on kernel ", kernel, ": ",
                                          Errno(err), " (libbpf's messages are above)"));
}

// The skeleton's own open (ehprof_bpf__open_opts) with another object's
// bytes (which must outlive it): maps and programs are bound by name, so a
// build of the same source against another kernel's vmlinux.h fits, and so
// does the tail-call build (tail_walk.h); anything else fails to open.
absl::StatusOr<ehprof_bpf*> OpenObjectBytes(std::string_view bytes, const std::string& what) {
  auto* obj = static_cast<ehprof_bpf*>(calloc(1, sizeof(ehprof_bpf)));
  if (!obj) return absl::ResourceExhaustedError("out of memory opening the BPF object");
  int err = ehprof_bpf__create_skeleton(obj);
  if (!err) {
    obj->skeleton->data = bytes.data();
    obj->skeleton->data_sz = bytes.size();
    err = bpf_object__open_skeleton(obj->skeleton, nullptr);
  }
  if (err) {
    ehprof_bpf__destroy(obj);
    char why[128];
    libbpf_strerror(err, why, sizeof(why));
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": not a build of ehprof's BPF programs (", why, ")"));
  }
  return obj;
}

absl::StatusOr<ehprof_bpf*> OpenObjectFile(const std::string& path, std::string& bytes) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return absl::NotFoundError(absl::StrCat(path, ": cannot open the BPF object"));
  std::ostringstream all;
  all << f.rdbuf();
  bytes = all.str();
  return OpenObjectBytes(bytes, path);
}


}  // namespace

absl::Status BpfSession::Open(const SessionOptions& o, bool tail_calls) {
  if (!o.bpf_object_path.empty()) {
    absl::StatusOr<ehprof_bpf*> skel = OpenObjectFile(o.bpf_object_path, object_bytes_);
    if (!skel.ok()) return skel.status();
    skel_.reset(*skel);
    if (tail_calls && !IsTailCallBuild(skel_->obj)) {
      return absl::FailedPreconditionError(absl::StrCat(
          o.bpf_object_path, " is the bpf_loop build; this kernel (", KernelRelease(),
          ") needs the tail-call build (profiler.bpf.c compiled with -DEHP_COMPAT)"));
    }
  } else if (tail_calls) {
    absl::StatusOr<std::string_view> bytes = TailCallObjectBytes();
    if (!bytes.ok()) return bytes.status();
    absl::StatusOr<ehprof_bpf*> skel = OpenObjectBytes(*bytes, "the built-in tail-call build");
    if (!skel.ok()) return skel.status();
    skel_.reset(*skel);
  } else {
    skel_.reset(ehprof_bpf__open());
  }
  if (!skel_) return PermissionHint(errno, "opening the BPF object");
  skel_->rodata->cfg = o.config;
  // Each walking program costs the verifier ~50 ms: load only those this
  // session attaches (all of them for `ehprof check`'s statistics).
  if (!o.verifier_stats) {
    auto wants = [&](std::initializer_list<ProbeSpec::Kind> kinds) {
      for (const ProbeSpec& p : o.probes) {
        if (std::find(kinds.begin(), kinds.end(), p.kind) != kinds.end()) return true;
      }
      return false;
    };
    using K = ProbeSpec::Kind;
    bpf_program__set_autoload(skel_->progs.ehprof_sample, o.sample_cpu);
    bpf_program__set_autoload(skel_->progs.ehprof_switch, o.off_cpu);
    // The syscall tracepoint where tracefs can be read, else the raw
    // sys_exit one (which runs at every system call).
    const bool via_tracefs = o.learn_mmap && MmapTracepointReachable();
    bpf_program__set_autoload(skel_->progs.ehprof_mmap, via_tracefs);
    bpf_program__set_autoload(skel_->progs.ehprof_mmap_raw, o.learn_mmap && !via_tracefs);
    bpf_program__set_autoload(skel_->progs.ehprof_uprobe, wants({K::kUprobe, K::kUretprobe}));
    bpf_program__set_autoload(skel_->progs.ehprof_usdt, wants({K::kUsdt}));
    bpf_program__set_autoload(skel_->progs.ehprof_tracepoint, wants({K::kTracepoint}));
    bpf_program__set_autoload(skel_->progs.ehprof_kprobe, wants({K::kKprobe}));
  }
  SetTailWalkAutoload(skel_->obj);
  return absl::OkStatus();
}

absl::Status BpfSession::SizeMaps(const SessionOptions& o) {
  ehprof_bpf* skel = skel_.get();
  const MapSizes& z = o.sizes;
  const uint32_t verify_slots =
      o.config.verify_every ? static_cast<uint32_t>(std::max(1, libbpf_num_possible_cpus())) : 1u;
  const uint32_t deferred_slots =
      o.config.deferred_rate ? static_cast<uint32_t>(std::max(1, libbpf_num_possible_cpus())) : 1u;
  const uint32_t offcpu_threads = o.off_cpu ? EHP_OFFCPU_THREADS : 1u;
  uint32_t procs = z.procs;
  if (NeedsPreallocatedHashMaps()) {
    // The sampler (a perf_event program) looks processes up.
    procs = std::min(procs, kPreallocatedProcs);
    if (int err = bpf_map__set_map_flags(skel->maps.procs,
                                         bpf_map__map_flags(skel->maps.procs) & ~BPF_F_NO_PREALLOC)) {
      return absl::InternalError(absl::StrCat("preallocating BPF map procs: ", Errno(err)));
    }
  }
  struct {
    bpf_map* map;
    uint32_t entries;
  } sizes[] = {{skel->maps.tables, z.tables},      {skel->maps.pages, z.pages},
               {skel->maps.buckets, z.pages},      {skel->maps.rows, z.row_chunks},
               {skel->maps.palettes, z.palette_words}, {skel->maps.rules, z.rules},
               {skel->maps.procs, procs},        {skel->maps.events, z.ringbuf_bytes},
               {skel->maps.file_tables, z.tables},
               {skel->maps.verify_scratch, verify_slots},
               {skel->maps.deferred_scratch, deferred_slots},
               {skel->maps.offcpu_tasks, offcpu_threads}};
  for (auto& s : sizes) {
    if (int err = bpf_map__set_max_entries(s.map, s.entries)) {
      return absl::InternalError(absl::StrCat("sizing BPF map ", bpf_map__name(s.map), ": ",
                                              Errno(err)));
    }
  }
  return absl::OkStatus();
}

void BpfSession::KeepVerifierLogs() {
  constexpr size_t kLogSize = 64 * 1024;
  bpf_program* prog;
  bpf_object__for_each_program(prog, skel_->obj) {
    auto buf = std::make_unique<char[]>(kLogSize);
    buf[0] = 0;
    bpf_program__set_log_level(prog, 4);  // BPF_LOG_STATS: the summary only
    bpf_program__set_log_buf(prog, buf.get(), kLogSize);
    log_bufs_.push_back(std::move(buf));
  }
}

void BpfSession::PrintVerifierLogTails() const {
  constexpr size_t kTail = 3000;
  size_t i = 0;
  bpf_program* prog;
  bpf_object__for_each_program(prog, skel_->obj) {
    if (i >= log_bufs_.size()) break;
    std::string log(log_bufs_[i++].get());
    if (log.empty()) continue;
    if (log.size() > kTail) log = "..." + log.substr(log.size() - kTail);
    std::fprintf(stderr, "verifier log of %s (end):\n%s\n", bpf_program__name(prog), log.c_str());
  }
}

void BpfSession::ReadVerifierLogs() {
  size_t i = 0;
  bpf_program* prog;
  bpf_object__for_each_program(prog, skel_->obj) {
    ProgramInfo info;
    info.name = bpf_program__name(prog);
    const char* log = log_bufs_[i++].get();
    auto num = [&](const char* key) -> uint64_t {
      const char* at = std::strstr(log, key);
      return at ? std::strtoull(at + std::strlen(key), nullptr, 10) : 0;
    };
    info.processed_insns = num("processed ");
    info.total_states = num("total_states ");
    info.peak_states = num("peak_states ");
    info.verification_us = num("verification time ");
    bpf_prog_info pi{};
    uint32_t len = sizeof(pi);
    if (bpf_obj_get_info_by_fd(bpf_program__fd(prog), &pi, &len) == 0) {
      info.xlated_bytes = pi.xlated_prog_len;
      info.jited_bytes = pi.jited_prog_len;
    }
    verifier_.push_back(std::move(info));
  }
}

absl::StatusOr<std::unique_ptr<BpfSession>> BpfSession::Start(const SessionOptions& o) {
  auto session = std::unique_ptr<BpfSession>(new BpfSession());
  if (std::string missing = MissingBpfCapabilities(); !missing.empty()) {
    return absl::PermissionDeniedError(absl::StrCat("cannot load the BPF programs: ", missing));
  }
  libbpf_set_strict_mode(LIBBPF_STRICT_ALL);
  const std::vector<KernelFeature> features = ProbeKernelFeatures();
  if (absl::Status s = CheckKernelFeatures(features); !s.ok()) return s;
  LibbpfLog log;
  if (absl::Status s = session->Open(o, NeedsTailCallBuild(features)); !s.ok()) return s;
  if (absl::Status s = session->SizeMaps(o); !s.ok()) return s;
  if (o.verifier_stats) session->KeepVerifierLogs();
  if (int err = ehprof_bpf__load(session->skel_.get())) {
    // With our own log buffers libbpf prints no verifier log: say its end.
    if (o.verifier_stats) session->PrintVerifierLogTails();
    if (geteuid() == 0 && err != -EPERM && err != EPERM) return LoadError(err, log);
    return PermissionHint(err, "loading the BPF programs");
  }
  if (o.verifier_stats) session->ReadVerifierLogs();
  if (absl::Status s = FillTailWalkArrays(session->skel_->obj); !s.ok()) return s;
  const auto& m = session->skel_->maps;
  session->maps_ = MapFds{.procs = bpf_map__fd(m.procs),
                          .targets = bpf_map__fd(m.targets),
                          .tables = bpf_map__fd(m.tables),
                          .pages = bpf_map__fd(m.pages),
                          .buckets = bpf_map__fd(m.buckets),
                          .rows = bpf_map__fd(m.rows),
                          .palettes = bpf_map__fd(m.palettes),
                          .rules = bpf_map__fd(m.rules),
                          .events = bpf_map__fd(m.events),
                          .stats = bpf_map__fd(m.stats),
                          .file_tables = bpf_map__fd(m.file_tables)};
  session->maps_.py_procs = bpf_map__fd(m.py_procs);
  session->maps_.jvm_procs = bpf_map__fd(m.jvm_procs);
  session->maps_.v8_procs = bpf_map__fd(m.v8_procs);
  // Found by name: a runtime's walk declares its map, and a build without
  // that walk has none.
  for (ehp_interp_kind kind : {EHP_INTERP_RUBY, EHP_INTERP_PHP, EHP_INTERP_PERL}) {
    if (const bpf_map* map = bpf_object__find_map_by_name(session->skel_->obj, InterpProcsMapName(kind))) {
      session->maps_.interp_procs[kind] = bpf_map__fd(map);
      session->maps_.interp_value_size[kind] = bpf_map__value_size(map);
    }
  }
  if (absl::Status s = session->AttachLifecycle(); !s.ok()) return s;
  session->AttachMmapLearning();
  const uint8_t on = 1;
  for (uint32_t cpu : o.cpus) {
    if (cpu >= EHP_MAX_FILTER_CPUS ||
        bpf_map_update_elem(bpf_map__fd(session->skel_->maps.cpu_filter), &cpu, &on, BPF_ANY) != 0) {
      return absl::InvalidArgumentError(absl::StrCat("-C: CPU ", cpu, " cannot be filtered on (at most ",
                                                     EHP_MAX_FILTER_CPUS - 1, ")"));
    }
  }
  if (o.off_cpu) {
    if (absl::Status s = session->AttachOffCpu(); !s.ok()) return s;
  }
  for (const ProbeSpec& p : o.probes) {
    if (absl::Status s = session->AttachProbe(p); !s.ok()) return s;
  }
  if (o.sample_cpu) {
    if (absl::Status s = session->AttachSampler(o); !s.ok()) return s;
  }
  return session;
}

BpfSession::~BpfSession() {
  links_.clear();
  skel_.reset();
}

std::vector<BpfSession::ProgramInfo> BpfSession::Programs() const { return verifier_; }

BpfSession::ProgStats BpfSession::SampleProgStats() const {
  bpf_prog_info info{};
  uint32_t len = sizeof(info);
  ProgStats out;
  if (bpf_obj_get_info_by_fd(bpf_program__fd(skel_->progs.ehprof_sample), &info, &len) == 0) {
    out.run_time_ns = info.run_time_ns;
    out.run_cnt = info.run_cnt;
  }
  return out;
}

}  // namespace ehprof
