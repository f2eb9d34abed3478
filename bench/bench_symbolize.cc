// What `ehprof record` spends symbolizing a recording after it ends:
// ResolveSamples over 100,000 samples of 10 user frames each, addresses in
// this process's own text mappings (libc, libstdc++, this binary), about
// 5,000 distinct (file, address) pairs as in a real profile.
// Cold: a fresh symbolizer per recording (ELF symbols read, libc's DWARF
// found by build-id). Warm: the symbol files already open; the resolver's
// per-(file, address) cache still starts empty, as it does per call.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "agent/process/process_tracker.h"
#include "agent/record/recorder.h"
#include "agent/resolve/profile_resolver.h"
#include "agent/session/bpf_map_writer.h"
#include "agent/tables/file_tables.h"
#include "agent/tables/table_store.h"
#include "bpf/ehprof_abi.h"
#include "symbolizer/debuginfod_client.h"

namespace ehprof {
namespace {

constexpr size_t kSamples = 100000;
constexpr size_t kSites = 5000;
constexpr size_t kFramesPerSample = 10;

uint64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

MapSizes SmallSizes() {
  MapSizes s;
  s.tables = s.pages = s.row_chunks = s.palette_words = s.rules = s.procs = 16;
  return s;
}

// A recording of this process without BPF: MapFds' fds default to -1, so
// table loads and the procs entry fail (warnings, ignored), but the tracker
// still records the mappings, which is all that resolving reads.
struct Recording {
  TableStore store{BpfTableMaps(MapFds{}), SmallSizes()};
  Warnings warnings;
  FileTables files{&store, &warnings};
  ProcessTracker tracker{&files, nullptr, &warnings};
  std::vector<RawSample> samples;
  std::string error;
};

bool IsSampledFile(const std::string& path, const std::string& self) {
  return path == self || path.find("/libc.so") != std::string::npos ||
         path.find("/libstdc++.so") != std::string::npos;
}

Recording* MakeRecording() {
  // Local debug files only: a debuginfod download is a one-time cost its
  // cache absorbs, not the symbolizer's. Set before FileTables starts its
  // worker thread (setenv races with getenv elsewhere).
  unsetenv("DEBUGINFOD_URLS");
  BoundDebuginfodTimeout();
  auto* rec = new Recording;  // leaked: lives for the whole run
  const uint32_t pid = static_cast<uint32_t>(getpid());
  const uint64_t now = NowNs();
  if (absl::Status st = rec->tracker.Refresh(pid, now); !st.ok()) {
    rec->error = std::string(st.message());
    return rec;
  }
  // Table builds run on FileTables' worker; finish them here so they are
  // not in the measured loop.
  while (rec->files.pending() > 0) {
    rec->files.CollectFinished();
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  rec->warnings.Take();

  const std::string self = std::filesystem::read_symlink("/proc/self/exe");
  std::vector<const TrackedMapping*> text;
  for (const TrackedMapping& m : *rec->tracker.MappingsAt(pid, now)) {
    if (IsSampledFile(m.path, self)) text.push_back(&m);
  }
  if (text.size() < 3) {
    rec->error = "libc, libstdc++ or this binary has no executable mapping";
    return rec;
  }
  // An equal share of sites per mapping, so libc's DWARF weighs as much as
  // the symbol-table-only libstdc++ whatever the sizes.
  std::mt19937_64 rng(1);
  std::vector<uint64_t> sites;
  for (size_t i = 0; i < kSites; ++i) {
    const TrackedMapping* m = text[i % text.size()];
    sites.push_back(std::uniform_int_distribution<uint64_t>(m->start, m->end - 1)(rng));
  }
  std::uniform_int_distribution<size_t> pick(0, sites.size() - 1);
  rec->samples.resize(kSamples);
  for (size_t i = 0; i < kSamples; ++i) {
    RawSample& s = rec->samples[i];
    s.pid = s.tid = pid;
    s.time_ns = now + i * 1000;
    s.comm = "bench_symbolize";
    // The leaf is the interrupted pc; above it, return addresses, which the
    // resolver symbolizes at address - 1: site + 1 keeps the distinct
    // pairs at kSites.
    for (size_t f = 0; f < kFramesPerSample; ++f) {
      uint64_t site = sites[pick(rng)];
      s.user.push_back(f == 0 ? site | EHP_FRAME_EXACT : site + 1);
    }
  }
  return rec;
}

const Recording& GetRecording() {
  static const Recording* rec = MakeRecording();
  return *rec;
}

// What the output shows, from the last iteration: a symbolizer that
// quietly named nothing would be fast too.
void Report(benchmark::State& state, const std::vector<ResolvedSample>& out) {
  size_t frames = 0, named = 0, with_line = 0;
  for (const ResolvedSample& s : out) {
    for (const ResolvedFrame& f : s.frames) {
      ++frames;
      named += f.symbol != "[unknown]";
      with_line += f.line != 0;
    }
  }
  state.counters["samples_per_s"] =
      benchmark::Counter(kSamples, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["frames_per_sample"] = double(frames) / kSamples;  // inline expansions included
  state.counters["named_pct"] = frames ? 100.0 * named / frames : 0;
  state.counters["line_pct"] = frames ? 100.0 * with_line / frames : 0;
}

// As record_output.cc sets it up: DWARF first, function names from the
// ELF symbol tables (AddressSymbolizer).
std::vector<ResolvedSample> Resolve(const Recording& rec, AddressSymbolizer& symbols) {
  return ResolveSamples(rec.samples, rec.tracker, symbols, nullptr, ResolveOptions());
}

void BM_ResolveCold(benchmark::State& state) {
  const Recording& rec = GetRecording();
  if (!rec.error.empty()) return state.SkipWithError(rec.error.c_str());
  std::vector<ResolvedSample> out;
  for (auto _ : state) {
    state.PauseTiming();
    out.clear();  // freeing the last output is not symbolizing
    state.ResumeTiming();
    Warnings warnings;
    AddressSymbolizer symbols({}, &warnings);
    out = Resolve(rec, symbols);
    benchmark::DoNotOptimize(out.data());
  }
  Report(state, out);
}
BENCHMARK(BM_ResolveCold)->Iterations(3)->Unit(benchmark::kMillisecond);

void BM_ResolveWarm(benchmark::State& state) {
  const Recording& rec = GetRecording();
  if (!rec.error.empty()) return state.SkipWithError(rec.error.c_str());
  Warnings warnings;
  AddressSymbolizer symbols({}, &warnings);
  // One untimed pass opens the files, fills libdw's lazily built per-CU
  // tables and the address cache (as the agent's next interval finds it).
  std::vector<ResolvedSample> out = Resolve(rec, symbols);
  for (auto _ : state) {
    state.PauseTiming();
    out.clear();
    state.ResumeTiming();
    out = Resolve(rec, symbols);
    benchmark::DoNotOptimize(out.data());
  }
  Report(state, out);
}
BENCHMARK(BM_ResolveWarm)->Iterations(3)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace ehprof

BENCHMARK_MAIN();
