// The containers a container runtime on containers/storage (podman, CRI-O)
// keeps in STORAGE/overlay-containers/containers.json, the one place that
// names them outside the runtime's own database: a JSON array of objects
// whose "id" is the full container id and whose "names" are the names the
// runtime gave it (`podman run --name`).
//
// The file is root's, but what is in it came from whoever started the
// containers, so it is read as hostile: bounded in size, nesting, string
// length and count; ids must be 64 lowercase hex digits and names what
// podman itself accepts ([a-zA-Z0-9][a-zA-Z0-9_.-]*, at most kMaxNameBytes),
// anything else is left out rather than shown.
#ifndef EHPROF_AGENT_CONTINUOUS_STORAGE_CONTAINERS_H_
#define EHPROF_AGENT_CONTINUOUS_STORAGE_CONTAINERS_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace ehprof {

struct StorageContainer {
  std::string id;    // 64 lowercase hex digits
  std::string name;  // the first of its names that passes the rule
};

inline constexpr size_t kMaxNameBytes = 128;
inline constexpr size_t kMaxStorageContainers = 100000;
inline constexpr size_t kMaxStorageFileBytes = size_t{64} << 20;

// The containers of a containers.json text; an error naming the byte
// offset where the text stops being JSON of that shape. Entries whose id or
// names break the rules are skipped.
absl::StatusOr<std::vector<StorageContainer>> ParseStorageContainers(std::string_view json);

}  // namespace ehprof

#endif  // EHPROF_AGENT_CONTINUOUS_STORAGE_CONTAINERS_H_
