// The headers most of ehprof's C++ files include, parsed once per target
// when EHPROF_PCH is on (cmake/pch.cmake; scripts/demo.sh's build from
// nothing). Each file still includes what it uses: the builds CI runs go
// without precompiled headers, so a missing include is still an error there.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
