#include "agent/tables/file_tables.h"

#include <elf.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "base/guarded.h"
#include "unwind_tables/build_compact_table.h"

namespace ehprof {

FileTables::FileTables(TableStore* store, Warnings* warnings, std::unique_ptr<TableCache> cache,
                       TableBuildOptions build, size_t builders)
    : store_(store), build_(std::move(build)), cache_(std::move(cache)), warnings_(warnings) {
  for (size_t i = 0; i < std::max<size_t>(1, builders); ++i) workers_.emplace_back([this] { WorkerLoop(); });
}

FileTables::~FileTables() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  for (std::thread& w : workers_) w.join();
}

absl::StatusOr<FileKey> FileTables::Register(const std::string& open_path,
                                             const std::string& display_path,
                                             std::vector<uint8_t> image) {
  FileKey key;
  if (image.empty()) {
    struct stat st;
    if (::stat(open_path.c_str(), &st) != 0) {
      return absl::NotFoundError(absl::StrCat(open_path, ": ", std::strerror(errno)));
    }
    key = {static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino),
           static_cast<uint64_t>(st.st_size),
           int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec};
  } else {
    // In-memory images (the vDSO) are keyed by their size and a hash.
    uint64_t h = 1469598103934665603ull;
    for (uint8_t b : image) h = (h ^ b) * 1099511628211ull;
    key = {~uint64_t{0}, h, image.size(), 0};
  }
  if (auto it = files_.find(key); it != files_.end()) {
    if (it->second.refs == 0 && it->second.state == FileInfo::State::kReady) ++stats_.reused;
    // The path it was first opened by may be closed by now (a kept fd of
    // the process tracker's): a retry reads it by the newest.
    if (image.empty()) it->second.open_path = open_path;
    return key;
  }
  auto elf = image.empty() ? ElfFile::Open(open_path)
                           : ElfFile::FromBytes(display_path, std::vector<uint8_t>(image));
  FileInfo info;
  info.path = display_path;
  if (!elf.ok()) {
    info.state = FileInfo::State::kFailed;
    info.error = std::string(elf.status().message());
    // No process holds it yet: idle until one does (AddRef takes it out).
    idle_.push_front(key);
    info.unused = idle_.begin();
    info.unused_since = now_();
    files_.emplace(key, std::move(info));
    return key;
  }
  info.build_id = elf->BuildId();
  info.entry = elf->entry();
  for (const ElfSegment& s : elf->segments()) {
    if (s.type == PT_LOAD) info.loads.push_back(s);
  }
  info.open_path = open_path;
  info.image = std::move(image);
  Queue(key, files_.emplace(key, std::move(info)).first->second, std::move(*elf));
  return key;
}

void FileTables::Queue(const FileKey& key, const FileInfo& info, std::optional<ElfFile> elf) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    jobs_.push_back({key, info.open_path, info.path, info.build_id, info.image, std::move(elf)});
    priority_.emplace(key, 0);
  }
  cv_.notify_one();
}

const FileInfo* FileTables::Find(const FileKey& key) const {
  auto it = files_.find(key);
  return it == files_.end() ? nullptr : &it->second;
}

void FileTables::AddRef(const FileKey& key) {
  auto it = files_.find(key);
  if (it == files_.end()) return;
  FileInfo& f = it->second;
  if (f.state == FileInfo::State::kPending) Prioritize(key, 1);
  if (f.refs++ > 0) return;
  if (f.state == FileInfo::State::kReady) unused_.erase(f.unused);
  if (f.state == FileInfo::State::kFailed || f.state == FileInfo::State::kNoCfi) idle_.erase(f.unused);
}

void FileTables::Release(const FileKey& key) {
  auto it = files_.find(key);
  if (it == files_.end() || it->second.refs == 0) return;
  FileInfo& f = it->second;
  if (--f.refs > 0) return;
  if (f.state == FileInfo::State::kPending) {
    // Built anyway (the next process running it finds it ready, and a
    // sample held for it is finished with it), unless builds queue up:
    // then one no process waits for is dropped. A stream of distinct
    // short-lived binaries would otherwise queue builds faster than they
    // are made, each holding its file open.
    if (DropQueuedBuild(key)) Forget(it);  // else parked when its build ends
    return;
  }
  Park(it);
}

void FileTables::Park(std::map<FileKey, FileInfo>::iterator it) {
  FileInfo& f = it->second;
  switch (f.state) {
    case FileInfo::State::kReady:
      // Kept loaded: the same binary often runs again soon (shells,
      // build steps). Room is made by evicting from the back.
      unused_.push_front(it->first);
      f.unused = unused_.begin();
      f.unused_since = now_();
      retry_no_space_ = true;
      break;
    case FileInfo::State::kNoSpace:
      Forget(it);  // the next process mapping it tries again
      break;
    case FileInfo::State::kFailed:
    case FileInfo::State::kNoCfi:
      // Remembered for a while, as a ready table is: no build again for
      // the next process mapping it.
      idle_.push_front(it->first);
      f.unused = idle_.begin();
      f.unused_since = now_();
      break;
    case FileInfo::State::kPending:
      break;
  }
}

