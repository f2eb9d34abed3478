#include "agent/process/vdso_file.h"

#include <sys/auxv.h>
#include <sys/mman.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "agent/process/proc_maps.h"
#include "base/fd_io.h"

namespace ehprof {

std::vector<uint8_t> ReadOwnVdso() {
  const uint64_t base = getauxval(AT_SYSINFO_EHDR);
  if (!base) return {};
  auto maps = ReadProcMaps(static_cast<int>(getpid()));
  if (!maps.ok()) return {};
  for (const MapsEntry& e : *maps) {
    if (e.start == base && e.path == "[vdso]") {
      const auto* p = reinterpret_cast<const uint8_t*>(base);
      return std::vector<uint8_t>(p, p + (e.end - e.start));
    }
  }
  return {};
}


VdsoFile::VdsoFile(const std::vector<uint8_t>& image) {
  if (image.empty()) return;
  UniqueFd fd(::memfd_create("ehprof-vdso", MFD_CLOEXEC));
  if (!fd.valid()) return;
  if (!WriteFull(fd.get(), image.data(), image.size())) return;
  path_ = absl::StrCat("/proc/self/fd/", fd.get());
  fd_ = std::move(fd);
}

}  // namespace ehprof
