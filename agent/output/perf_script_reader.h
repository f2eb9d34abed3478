// Reads what WritePerfScript (and `perf script -F comm,tid,ip,sym,dso`)
// prints back into samples, so two dumps can be compared offline.
#ifndef EHPROF_AGENT_OUTPUT_PERF_SCRIPT_READER_H_
#define EHPROF_AGENT_OUTPUT_PERF_SCRIPT_READER_H_

#include <istream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "agent/resolve/resolved_sample.h"

namespace ehprof {

// Frames whose dso reads "inlined" become inlined frames; kernel frames are
// recognised by their [kernel...]/module dso or a kernel address. Dumps
// written with --srcline (a "  file:line" line under each frame) are not
// read: they are an error naming the line.
absl::StatusOr<std::vector<ResolvedSample>> ReadPerfScript(std::istream& in,
                                                           const std::string& name);

}  // namespace ehprof

#endif  // EHPROF_AGENT_OUTPUT_PERF_SCRIPT_READER_H_
