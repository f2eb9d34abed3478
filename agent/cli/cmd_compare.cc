// `ehprof compare CFI.txt FP.txt`: the frame-pointer walk against the CFI
// walk of the same samples, from the two perf-script dumps of one
// `ehprof record --unwinder both` run (the second written with --fp-walk).
#include <cstdio>
#include <fstream>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "agent/cli/cli.h"
#include "agent/output/perf_script_reader.h"
#include "agent/verify/walk_compare.h"
#include "base/output_target.h"

namespace ehprof {
namespace {

constexpr char kDescription[] = R"(Compares the frame-pointer walk with the CFI walk of the same samples: the
share of samples where they agree, where FP is shorter, where FP is wrong
(frames that are not call sites), per binary and per function. The inputs are
the perf-script dumps of one `ehprof record --unwinder both` run, written
once as is and once with --fp-walk (`ehprof record --unwinder both --compare
FILE` writes the same report directly).
)";

absl::StatusOr<std::vector<ResolvedSample>> Load(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open ", path));
  return ReadPerfScript(in, path);
}

}  // namespace

int RunCompareCommand(const std::vector<std::string>& args) {
  std::vector<std::string> files;
  std::string diff;
  auto app = NewCommandApp("compare", kDescription);
  app->add_option("--diff-folded", diff,
                  "also write \"stack FP_COUNT CFI_COUNT\" lines, which FlameGraph's flamegraph.pl "
                  "draws as a differential graph")
      ->type_name("FILE");
  app->add_option("DUMPS", files, "CFI.txt FP.txt: the two perf-script dumps")->type_name("")->expected(2)->required();
  if (auto exit = ParseCommandLine(*app, args)) return *exit;
  // CLI11 2.1 lets a positional of two take one.
  if (files.size() != 2) return UsageError("compare", "takes two perf-script dumps: CFI.txt FP.txt");
  auto cfi = Load(files[0]);
  auto fp = Load(files[1]);
  for (const auto* r : {&cfi, &fp}) {
    if (!r->ok()) {
      std::fprintf(stderr, "ehprof compare: %s\n", std::string(r->status().message()).c_str());
      return kExitFailure;
    }
  }
  if (cfi->size() != fp->size()) {
    std::fprintf(stderr, "ehprof compare: the dumps hold %zu and %zu samples: not the same recording\n",
                 cfi->size(), fp->size());
    return kExitFailure;
  }
  // Opened before the report is printed: a --diff that cannot be written
  // is said first.
  std::optional<OutputTarget> out;
  if (!diff.empty()) {
    absl::StatusOr<OutputTarget> t = OutputTarget::Open(diff);
    if (!t.ok()) {
      std::fprintf(stderr, "ehprof compare: %s\n", std::string(t.status().message()).c_str());
      return kExitFailure;
    }
    out.emplace(*std::move(t));
  }
  CallSiteChecker checker;
  WriteComparisonReport(CompareWalks(*cfi, *fp, checker), std::cout);
  if (out) {
    absl::Status st = WriteDiffFolded(*cfi, *fp, out->stream());
    if (st.ok()) st = out->Commit();
    if (!st.ok()) {
      std::fprintf(stderr, "ehprof compare: %s\n", std::string(st.message()).c_str());
      return kExitFailure;
    }
  }
  return kExitOk;
}

}  // namespace ehprof
