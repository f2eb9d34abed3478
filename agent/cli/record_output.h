// What `ehprof record` does after sampling: symbolize the recording, write
// the profile (and the FP-vs-CFI and --verify reports), print the summary.
#ifndef EHPROF_AGENT_CLI_RECORD_OUTPUT_H_
#define EHPROF_AGENT_CLI_RECORD_OUTPUT_H_

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "agent/output/stack_view.h"
#include "agent/record/recorder.h"
#include "base/output_target.h"

namespace ehprof {

// One -o: a file and the format written to it.
struct OutputFile {
  std::string path;
  std::string format;  // an OutputFormats() name: svg, folded, perf-script, pprof, text
};

struct RecordOutput {
  // Every -o, all written from the one symbolization of the recording.
  std::vector<OutputFile> files = {{"ehprof.folded", "folded"}};
  mode_t mode = 0600;
  bool fp_walk = false;  // write the frame-pointer walk (--unwinder both)
  bool show_stops = false;  // an incomplete walk's stop reason as its outermost frame
  bool demangle = true;
  // The compressed DWARF all files may expand to at once, in MB (0: a
  // quarter of the machine's memory, at least 256 MB).
  uint64_t max_dwarf_mb = 0;
  bool srcline = false;
  bool folded_annotate = false;  // _[k] _[i] _[j] in folded names
  // The frames every -o shows (--view): the reports (--compare, --diff-
  // folded, --verify) compare walks and keep every frame.
  StackView view = StackView::kFull;
  std::string compare_path;  // FP-vs-CFI report
  std::string diff_path;     // "stack FP CFI" lines
  std::string verify_path;   // --verify report; empty: stderr
  std::string captures_dir;  // --save-captures: the --verify captures as files
  std::string event;         // as -e named it
  bool clock_event = true;   // the event counts nanoseconds
  uint64_t frequency_hz = 99;
  bool off_cpu = false;  // values are nanoseconds off the CPU
  bool wall = false;     // on-CPU and off-CPU nanoseconds per thread
  // Counted events: probe hits ("uprobe", "usdt", ...) or a counter event
  // ("cycles") with its period (-c; 0: frequency mode, period unknown).
  std::string probe_type;
  uint64_t sample_period = 0;
  std::string target;  // what was profiled, for the SVG's title: "CMD ARGS", "-p 12", "-a"
};

// Whether a format sums samples by stack (folded, svg, pprof: not
// OutputFormat::per_sample), so the recorder can keep them aggregated
// instead of one by one.
bool SumsSamples(const std::string& format);

// Every file a recording writes, opened before sampling starts.
struct RecordTargets {
  std::vector<OutputTarget> files;  // one for each RecordOutput::files, in order
  std::optional<OutputTarget> compare, diff, verify;
};

// Opens every -o and report file and makes the --save-captures directory:
// a path that cannot be written is said before anything is sampled. The
// error names the path and why.
absl::StatusOr<RecordTargets> OpenRecordTargets(const RecordOutput& out);

// Symbolizes and writes what rec collected to every target, whatever ended
// the recording. A profile whose write fails (disk full) goes to a file of
// its own in /tmp, one whose rename fails stays in its temporary file (said
// either way: never lose a recording to a bad -o), and the other files are
// still written. Returns the command's exit code given whether the
// recording itself succeeded.
int WriteRecording(const Recorder& rec, const RecordOutput& out, RecordTargets targets, bool recorded_ok);

}  // namespace ehprof

#endif  // EHPROF_AGENT_CLI_RECORD_OUTPUT_H_
