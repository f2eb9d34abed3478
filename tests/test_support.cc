#include "tests/test_support.h"

#include <fcntl.h>
#include <gelf.h>
#include <unistd.h>

namespace ehprof::testing {

std::string TestdataPath(const std::string& name) {
  return std::string(EHPROF_TESTDATA_DIR) + "/" + name;
}
std::string SourcePath(const std::string& rel) {
  return std::string(EHPROF_SOURCE_DIR) + "/" + rel;
}
std::string EhprofBinary() { return EHPROF_BINARY; }

std::optional<SymbolRange> FindSymbol(const std::string& path, const std::string& name) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  elf_version(EV_CURRENT);
  Elf* e = elf_begin(fd, ELF_C_READ, nullptr);
  std::optional<SymbolRange> found;
  for (Elf_Scn* scn = e ? elf_nextscn(e, nullptr) : nullptr; scn && !found;
       scn = elf_nextscn(e, scn)) {
    GElf_Shdr sh;
    if (!gelf_getshdr(scn, &sh) || (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM)) {
      continue;
    }
    Elf_Data* d = elf_getdata(scn, nullptr);
    for (size_t i = 0; d && sh.sh_entsize && i < sh.sh_size / sh.sh_entsize; ++i) {
      GElf_Sym sym;
      if (!gelf_getsym(d, static_cast<int>(i), &sym)) continue;
      const char* n = elf_strptr(e, sh.sh_link, sym.st_name);
      if (n && name == n && GELF_ST_TYPE(sym.st_info) == STT_FUNC) {
        found = SymbolRange{sym.st_value, sym.st_size};
        break;
      }
    }
  }
  if (e) elf_end(e);
  ::close(fd);
  return found;
}

}  // namespace ehprof::testing
