#include "agent/session/ring_buffer_source.h"

#include <bpf/libbpf.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/scoped_handle.h"

namespace ehprof {
namespace {

class RingBufferSource : public EventSource {
 public:
  explicit RingBufferSource(Handler handler) : handler_(std::move(handler)) {}
  absl::Status Open(int map_fd) {
    rb_.reset(ring_buffer__new(map_fd, &RingBufferSource::OnEvent, this, nullptr));
    if (rb_ == nullptr) return absl::InternalError(absl::StrCat("ring buffer: ", std::strerror(errno)));
    return absl::OkStatus();
  }
  int Poll(int timeout_ms) override {
    const int n = ring_buffer__poll(rb_.get(), timeout_ms);
    // Samples do not wake us (bpf/stacks.bpf.h: sample_wakeup) until the
    // ring is a quarter full: take what arrived since, every round.
    if (n >= 0 || n == -EINTR) ring_buffer__consume(rb_.get());
    return n;
  }
  void Drain() override { ring_buffer__consume(rb_.get()); }

 private:
  static int OnEvent(void* ctx, void* data, size_t size) {
    static_cast<RingBufferSource*>(ctx)->handler_(data, size);
    return 0;
  }
  Handler handler_;
  // libbpf calls OnEvent with `this`: the source does not move once open.
  ScopedHandle<ring_buffer, ring_buffer__free> rb_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<EventSource>> OpenRingBuffer(int map_fd, EventSource::Handler handler) {
  auto s = std::make_unique<RingBufferSource>(std::move(handler));
  if (absl::Status st = s->Open(map_fd); !st.ok()) return st;
  return s;
}

}  // namespace ehprof
