#ifndef EHPROF_AGENT_CLI_RECORD_SUMMARY_H_
#define EHPROF_AGENT_CLI_RECORD_SUMMARY_H_

#include <string>

#include "agent/record/recorder.h"

namespace ehprof {

// The summary of a finished recording written to `output`, on stderr.
void PrintSummary(const Recorder& rec, const std::string& output);

}  // namespace ehprof

#endif  // EHPROF_AGENT_CLI_RECORD_SUMMARY_H_
