// Decompresses the .xz stream of a MiniDebugInfo (.gnu_debugdata) section.
#ifndef EHPROF_SYMBOLIZER_XZ_DECOMPRESS_H_
#define EHPROF_SYMBOLIZER_XZ_DECOMPRESS_H_

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace ehprof {

// MiniDebugInfo (.gnu_debugdata) holds only a symbol table: the largest
// real ones expand to a few MB. A section that expands past this is not
// one, and must not take the agent's memory (its unit allows 512 MB).
inline constexpr uint64_t kMaxXzOutputBytes = uint64_t{64} << 20;

// The input is untrusted: output beyond `max_output` bytes is an error
// rather than a way to exhaust memory, and so is a stream whose decoder
// would need more than xz's largest preset (a dictionary it claims is
// allocated before a byte is decoded). `name` is used in messages.
absl::StatusOr<std::vector<uint8_t>> XzDecompress(
    const std::string& name, std::span<const uint8_t> input,
    uint64_t max_output = kMaxXzOutputBytes);

}  // namespace ehprof

#endif  // EHPROF_SYMBOLIZER_XZ_DECOMPRESS_H_
