// The BPF ring buffer of the events map as an EventSource; libbpf's ring
// buffer stays behind this, out of the recorder.
#ifndef EHPROF_AGENT_SESSION_RING_BUFFER_SOURCE_H_
#define EHPROF_AGENT_SESSION_RING_BUFFER_SOURCE_H_

#include <memory>

#include "absl/status/statusor.h"
#include "agent/sampling/event_source.h"

namespace ehprof {

// map_fd: the session's events map (it keeps the fd). Internal, with the
// reason, when libbpf cannot set the ring buffer up.
absl::StatusOr<std::unique_ptr<EventSource>> OpenRingBuffer(int map_fd, EventSource::Handler handler);

}  // namespace ehprof

#endif  // EHPROF_AGENT_SESSION_RING_BUFFER_SOURCE_H_
