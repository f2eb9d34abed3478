// One owner for every C library handle: ScopedHandle<Dwfl, dwfl_end> is a
// std::unique_ptr whose deleter calls the library's release function, so
// each handle type needs no deleter struct of its own.
#ifndef EHPROF_BASE_SCOPED_HANDLE_H_
#define EHPROF_BASE_SCOPED_HANDLE_H_

#include <cstdlib>
#include <memory>

namespace ehprof {

// Calls Release(p) for a non-null p; the return value (elf_end's count,
// closedir's status) is of no use when the owner goes away.
template <auto Release>
struct ReleaseWith {
  template <typename T>
  void operator()(T* p) const {
    if (p != nullptr) Release(p);
  }
};

template <typename T, auto Release>
using ScopedHandle = std::unique_ptr<T, ReleaseWith<Release>>;

// Memory the C library malloc'ed for the caller (demangled names,
// dwarf_getscopes arrays).
inline void FreeMemory(void* p) { std::free(p); }
template <typename T>
using MallocPtr = ScopedHandle<T, FreeMemory>;

}  // namespace ehprof

#endif  // EHPROF_BASE_SCOPED_HANDLE_H_
