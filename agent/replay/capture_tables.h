// A capture completed at recording time, on the machine that has its files:
// the compact tables of its mapped files built as the agent builds them and
// loaded (TableStore) into in-memory maps (bpf/host/host_maps.h), the BPF
// walk's C build run over them, libdwfl's unwind of the same stack bytes
// from those files, and the table map entries the walk looked up kept in
// the capture (whole pages: any pc of a page the walk touched resolves as
// it did here). The capture then replays anywhere (bpf/host/replay.h).
#ifndef EHPROF_AGENT_REPLAY_CAPTURE_TABLES_H_
#define EHPROF_AGENT_REPLAY_CAPTURE_TABLES_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "bpf/host/capture.h"
#include "bpf/host/host_maps.h"
#include "bpf/host/replay.h"
#include "elf/elf_file.h"

namespace ehprof {

class TableStore;
class VdsoFile;

// The file a capture's mapping path names here ("" for [vdso], anonymous
// code and other pseudo-paths: no file; the vDSO's table is built from this
// process's own image, which is every process's on the machine).
std::string CaptureFilePath(const std::string& path);

// Keeps each file's table (and build-id check) for the next capture that
// maps it: libLLVM's million rows are built once.
class CaptureTables {
 public:
  CaptureTables();
  ~CaptureTables();

  // Gives each of c's mapped files its table (the mapping's table_id).
  // FailedPrecondition, naming the file, when a file holding one of the
  // kernel walk's frames cannot be read here or its build-id differs from
  // the capture's: the stack's return addresses belong to that other build.
  // Such a file holding none is left without a table, said in notes.
  absl::Status Assign(Capture* c, std::vector<std::string>* notes);
  // The walk of c (after Assign) over every table's full maps, libdwfl's
  // unwind beside it; the keys it looked up stay recorded for Entries.
  absl::StatusOr<ReplayResult> Replay(const Capture& c);
  // The entries of every page the last Replay looked up: the table's
  // descriptor, the page, its buckets, its rows, its palette words and the
  // rules they name.
  std::vector<CaptureEntry> Entries() const;

 private:
  // "[vdso]" names this process's vDSO image (ReadOwnVdso), also kept in a
  // memfd (vdso_file_) for libdwfl.
  static constexpr const char* kVdso = "[vdso]";
  absl::StatusOr<ElfFile> OpenElf(const std::string& file);
  // file: a path here or kVdso.
  absl::StatusOr<uint32_t> Table(const std::string& file, const CaptureMapping& m);
  // The file m's table is built from ("" when none: anonymous code).
  std::string TableFile(const CaptureMapping& m) const;
  // The file libdwfl reads for m ("" when none).
  std::string DwflPath(const CaptureMapping& m) const;

  HostMaps maps_;
  std::unique_ptr<TableStore> store_;
  std::map<std::string, uint32_t> tables_;        // file -> table id
  std::map<std::string, std::string> build_ids_;  // file -> its build-id here
  std::unique_ptr<VdsoFile> vdso_file_;
};

// Assign, Replay, the stack trimmed to what the walks need, the libdwfl
// frames and Entries stored: c ready to save. Internal when the replay of
// the completed capture from its own entries differs from the walk over
// the full tables (the entries would not be what the walk reads).
absl::StatusOr<Capture> CompleteCapture(CaptureTables& tables, Capture c,
                                        std::vector<std::string>* notes = nullptr);

}  // namespace ehprof

#endif  // EHPROF_AGENT_REPLAY_CAPTURE_TABLES_H_
