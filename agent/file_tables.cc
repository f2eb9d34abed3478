#include "agent/file_tables.h"

#include <elf.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "unwind_tables/table_builder.h"

namespace ehprof {

FileTables::FileTables(TableStore* store) : store_(store) {
  worker_ = std::thread([this] { WorkerLoop(); });
}

FileTables::~FileTables() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  worker_.join();
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
  if (files_.count(key)) return key;
  auto elf = image.empty() ? ElfFile::Open(open_path)
                           : ElfFile::FromBytes(display_path, std::vector<uint8_t>(image));
  FileInfo info;
  info.path = display_path;
  if (!elf.ok()) {
    info.state = FileInfo::State::kFailed;
    info.error = std::string(elf.status().message());
    files_.emplace(key, std::move(info));
    return key;
  }
  info.build_id = elf->BuildId();
  for (const ElfSegment& s : elf->segments()) {
    if (s.type == PT_LOAD) info.loads.push_back(s);
  }
  files_.emplace(key, std::move(info));
  {
    std::lock_guard<std::mutex> lock(mu_);
    jobs_.push_back({key, open_path, display_path, std::move(image)});
  }
  cv_.notify_one();
  return key;
}

const FileInfo* FileTables::Find(const FileKey& key) const {
  auto it = files_.find(key);
  return it == files_.end() ? nullptr : &it->second;
}

void FileTables::AddRef(const FileKey& key) {
  auto it = files_.find(key);
  if (it != files_.end()) ++it->second.refs;
}

void FileTables::Release(const FileKey& key) {
  auto it = files_.find(key);
  if (it == files_.end() || it->second.refs == 0) return;
  if (--it->second.refs > 0) return;
  if (it->second.state == FileInfo::State::kReady) {
    store_->Unload(it->second.table_id);
    // Forget it: a process mapping the file again rebuilds it; a file
    // replaced on disk has a new key anyway.
    files_.erase(it);
  }
}

void FileTables::WorkerLoop() {
  for (;;) {
    Job job;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stop_ || !jobs_.empty(); });
      if (stop_) return;
      job = std::move(jobs_.front());
      jobs_.pop_front();
      ++in_flight_;
    }
    Done done{job.key, absl::UnknownError("not built")};
    auto elf = job.image.empty() ? ElfFile::Open(job.open_path)
                                 : ElfFile::FromBytes(job.name, std::move(job.image));
    if (!elf.ok()) {
      done.table = elf.status();
    } else {
      auto table = BuildUnwindTable(*elf);
      if (!table.ok()) {
        done.table = table.status();
      } else {
        done.rows = table->rows.size();
        done.table = EncodeCompactTable(table->rows, job.name);
      }
    }
    std::lock_guard<std::mutex> lock(mu_);
    done_.push_back(std::move(done));
    --in_flight_;
  }
}

std::vector<FileKey> FileTables::CollectFinished() {
  std::vector<Done> done;
  {
    std::lock_guard<std::mutex> lock(mu_);
    done.swap(done_);
  }
  std::vector<FileKey> ready;
  for (Done& d : done) {
    auto it = files_.find(d.key);
    if (it == files_.end()) continue;
    FileInfo& f = it->second;
    if (f.refs == 0) {
      files_.erase(it);  // every process using it went away meanwhile
      continue;
    }
    if (!d.table.ok()) {
      f.state = FileInfo::State::kFailed;
      f.error = std::string(d.table.status().message());
      warnings_.push_back(absl::StrCat("no unwind table for ", f.path, ": ", f.error,
                                       " (frame pointers used there)"));
      ready.push_back(d.key);
      continue;
    }
    auto id = store_->Load(*d.table, f.path);
    if (!id.ok()) {
      f.state = FileInfo::State::kNoSpace;
      f.error = std::string(id.status().message());
      warnings_.push_back(f.error);
      ready.push_back(d.key);
      continue;
    }
    f.state = FileInfo::State::kReady;
    f.table_id = *id;
    f.rows = d.rows;
    f.table_bytes = d.table->bytes();
    ready.push_back(d.key);
  }
  return ready;
}

std::vector<std::string> FileTables::TakeWarnings() {
  std::vector<std::string> out;
  out.swap(warnings_);
  return out;
}

size_t FileTables::pending() const {
  std::lock_guard<std::mutex> lock(mu_);
  return jobs_.size() + in_flight_ + done_.size();
}

}  // namespace ehprof
