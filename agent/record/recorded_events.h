// A file of events recorded before (each a u32 length in host order, then
// the record's bytes, as the ring buffer handed it over) as an EventSource
// (agent/sampling/event_source.h), and its writer: a test replays a file
// through the decoder and handler the ring buffer's events go through.
#ifndef EHPROF_AGENT_RECORD_RECORDED_EVENTS_H_
#define EHPROF_AGENT_RECORD_RECORDED_EVENTS_H_

#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "agent/sampling/event_source.h"
#include "base/unique_fd.h"

namespace ehprof {

// A file of recorded events, read up to `per_poll` events a poll.
class RecordedEventSource : public EventSource {
 public:
  static absl::StatusOr<std::unique_ptr<RecordedEventSource>> Open(const std::string& path, Handler handler,
                                                                    size_t per_poll = 64);
  int Poll(int timeout_ms) override;
  void Drain() override;
  // What was wrong with the file, if reading it stopped early (a
  // truncated record: the events before it were handed over).
  const absl::Status& status() const { return status_; }
  bool done() const { return done_; }

 private:
  RecordedEventSource(UniqueFd fd, Handler handler, size_t per_poll, std::string path)
      : fd_(std::move(fd)), handler_(std::move(handler)), per_poll_(per_poll), path_(std::move(path)) {}
  bool Next();  // one event to the handler; false at the end or on an error
  UniqueFd fd_;
  Handler handler_;
  size_t per_poll_;
  std::string path_;
  absl::Status status_;
  bool done_ = false;
};

// Appends events to such a file.
class EventFileWriter {
 public:
  static absl::StatusOr<EventFileWriter> Create(const std::string& path);
  absl::Status Write(const void* data, size_t size);

 private:
  EventFileWriter(UniqueFd fd, std::string path) : fd_(std::move(fd)), path_(std::move(path)) {}
  UniqueFd fd_;
  std::string path_;
};

}  // namespace ehprof

#endif  // EHPROF_AGENT_RECORD_RECORDED_EVENTS_H_
