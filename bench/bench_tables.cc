// Table build time per binary, and lookup speed in the compact table
// against a plain binary search over the uncompressed rows (the peer).
#include <benchmark/benchmark.h>

#include <random>
#include <string>
#include <vector>

#include "unwind_tables/compact_table.h"
#include "unwind_tables/table_builder.h"

namespace ehprof {
namespace {

const std::vector<std::string>& Binaries() {
  static const std::vector<std::string> kFiles = {
      "/usr/bin/fio", "/usr/lib/x86_64-linux-gnu/libc.so.6", "/usr/bin/python3.11",
      "/usr/lib/x86_64-linux-gnu/libLLVM-15.so.1"};
  return kFiles;
}

void BM_BuildTable(benchmark::State& state) {
  const std::string& path = Binaries()[state.range(0)];
  state.SetLabel(path);
  size_t rows = 0, bytes = 0;
  for (auto _ : state) {
    auto t = BuildUnwindTableFromPath(path);
    if (!t.ok()) {
      state.SkipWithError(std::string(t.status().message()).c_str());
      return;
    }
    auto c = EncodeCompactTable(t->rows, path);
    rows = t->rows.size();
    bytes = c->bytes();
    benchmark::DoNotOptimize(c->rules.data());
  }
  state.counters["rows"] = rows;
  state.counters["bytes_per_row"] = double(bytes) / rows;
  state.counters["rows_per_s"] = benchmark::Counter(rows, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_BuildTable)->DenseRange(0, 3)->Unit(benchmark::kMillisecond);

struct LlvmTable {
  std::vector<UnwindRow> rows;
  CompactTable compact;
  std::vector<uint64_t> pcs;  // random, inside the table
};

const LlvmTable& Llvm() {
  static const LlvmTable* t = [] {
    auto* out = new LlvmTable;
    auto built = BuildUnwindTableFromPath(Binaries()[3]);
    if (!built.ok()) return out;
    out->rows = std::move(built->rows);
    out->compact = *EncodeCompactTable(out->rows, Binaries()[3]);
    std::mt19937_64 rng(1);
    std::uniform_int_distribution<uint64_t> d(out->compact.start, out->compact.end - 1);
    out->pcs.resize(1 << 20);
    for (uint64_t& pc : out->pcs) pc = d(rng);
    return out;
  }();
  return *t;
}

void BM_LookupCompact(benchmark::State& state) {
  const LlvmTable& t = Llvm();
  if (t.pcs.empty()) return state.SkipWithError("libLLVM-15 not available");
  size_t i = 0;
  for (auto _ : state) {
    ehp_rule r = CompactLookup(t.compact, t.pcs[i++ & (t.pcs.size() - 1)]);
    benchmark::DoNotOptimize(r);
  }
  state.counters["bytes_per_row"] = double(t.compact.bytes()) / t.rows.size();
  state.counters["table_bytes"] = t.compact.bytes();
}
BENCHMARK(BM_LookupCompact)->Repetitions(5);

void BM_LookupPlainRows(benchmark::State& state) {
  const LlvmTable& t = Llvm();
  if (t.pcs.empty()) return state.SkipWithError("libLLVM-15 not available");
  size_t i = 0;
  for (auto _ : state) {
    UnwindRule r = LookupPlainRow(t.rows, t.pcs[i++ & (t.pcs.size() - 1)]);
    benchmark::DoNotOptimize(r);
  }
  state.counters["bytes_per_row"] = double(sizeof(UnwindRow));
}
BENCHMARK(BM_LookupPlainRows)->Repetitions(5);

}  // namespace
}  // namespace ehprof

BENCHMARK_MAIN();
