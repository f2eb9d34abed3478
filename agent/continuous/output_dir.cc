#include "agent/continuous/output_dir.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "agent/output/output_pprof.h"
#include "base/exclusive_file.h"
#include "base/output_target.h"
#include "base/scoped_handle.h"

namespace ehprof {
namespace {

constexpr char kPrefix[] = "ehprof-";
constexpr char kSuffix[] = ".pb.gz";

}  // namespace

absl::StatusOr<OutputDir> OutputDir::Open(std::string dir, size_t keep) {
  if (absl::Status s = MakeOwnDirectory(dir, "--output-dir"); !s.ok()) return s;
  return OutputDir(std::move(dir), keep);
}

std::vector<std::string> OutputDir::Files() const {
  std::vector<std::string> out;
  if (ScopedHandle<DIR, closedir> d{::opendir(dir_.c_str())}) {
    while (dirent* e = ::readdir(d.get())) {
      if (!absl::StartsWith(e->d_name, kPrefix) || !absl::EndsWith(e->d_name, kSuffix)) continue;
      // Only files this agent could have written: in a directory others
      // can write, their files and links are neither counted nor removed.
      struct stat st;
      if (::fstatat(::dirfd(d.get()), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode) ||
          st.st_uid != ::geteuid()) {
        continue;
      }
      out.push_back(absl::StrCat(dir_, "/", e->d_name));
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

absl::Status OutputDir::Write(const IntervalOutput& interval) {
  // Timer samples in one file, --off-cpu time (another sample type) in a
  // second one beside it, named ...off_cpu.pb.gz.
  std::vector<uint32_t> cpu, off;
  for (const auto& [service, samples] : interval.by_service) {
    for (uint32_t i : samples) (interval.profile.samples[i].off_cpu ? off : cpu).push_back(i);
  }
  const absl::Time start = absl::FromUnixNanos(static_cast<int64_t>(interval.start_unix_ns));
  const std::string base = absl::StrCat(
      dir_, "/", kPrefix, absl::FormatTime("%Y%m%dT%H%M%E3SZ", start, absl::UTCTimeZone()), "-", seq_++);
  PprofOptions po;
  po.frequency_hz = interval.frequency_hz;
  po.time_nanos = static_cast<int64_t>(interval.start_unix_ns);
  po.duration_nanos = static_cast<int64_t>(interval.duration_ns);
  po.build_ids = interval.build_ids;
  // Room first: on a full disk the oldest files make way for the newest
  // (removing them after a failed write would leave the disk full for ever).
  Rotate(off.empty() ? 1 : 2);
  if (absl::Status s = WriteFile(interval.profile, cpu, absl::StrCat(base, kSuffix), po); !s.ok()) return s;
  if (!off.empty()) {
    po.ns_type = "off_cpu";
    if (absl::Status s = WriteFile(interval.profile, off, absl::StrCat(base, ".off_cpu", kSuffix), po); !s.ok()) return s;
  }
  return absl::OkStatus();
}

void OutputDir::Rotate(size_t coming) {
  std::vector<std::string> files = Files();
  const size_t room = keep_ > coming ? keep_ - coming : 0;
  for (size_t i = 0; i + room < files.size(); ++i) ::unlink(files[i].c_str());
}

absl::Status OutputDir::WriteFile(const InternedProfile& profile, const std::vector<uint32_t>& samples,
                                  const std::string& name,
                                  const PprofOptions& po) {
  // Made exclusively under an unpredictable name, 0600: nothing another
  // user put in the directory is followed or written. On any failure the
  // temporary file goes with `tmp`.
  absl::StatusOr<ExclusiveFile> tmp = ExclusiveFile::Create(absl::StrCat(dir_, "/.tmp-", kPrefix));
  if (!tmp.ok()) return tmp.status();
  if (absl::Status s = WritePprof(profile, samples, tmp->stream(), po); !s.ok()) return s;
  return tmp->Commit(name);
}

}  // namespace ehprof