void FileTables::Prioritize(const FileKey& key, uint64_t weight) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = priority_.find(key);
  if (it == priority_.end()) return;
  if (weight >= kUrgent && it->second < kUrgent) ++hurried_;
  it->second += weight;
}

std::deque<FileTables::Job>::iterator FileTables::NextJob() {
  auto best = jobs_.begin();
  uint64_t best_priority = 0;
  for (auto it = jobs_.begin(); it != jobs_.end(); ++it) {
    auto p = priority_.find(it->key);
    const uint64_t priority = p == priority_.end() ? 0 : p->second;
    if (priority > best_priority) {
      best = it;
      best_priority = priority;
    }
  }
  return best;
}

bool FileTables::DropQueuedBuild(const FileKey& key) {
  std::lock_guard<std::mutex> lock(mu_);
  if (jobs_.size() < kBusyQueue) return false;
  // A sample waits for it (kUrgent): its walk is finished late with it.
  if (auto p = priority_.find(key); p != priority_.end() && p->second >= kUrgent) return false;
  auto job = std::find_if(jobs_.begin(), jobs_.end(), [&](const Job& j) { return j.key == key; });
  if (job == jobs_.end()) return false;  // being built
  jobs_.erase(job);
  priority_.erase(key);
  ++dropped_builds_;
  return true;
}

void FileTables::Forget(std::map<FileKey, FileInfo>::iterator it) {
  if (on_unload_) on_unload_(it->first);
  files_.erase(it);
}

bool FileTables::EvictOne() {
  if (unused_.empty()) return false;
  auto it = files_.find(unused_.back());
  unused_.pop_back();
  if (it != files_.end()) {
    if (on_unload_) on_unload_(it->first);
    if (absl::Status s = store_->Unload(it->second.table_id); !s.ok()) {
      warnings_->Add(absl::StrCat(it->second.path, ": ", s.message()));
    }
    files_.erase(it);
  }
  return true;
}

FileTables::Stats FileTables::stats() const {
  Stats s = stats_;
  {
    std::lock_guard<std::mutex> lock(mu_);
    s.from_cache = from_cache_;
    s.dropped_builds = dropped_builds_;
    s.hurried = hurried_;
  }
  s.unused = unused_.size();
  s.idle = idle_.size();
  s.files = files_.size();
  return s;
}

void FileTables::HoldBuilds(bool hold) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    held_ = hold;
  }
  cv_.notify_all();
}

void FileTables::WorkerLoop() {
  for (;;) {
    Job job;
    uint64_t taken = 0;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stop_ || (!jobs_.empty() && !held_); });
      if (stop_) return;
      auto next = NextJob();
      job = std::move(*next);
      jobs_.erase(next);
      priority_.erase(job.key);
      ++in_flight_;
      taken = ++taken_;
    }
    // An exception in one file's build fails that file (as an unreadable
    // one would), not the worker.
    Done done{job.key, absl::UnknownError("not built")};
    if (absl::Status st = Guarded("the table builder", "that file's stacks are not unwound", [&] {
          done = Build(job);
          return absl::OkStatus();
        });
        !st.ok()) {
      done.table = std::move(st);
    }
    done.taken = taken;
    std::lock_guard<std::mutex> lock(mu_);
    if (done.from_cache) ++from_cache_;
    done_.push_back(std::move(done));
    --in_flight_;
  }
}

FileTables::Done FileTables::Build(Job& job) {
  Done done{job.key, absl::UnknownError("not built")};
  // In-memory images (the vDSO) have no file identity to key a cache entry.
  const bool cacheable = cache_ && job.image.empty() && job.key.inode != 0;
  const TableFileKey tkey{job.build_id, job.key.inode, job.key.size, job.key.mtime_ns};
  if (cacheable) {
    std::string why;
    std::optional<StoredTable> t;
    {
      std::lock_guard<std::mutex> lock(cache_mu_);
      t = cache_->Load(tkey, &why);
    }
    if (t) {
      done.rows = t->plain_rows;
      done.table = std::move(t->table);
      done.from_cache = true;
      return done;
    }
    if (!why.empty()) {
      std::lock_guard<std::mutex> lock(mu_);
      warnings_->Add(absl::StrCat(why, " (rebuilt)"));
    }
  }
  auto elf = job.elf ? absl::StatusOr<ElfFile>(std::move(*job.elf))
             : job.image.empty() ? ElfFile::Open(job.open_path)
                                 : ElfFile::FromBytes(job.name, std::move(job.image));
  if (!elf.ok()) {
    done.table = elf.status();
    return done;
  }
  // The rows (32 bytes each: 30 MB for libLLVM) are gone before the cache
  // entry is serialized, so the build's peak is the rows or the entry.
  auto built = BuildCompactTable(*elf, build_, job.name);
  if (!built.ok()) {
    done.table = built.status();
    return done;
  }
  if (!built->unwind.refused.empty()) {
    std::lock_guard<std::mutex> lock(mu_);
    for (std::string& r : built->unwind.refused) warnings_->Add(std::move(r));
  }
  done.rows = built->rows;
  done.table = std::move(built->compact);
  if (cacheable && done.table.ok()) {
    absl::Status st;
    {
      std::lock_guard<std::mutex> lock(cache_mu_);
      st = cache_->Store(tkey, {*done.table, done.rows});
    }
    if (!st.ok()) {
      std::lock_guard<std::mutex> lock(mu_);
      warnings_->Add(std::string(st.message()));
    }
  }
  return done;
}

