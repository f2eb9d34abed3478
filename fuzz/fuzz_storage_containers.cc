// libFuzzer target: text through ParseStorageContainers
// (agent/continuous/storage_containers.h).
//
// Input: the text of containers/storage's containers.json. Seeds:
// testdata/seeds/storage_containers (podman 4.3's, from a real run). Every
// container it gives has an id of 64 lowercase hex digits and a name of at
// most kMaxNameBytes that starts with a letter or digit, whatever the text.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "agent/continuous/storage_containers.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto containers = ehprof::ParseStorageContainers(std::string_view(reinterpret_cast<const char*>(data), size));
  if (!containers.ok()) return 0;
  for (const ehprof::StorageContainer& c : *containers) {
    if (c.id.size() != 64 || c.name.empty() || c.name.size() > ehprof::kMaxNameBytes) std::abort();
    for (char ch : c.id) {
      if (!((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f'))) std::abort();
    }
    const char first = c.name[0];
    if (!((first >= '0' && first <= '9') || (first >= 'a' && first <= 'z') || (first >= 'A' && first <= 'Z'))) {
      std::abort();
    }
  }
  return 0;
}
