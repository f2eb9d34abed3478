// What a recording says while it runs: warnings as they happen, once each
// and bounded, the live status line, and the state it keeps.
#include <cstdio>
#include <string>

#include "agent/record/recorder.h"

namespace ehprof {

// Warnings go out as they happen (a long recording should not keep them
// to the end), each distinct one once, and at most kMaxWarnings of them.
void Recorder::ReportWarnings(bool last) {
  constexpr size_t kMaxWarnings = 50;
  for (std::string& w : NewWarnings()) {
    if (warnings_shown_++ < kMaxWarnings) {
      std::fprintf(stderr, "%sehprof: warning: %s\n", options_.live_status ? "\r\033[K" : "", w.c_str());
    } else {
      ++warnings_suppressed_;
    }
  }
  if (last && warnings_suppressed_ > 0) {
    std::fprintf(stderr, "ehprof: warning: %llu further distinct warnings not shown\n",
                 static_cast<unsigned long long>(warnings_suppressed_));
    warnings_suppressed_ = 0;
  }
}

void Recorder::PrintStatus(uint64_t now_ns, bool final_line) {
  if (!options_.live_status) return;
  if (!final_line && now_ns - last_status_ns_ < 1000000000ull) return;
  last_status_ns_ = now_ns;
  const double secs = summary_.seconds > 0 ? summary_.seconds : 1;
  std::fprintf(stderr, "\rehprof: %llu samples, %.0f/s, %.1f%% complete  %s",
               static_cast<unsigned long long>(sample_count_), sample_count_ / secs,
               sample_count_ == 0 ? 0.0 : 100.0 * complete_ / sample_count_,
               final_line ? "\n" : "");
  std::fflush(stderr);
}

TrackedState Recorder::tracked_state() const {
  TrackedState t;
  if (tracker_) {
    t.processes = tracker_->live_count();
    t.remembered = tracker_->history_size();
    t.kept_files = tracker_->kept_files();
  }
  if (kernel_index_) t.kernel_files = kernel_index_->size();
  if (files_) t.tables = files_->stats();
  if (store_) t.store = store_->usage();
  return t;
}

}  // namespace ehprof
