// Itanium C++ ABI demangling for display; symbol tables keep raw names.
#ifndef EHPROF_SYMBOLIZER_DEMANGLE_H_
#define EHPROF_SYMBOLIZER_DEMANGLE_H_

#include <string>

namespace ehprof {

// "_ZN3foo3barEv" -> "foo::bar()"; a "@plt" suffix is kept. Anything that
// is not a mangled C++ name, or fails to demangle, is returned unchanged.
std::string Demangle(const std::string& name);

}  // namespace ehprof

#endif  // EHPROF_SYMBOLIZER_DEMANGLE_H_
