// The vDSO image (the same for every process on the machine) as a file the
// symbolizers can open: an anonymous memfd, named /proc/self/fd/N while this
// object lives. Not a file in /tmp: a predictable name there could be
// replaced by another user between write and read.
#ifndef EHPROF_AGENT_PROCESS_VDSO_FILE_H_
#define EHPROF_AGENT_PROCESS_VDSO_FILE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "base/unique_fd.h"

namespace ehprof {

// The calling process's vDSO image (the same for every process on the
// machine), or empty.
std::vector<uint8_t> ReadOwnVdso();

class VdsoFile {
 public:
  // Empty path() when there is no image or the memfd cannot be written.
  explicit VdsoFile(const std::vector<uint8_t>& image);
  const std::string& path() const { return path_; }

 private:
  UniqueFd fd_;
  std::string path_;
};

}  // namespace ehprof

#endif  // EHPROF_AGENT_PROCESS_VDSO_FILE_H_
