#include "agent/continuous/container_names.h"

#include <sys/stat.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "agent/continuous/storage_containers.h"
#include "base/fd_io.h"
#include "base/untrusted_file.h"

namespace ehprof {
namespace {

constexpr size_t kShortId = 12;
constexpr char kPrefix[] = "container/";

}  // namespace

absl::Status ContainerNames::Refresh() {
  if (path_.empty()) return absl::OkStatus();
  auto fd = OpenUntrustedFile(path_, LinkPolicy::kNoFollow, kMaxStorageFileBytes);
  if (!fd.ok()) {
    // No runtime on this host (or none started a container yet).
    if (absl::IsNotFound(fd.status())) {
      names_.clear();
      size_ = -1;
      return absl::OkStatus();
    }
    return fd.status();
  }
  struct stat st;
  if (fstat(fd->get(), &st) != 0) return absl::ErrnoToStatus(errno, absl::StrCat("fstat ", path_));
  if (st.st_uid != owner_ || (st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    names_.clear();
    return absl::PermissionDeniedError(absl::StrCat(
        path_, " is owned by uid ", st.st_uid, " or writable by others: its container names are not used"));
  }
  const long mtime_ns = st.st_mtim.tv_sec * 1000000000L + st.st_mtim.tv_nsec;
  if (st.st_dev == dev_ && st.st_ino == ino_ && st.st_size == size_ && mtime_ns == mtime_ns_) {
    return absl::OkStatus();
  }
  std::string text(static_cast<size_t>(st.st_size), '\0');
  const ssize_t n = ReadFull(fd->get(), text.data(), text.size());
  if (n < 0) return absl::ErrnoToStatus(errno, absl::StrCat("read ", path_));
  text.resize(static_cast<size_t>(n));
  auto containers = ParseStorageContainers(text);
  if (!containers.ok()) {
    names_.clear();
    return absl::InvalidArgumentError(absl::StrCat(path_, ": ", containers.status().message()));
  }
  names_.clear();
  for (const StorageContainer& c : *containers) {
    auto [it, fresh] = names_.try_emplace(c.id.substr(0, kShortId), c.name);
    if (!fresh) it->second.clear();  // two containers, one short id
  }
  dev_ = st.st_dev;
  ino_ = st.st_ino;
  size_ = st.st_size;
  mtime_ns_ = mtime_ns;
  return absl::OkStatus();
}

std::string ContainerNames::Of(const std::string& service) const {
  if (!absl::StartsWith(service, kPrefix)) return "";
  auto it = names_.find(service.substr(sizeof(kPrefix) - 1));
  return it == names_.end() ? "" : it->second;
}

}  // namespace ehprof