std::vector<FileKey> FileTables::CollectFinished() {
  std::vector<Done> done;
  {
    std::lock_guard<std::mutex> lock(mu_);
    done.swap(done_);
  }
  std::sort(done.begin(), done.end(), [](const Done& a, const Done& b) { return a.taken < b.taken; });
  std::vector<FileKey> ready;
  const auto now = now_();
  stats_.expired += Expire(&unused_, now);
  Expire(&idle_, now);
  if (retry_no_space_ && now - last_retry_ > std::chrono::seconds(2)) {
    // Tables became evictable: files refused for room get another build
    // (not more often than this: a build costs milliseconds).
    retry_no_space_ = false;
    last_retry_ = now;
    for (auto& [key, f] : files_) {
      if (f.state == FileInfo::State::kNoSpace && f.refs > 0) {
        f.state = FileInfo::State::kPending;
        Queue(key, f);
      }
    }
  }
  for (Done& d : done) {
    auto it = files_.find(d.key);
    if (it == files_.end()) continue;
    FileInfo& f = it->second;
    // Every process using it may have gone meanwhile (a compiler that
    // lives 50 ms): it is loaded all the same, and parked, for the next
    // process running it and for that one's samples held for it
    // (agent/deferred/).
    Finish(d, f);
    if (f.refs > 0 || f.state != FileInfo::State::kNoSpace) ready.push_back(d.key);
    if (f.refs == 0) Park(it);
  }
  return ready;
}

void FileTables::Finish(Done& d, FileInfo& f) {
  if (!d.table.ok()) {
    f.state = FileInfo::State::kFailed;
    ++stats_.failed;
    f.error = std::string(d.table.status().message());
    warnings_->Add(absl::StrCat("no unwind table for ", f.path, ": ", f.error, " (frame pointers used there)"));
    return;
  }
  if (d.rows == 0) {
    // Nothing to load: an empty table would stop every walk at its first
    // pc there ("no CFI"), where the frame pointers lead on.
    f.state = FileInfo::State::kNoCfi;
    return;
  }
  auto id = store_->Load(*d.table, f.path);
  while (!id.ok() && absl::IsResourceExhausted(id.status()) && EvictOne()) {
    ++stats_.evicted;
    id = store_->Load(*d.table, f.path);
  }
  if (!id.ok()) {
    f.state = FileInfo::State::kNoSpace;
    f.error = std::string(id.status().message());
    // Said once: with -a a full map refuses many files; the summary
    // counts them.
    if (stats_.no_space++ == 0 || !absl::IsResourceExhausted(id.status())) {
      warnings_->Add(absl::StrCat(f.error, " (files without a table are unwound with frame "
                                           "pointers; raise --table-memory)"));
    }
    return;
  }
  ++stats_.loaded;
  f.image.clear();
  f.image.shrink_to_fit();
  f.state = FileInfo::State::kReady;
  f.table_id = *id;
  f.rows = d.rows;
  f.table_bytes = d.table->bytes();
}

uint64_t FileTables::Expire(std::list<FileKey>* list, std::chrono::steady_clock::time_point now) {
  uint64_t n = 0;
  while (!list->empty()) {
    auto it = files_.find(list->back());
    if (it != files_.end() &&
        now - it->second.unused_since < std::chrono::seconds(kUnusedTableSeconds)) {
      break;
    }
    if (list == &unused_) {
      EvictOne();
    } else {
      list->pop_back();
      if (it != files_.end()) Forget(it);
    }
    ++n;
  }
  return n;
}

size_t FileTables::pending() const {
  std::lock_guard<std::mutex> lock(mu_);
  return jobs_.size() + in_flight_ + done_.size();
}

size_t FileTables::building() const {
  std::lock_guard<std::mutex> lock(mu_);
  return jobs_.size() + in_flight_;
}

}  // namespace ehprof
