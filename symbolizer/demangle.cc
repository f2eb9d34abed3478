#include "symbolizer/demangle.h"

#include <cxxabi.h>

#include <cstdlib>
#include <memory>
#include <string_view>

#include "base/scoped_handle.h"

namespace ehprof {

std::string Demangle(const std::string& name) {
  // __cxa_demangle also accepts bare types ("f" -> "float", "i" -> "int"),
  // so only names with the mangling prefix are tried.
  if (name.size() < 3 || name.compare(0, 2, "_Z") != 0) return name;
  static constexpr std::string_view kPlt = "@plt";
  std::string_view view = name;
  std::string_view suffix;
  if (view.size() > kPlt.size() && view.ends_with(kPlt)) {
    suffix = kPlt;
    view.remove_suffix(kPlt.size());
  }
  std::string base(view);
  int status = 0;
  MallocPtr<char> out(
      abi::__cxa_demangle(base.c_str(), nullptr, nullptr, &status));
  if (status != 0 || !out) return name;
  return std::string(out.get()) + std::string(suffix);
}

}  // namespace ehprof
