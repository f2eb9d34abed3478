// Survivable reads through read-only file mappings.
//
// ehprof maps the files it reads (ELF images through libelf's
// ELF_C_READ_MMAP, string tables through MappedRange, debug files through
// libdw), and a local user may truncate their own file while ehprof reads
// it: a read past the new end raises SIGBUS, which would kill the agent.
// Copying every file to the heap instead (pread) would cost what mapping
// saves: libLLVM's tables are built from a 100+ MB file, and the agent's
// steady RSS (about 36 MB) counts only the pages it touches, which the
// kernel may drop again. So the mappings stay, and this handler makes the
// fault survivable: for a BUS_ADRERR inside a file mapping that is
// readable and neither writable nor executable (as /proc/self/maps shows
// it), it maps a zero page over the faulting page (MAP_FIXED) and returns,
// so the read is retried and sees zeros. Every parser here already treats
// a file's bytes as hostile, zeros included. Any other SIGBUS goes to the
// disposition there was before (by default: the process dies, as it
// would have).
#ifndef EHPROF_BASE_SIGBUS_GUARD_H_
#define EHPROF_BASE_SIGBUS_GUARD_H_

#include <cstdint>
#include <string>
#include <vector>

namespace ehprof {

// Installs the handler for the whole process, once (later calls do
// nothing). Call it early in main, before threads start.
void InstallSigbusGuard();

// How many faults the handler has turned into zero pages since the start.
uint64_t SigbusGuardFaults();

// One warning for each file (up to a few) whose truncation was met since
// the last call, naming it: each file is reported once.
std::vector<std::string> TakeSigbusGuardWarnings();

}  // namespace ehprof

#endif  // EHPROF_BASE_SIGBUS_GUARD_H_
