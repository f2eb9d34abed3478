#include "agent/record/sample_sink.h"

#include <utility>

namespace ehprof {

void SampleList::Add(RawSample&& s, const ProcessTracker& tracker) {
  (void)tracker;  // resolved after the recording
  if (aggregate_) {
    Key key{s.pid, s.tid, exec_gen_[s.pid], s.flags, s.stop_reason, s.fp_stop_reason,
            s.comm, s.kernel, s.user, s.user_fp};
    auto [it, inserted] = index_.try_emplace(std::move(key), samples_.size());
    if (!inserted) {
      ++samples_[it->second].count;
      samples_[it->second].off_cpu_ns += s.off_cpu_ns;
      return;
    }
  }
  last_sample_on_cpu_[s.cpu] = samples_.size();
  samples_.push_back(std::move(s));
}

void SampleList::AddCapture(const ehp_event& header, VerifyCapture&& c) {
  auto it = last_sample_on_cpu_.find(header.cpu);
  if (it == last_sample_on_cpu_.end()) return;
  const RawSample& s = samples_[it->second];
  if (s.time_ns != header.time_ns || s.tid != header.tid) return;
  c.sample = it->second;
  captures_.push_back(std::move(c));
}

}  // namespace ehprof
