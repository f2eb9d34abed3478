// libdwfl's find_debuginfo callback, made safe against the files' owners.
//
// libdwfl's own (dwfl_standard_find_debuginfo) opens, with a blocking
// open(2) that follows symlinks, the name in a file's .gnu_debuglink
// (which may hold "../") in the file's directory and in its realpath's:
// the owner of a profiled program can put a FIFO there (ehprof hangs) or a
// link to a device or to another user's file (root reads it). This one
// looks where FindSeparateDebugFile looks (by build-id under
// /usr/lib/debug, then a plain .gnu_debuglink name beside the file), opens
// each candidate with OpenUntrustedFile and hands libdwfl the fd it
// checked; only then, and only when DEBUGINFOD_URLS is set, it lets
// libdwfl's search ask debuginfod, with no name to look for (build-id
// only). A DWARF file's .gnu_debugaltlink (dwz) file is looked up by its
// build-id only, under /usr/lib/debug and through debuginfod.
#ifndef EHPROF_SYMBOLIZER_SAFE_DEBUGINFO_H_
#define EHPROF_SYMBOLIZER_SAFE_DEBUGINFO_H_

#include <elfutils/libdwfl.h>

#include <cstdint>
#include <string>

namespace ehprof {

// What FindDebuginfoSafely sees as a module's userdata (dwfl_module_info);
// it also works without one (then the file's name libdwfl reports gives
// the directory, and nothing caps the expanded size).
struct DebugSearch {
  std::string path;        // the file, as the caller named it
  int fd = -1;             // the file, opened by the caller (-1: unknown)
  uint64_t max_bytes = 0;  // the cap on expanded compressed DWARF; 0: none
  std::string skipped;     // set when a debug file was refused by the cap
  uint64_t expanded = 0;   // the accepted debug file's compressed DWARF, expanded
};

// A Dwfl_Callbacks::find_debuginfo.
int FindDebuginfoSafely(Dwfl_Module* mod, void** userdata, const char* modname, Dwarf_Addr base,
                        const char* file_name, const char* debuglink_file,
                        GElf_Word debuglink_crc, char** debuginfo_file_name);

// The heap libdw takes to expand the compressed DWARF sections
// (SHF_COMPRESSED or GNU .zdebug_); uncompressed ones are mapped, not
// copied. All of them count: libdw (0.188) expands every debug section it
// knows when it opens the file, .debug_frame and location lists included
// (eu-addr2line on a program whose 0.5 MB .debug_frame expands to 512 MiB
// peaks at 529 MB resident).
uint64_t ExpandedDwarfBytes(Elf* elf);

}  // namespace ehprof

#endif  // EHPROF_SYMBOLIZER_SAFE_DEBUGINFO_H_
