// Decompresses the .xz stream of a MiniDebugInfo (.gnu_debugdata) section.
#ifndef EHPROF_SYMBOLIZER_XZ_DECOMPRESS_H_
#define EHPROF_SYMBOLIZER_XZ_DECOMPRESS_H_

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace ehprof {

// The input is untrusted: output beyond `max_output` bytes is an error
// rather than a way to exhaust memory. `name` is used in messages.
absl::StatusOr<std::vector<uint8_t>> XzDecompress(
    const std::string& name, std::span<const uint8_t> input,
    uint64_t max_output = uint64_t{512} << 20);

}  // namespace ehprof

#endif  // EHPROF_SYMBOLIZER_XZ_DECOMPRESS_H_
