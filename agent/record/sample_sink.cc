#include "agent/record/sample_sink.h"

#include <utility>

namespace ehprof {

void SampleList::Add(RawSample&& s, const ProcessTracker& tracker) {
  (void)tracker;  // resolved after the recording
  if (aggregate_) {
    StackKey key;
    key.pid = s.pid;
    key.tid = s.tid;
    key.image = exec_gen_[s.pid];
    key.comm = stacks_.String(s.comm);
    key.flags = s.flags;
    key.stop = s.stop_reason;
    key.fp_stop = s.fp_stop_reason;
    key.n_kernel = static_cast<uint16_t>(s.kernel.size());
    key.n_user = static_cast<uint16_t>(s.user.size());
    key.frames.reserve(s.kernel.size() + s.user.size() + s.user_fp.size());
    for (const auto* part : {&s.kernel, &s.user, &s.user_fp}) {
      for (uint64_t value : *part) key.frames.push_back(stacks_.FrameId(value));
    }
    stacks_.Add(std::move(key), s.off_cpu_ns, s.time_ns, s.cpu);
    return;
  }
  last_sample_on_cpu_[s.cpu] = samples_.size();
  samples_.push_back(std::move(s));
}

void SampleList::ForEach(absl::FunctionRef<void(const RawSample&)> fn) const {
  for (const RawSample& s : samples_) fn(s);
  const Stacks<uint64_t>& st = stacks();
  RawSample s;  // one at a time: nothing held beside the stacks
  for (const auto* kv : st.InOrder()) {
    const StackKey& key = kv->first;
    const StackValue& value = kv->second;
    s.pid = key.pid;
    s.tid = key.tid;
    s.cpu = value.first_cpu;
    s.time_ns = value.first_time_ns;
    s.comm = st.strings[key.comm];
    s.flags = key.flags;
    s.stop_reason = key.stop;
    s.fp_stop_reason = key.fp_stop;
    s.count = value.count;
    s.off_cpu_ns = value.weight_ns;
    const auto values = [&](absl::Span<const uint32_t> ids, std::vector<uint64_t>* out) {
      out->clear();
      for (uint32_t id : ids) out->push_back(st.frames[id]);
    };
    values(key.kernel(), &s.kernel);
    values(key.user(), &s.user);
    values(key.user_fp(), &s.user_fp);
    fn(s);
  }
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
