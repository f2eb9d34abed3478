#include "symbolizer/safe_debuginfo.h"

#include <elfutils/libdwelf.h>
#include <gelf.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <optional>

#include "absl/strings/str_cat.h"
#include "base/untrusted_file.h"
#include "elf/debug_file_finder.h"

namespace ehprof {
namespace {

std::string HexBuildId(Dwfl_Module* mod) {
  const unsigned char* bits = nullptr;
  GElf_Addr vaddr = 0;
  const int n = dwfl_module_build_id(mod, &bits, &vaddr);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  for (int i = 0; i < n; ++i) {
    hex += kHex[bits[i] >> 4];
    hex += kHex[bits[i] & 15];
  }
  return hex;
}

// libdwfl's own search (dwfl_standard_find_debuginfo) must not see a file
// name: it opens, with a blocking open(2) and following symlinks, names
// from the file's .gnu_debuglink (which may hold "../") in the file's
// directory and in that of its realpath, where the file's owner may put a
// FIFO or a link to a device. Called without names, it looks only by
// build-id under /usr/lib/debug (root's) and then asks debuginfod.
int BuildIdOnlyStandardSearch(Dwfl_Module* mod, void** userdata, const char* modname,
                              Dwarf_Addr base, char** debuginfo_file_name) {
  return dwfl_standard_find_debuginfo(mod, userdata, modname, base, nullptr, nullptr, 0,
                                      debuginfo_file_name);
}

}  // namespace

int FindDebuginfoSafely(Dwfl_Module* mod, void** userdata, const char* modname, Dwarf_Addr base,
                        const char* file_name, const char* debuglink_file,
                        GElf_Word /*debuglink_crc*/, char** debuginfo_file_name) {
  DebugSearch unnamed{file_name != nullptr ? file_name : "", -1, 0, {}};
  auto* search = userdata != nullptr ? static_cast<DebugSearch*>(*userdata) : nullptr;
  if (search == nullptr) search = &unnamed;
  GElf_Addr bias = 0;
  Elf* main_elf = dwfl_module_getelf(mod, &bias);
  GElf_Word crc = 0;
  const char* own_link = main_elf ? dwelf_elf_gnu_debuglink(main_elf, &crc) : nullptr;
  // libdwfl passes the main file's own .gnu_debuglink string when it
  // looks for the debug file, and the altlink's when it looks for that.
  const bool altlink = debuglink_file != nullptr && debuglink_file != own_link;
  if (altlink) return BuildIdOnlyStandardSearch(mod, userdata, modname, base, debuginfo_file_name);
  int fd = -1;
  std::string found;
  const std::string build_id = HexBuildId(mod);
  std::optional<std::string> link;
  if (own_link != nullptr) link = own_link;
  for (const std::string& c : DebugFileCandidates(build_id, link, DirectoryOf(search->path))) {
    absl::StatusOr<UniqueFd> cand = OpenUntrustedFile(c, DebugCandidateLinks(c, ""));
    if (cand.ok() && AcceptableDebugFile(*cand, c, search->fd, build_id)) {
      fd = cand->release();
      found = c;
      break;
    }
  }
  if (fd < 0) {
    const char* urls = std::getenv("DEBUGINFOD_URLS");
    if (urls == nullptr || urls[0] == '\0') return -1;
    fd = BuildIdOnlyStandardSearch(mod, userdata, modname, base, debuginfo_file_name);
    if (fd < 0) return fd;
    if (*debuginfo_file_name != nullptr) found = *debuginfo_file_name;
    free(*debuginfo_file_name);
    *debuginfo_file_name = nullptr;
    if (!CheckUntrustedFd(fd, found).ok()) {
      ::close(fd);
      return -1;
    }
  }
  {
    Elf* elf = elf_begin(fd, ELF_C_READ_MMAP, nullptr);
    const uint64_t expanded = elf ? ExpandedDwarfBytes(elf) : 0;
    elf_end(elf);
    search->expanded = expanded;
    if (search->max_bytes != 0 && expanded > search->max_bytes) {
      search->skipped = absl::StrCat(found.empty() ? "its debug file" : found, " would expand to ",
                                     expanded >> 20, " MB");
      ::close(fd);
      return -1;
    }
  }
  *debuginfo_file_name = strdup(found.c_str());
  return fd;
}

uint64_t ExpandedDwarfBytes(Elf* elf) {
  size_t shstrndx = 0;
  if (elf_getshdrstrndx(elf, &shstrndx) != 0) return 0;
  uint64_t total = 0;
  for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn != nullptr; scn = elf_nextscn(elf, scn)) {
    GElf_Shdr shdr;
    if (gelf_getshdr(scn, &shdr) == nullptr) continue;
    const char* name = elf_strptr(elf, shstrndx, shdr.sh_name);
    if (name == nullptr) continue;
    const bool gnu = std::strncmp(name, ".zdebug_", 8) == 0;
    if (!gnu && std::strncmp(name, ".debug_", 7) != 0) continue;
    if (shdr.sh_flags & SHF_COMPRESSED) {
      GElf_Chdr chdr;
      if (gelf_getchdr(scn, &chdr) != nullptr) total += chdr.ch_size;
    } else if (gnu) {
      // "ZLIB" and the expanded size, 8 bytes big-endian.
      Elf_Data* d = elf_rawdata(scn, nullptr);
      if (d && d->d_buf && d->d_size >= 12 && std::memcmp(d->d_buf, "ZLIB", 4) == 0) {
        const auto* b = static_cast<const unsigned char*>(d->d_buf) + 4;
        uint64_t n = 0;
        for (int i = 0; i < 8; ++i) n = n << 8 | b[i];
        total += n;
      }
    }
  }
  return total;
}

}  // namespace ehprof
