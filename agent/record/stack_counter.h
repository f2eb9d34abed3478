// The one engine both `ehprof record` (SampleList, aggregated) and `ehprof
// agent` (StackAggregator, per interval) keep samples with: each distinct
// stack once with its count, frames interned (each distinct frame once, a
// stack a list of 4-byte ids), strings once. What counts as "the same
// stack" is one key type, StackKey; each caller fills the parts it keys by
// (record: the thread and its image, flags and stop reasons; the agent: the
// service and whether the time was off the CPU) and leaves the rest zero.
// The frame type is the caller's: record keeps the BPF walk's values
// (runtime addresses and EHP_FRAME_* bits), the agent frames located in
// their mapping when the sample arrived (LocatedFrame).
#ifndef EHPROF_AGENT_RECORD_STACK_COUNTER_H_
#define EHPROF_AGENT_RECORD_STACK_COUNTER_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/types/span.h"
#include "bpf/ehprof_abi.h"

namespace ehprof {

struct StackKey {
  uint32_t pid = 0, tid = 0;  // record: the thread
  uint32_t image = 0;         // record: its process's execs and exits so far
  uint32_t service = 0;       // the agent: the service's string id
  uint32_t comm = 0;          // string id
  uint32_t flags = 0;         // EHP_SAMPLE_* (EHP_SAMPLE_OFF_CPU: blocked time)
  uint8_t stop = 0, fp_stop = 0;  // the walks' stop reasons
  // frames: n_kernel kernel frames, n_user of the user walk, then the
  // frame-pointer walk's (--unwinder both); leaf first in each.
  uint16_t n_kernel = 0, n_user = 0;
  std::vector<uint32_t> frames;  // frame ids

  bool off_cpu() const { return (flags & EHP_SAMPLE_OFF_CPU) != 0; }
  absl::Span<const uint32_t> kernel() const { return absl::MakeConstSpan(frames).subspan(0, n_kernel); }
  absl::Span<const uint32_t> user() const { return absl::MakeConstSpan(frames).subspan(n_kernel, n_user); }
  absl::Span<const uint32_t> user_fp() const { return absl::MakeConstSpan(frames).subspan(n_kernel + n_user); }
  bool operator==(const StackKey&) const = default;
  template <typename H>
  friend H AbslHashValue(H h, const StackKey& k) {
    return H::combine(std::move(h), k.pid, k.tid, k.image, k.service, k.comm, k.flags, k.stop, k.fp_stop,
                      k.n_kernel, k.n_user, k.frames);
  }
};

struct StackValue {
  uint64_t count = 0;
  uint64_t weight_ns = 0;       // off-CPU: nanoseconds blocked, summed
  uint64_t first_time_ns = 0;   // the first sample's time and CPU
  uint32_t first_cpu = 0;
  uint32_t order = 0;           // the stack's place in arrival order
};

// What a StackCounter kept: its strings, frames and stacks.
template <typename Frame>
struct Stacks {
  std::vector<std::string> strings;
  std::vector<Frame> frames;
  absl::flat_hash_map<StackKey, StackValue> counts;
  uint64_t dropped = 0;  // samples of new stacks past the cap

  // Its heap, estimated from its contents.
  uint64_t Bytes() const {
    uint64_t n = strings.capacity() * sizeof(std::string) + frames.capacity() * sizeof(Frame) +
                 counts.capacity() * (sizeof(std::pair<const StackKey, StackValue>) + 1);
    for (const std::string& s : strings) n += s.capacity() > 15 ? s.capacity() + 1 : 0;
    for (const auto& [key, value] : counts) n += key.frames.capacity() * sizeof(uint32_t);
    return n;
  }
  // The stacks in the order they first arrived.
  std::vector<const std::pair<const StackKey, StackValue>*> InOrder() const {
    std::vector<const std::pair<const StackKey, StackValue>*> out(counts.size());
    for (const auto& kv : counts) out[kv.second.order] = &kv;
    return out;
  }
};

template <typename Frame>
class StackCounter {
 public:
  // At most max_stacks distinct stacks; a sample of a new stack past that
  // is counted as dropped (a bound on memory whatever the workload).
  explicit StackCounter(size_t max_stacks = SIZE_MAX) : max_stacks_(max_stacks) {}

  uint32_t String(const std::string& s) {
    auto [it, inserted] = string_ids_.try_emplace(s, static_cast<uint32_t>(cur_.strings.size()));
    if (inserted) cur_.strings.push_back(s);
    return it->second;
  }
  uint32_t FrameId(const Frame& f) {
    auto [it, inserted] = frame_ids_.try_emplace(f, static_cast<uint32_t>(cur_.frames.size()));
    if (inserted) cur_.frames.push_back(f);
    return it->second;
  }
  // One sample of `key` (its frames' ids from FrameId, its strings'
  // from String). False: a new stack past the cap, dropped.
  bool Add(StackKey&& key, uint64_t weight_ns, uint64_t time_ns, uint32_t cpu) {
    auto it = cur_.counts.find(key);
    if (it != cur_.counts.end()) {
      ++it->second.count;
      it->second.weight_ns += weight_ns;
      return true;
    }
    if (cur_.counts.size() >= max_stacks_) {
      ++cur_.dropped;
      return false;
    }
    const auto order = static_cast<uint32_t>(cur_.counts.size());
    cur_.counts.emplace(std::move(key), StackValue{1, weight_ns, time_ns, cpu, order});
    return true;
  }
  const Stacks<Frame>& stacks() const { return cur_; }
  // What was kept; the counter starts empty again.
  Stacks<Frame> Take() {
    Stacks<Frame> out = std::move(cur_);
    cur_ = Stacks<Frame>();
    string_ids_.clear();
    frame_ids_.clear();
    return out;
  }

 private:
  size_t max_stacks_;
  Stacks<Frame> cur_;
  absl::flat_hash_map<std::string, uint32_t> string_ids_;
  absl::flat_hash_map<Frame, uint32_t> frame_ids_;
};

}  // namespace ehprof

#endif  // EHPROF_AGENT_RECORD_STACK_COUNTER_H_
