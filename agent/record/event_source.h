// Where a recording's events come from: the BPF ring buffer, or a file of
// events recorded before (each a u32 length in host order, then the
// record's bytes, as the ring buffer handed it over). The recorder's loop
// polls one; a test replays a file through the same decoder and handler.
#ifndef EHPROF_AGENT_RECORD_EVENT_SOURCE_H_
#define EHPROF_AGENT_RECORD_EVENT_SOURCE_H_

#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "base/unique_fd.h"

struct ring_buffer;

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

// The BPF ring buffer of the events map (its fd stays the session's).
class RingBufferSource : public EventSource {
 public:
  static absl::StatusOr<std::unique_ptr<RingBufferSource>> Open(int map_fd, Handler handler);
  ~RingBufferSource() override;
  int Poll(int timeout_ms) override;
  void Drain() override;

 private:
  explicit RingBufferSource(Handler handler) : handler_(std::move(handler)) {}
  static int OnEvent(void* ctx, void* data, size_t size);
  Handler handler_;
  ring_buffer* rb_ = nullptr;
};

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

#endif  // EHPROF_AGENT_RECORD_EVENT_SOURCE_H_
