// Where a recording's events come from, as the recorder's loop polls them:
// the BPF ring buffer of the events map (agent/session/ring_buffer_source.h)
// or a file of events recorded before (agent/record/recorded_events.h), so a
// test replays a file through the same decoder and handler.
#ifndef EHPROF_AGENT_SAMPLING_EVENT_SOURCE_H_
#define EHPROF_AGENT_SAMPLING_EVENT_SOURCE_H_

#include <cstddef>
#include <functional>

namespace ehprof {

class EventSource {
 public:
  using Handler = std::function<void(const void* data, size_t size)>;
  virtual ~EventSource() = default;
  // Hands what has arrived to the handler, waiting up to timeout_ms for
  // it: the number of events, or a negative errno.
  virtual int Poll(int timeout_ms) = 0;
  // Hands all that is left without waiting.
  virtual void Drain() = 0;
};

}  // namespace ehprof

#endif  // EHPROF_AGENT_SAMPLING_EVENT_SOURCE_H_
