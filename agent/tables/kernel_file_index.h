// Tells the BPF programs the files user space has met and the state of
// each one's table, by the kernel's own identity of the file (superblock
// dev_t, inode), so the exec and mmap programs (bpf/proc_learn.bpf.h) can
// add a mapping of it to a process entry at once, before user space has
// read /proc/PID/maps: with its table when loaded, PENDING while it is
// built (the walk stops there and is finished late, user space knowing the
// mapping from its event), frame pointers for a file without one.
// Entries are written when a process's entry maps a file and whenever the
// file's table changes state (a build ending while no process maps it: the
// next one to map it must not find it unknown), and removed before the
// table is unloaded or the file forgotten, so the kernel never picks up a
// table id that is gone.
#ifndef EHPROF_AGENT_TABLES_KERNEL_FILE_INDEX_H_
#define EHPROF_AGENT_TABLES_KERNEL_FILE_INDEX_H_

#include <compare>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>

#include "absl/status/status.h"
#include "agent/tables/file_tables.h"
#include "bpf/ehprof_abi.h"

namespace ehprof {

// A file as /proc/PID/maps and the kernel name it: (major << 20 | minor,
// inode). Not stat()'s st_dev, which differs on btrfs subvolumes.
struct KernelFileKey {
  uint64_t dev = 0, ino = 0;
  auto operator<=>(const KernelFileKey&) const = default;
  bool known() const { return ino != 0; }
};

// The file_tables map behind a seam: the BPF map (the session's
// BpfFileIndexMap), or an in-memory one.
class FileIndexMap {
 public:
  virtual ~FileIndexMap() = default;
  virtual absl::Status Put(const ehp_file_key& key, const ehp_file_info& info) = 0;
  virtual void Remove(const ehp_file_key& key) = 0;
};

// The flags (enum ehp_mapping_flags) a mapping of f gets from its table's
// state, in a process entry or from the kernel side: HAS_TABLE (its id
// f.table_id) when loaded, PENDING while it is built (the walk stops
// there, to be finished late), 0 otherwise (frame pointers).
uint32_t TableStateFlags(const FileInfo& f);

// What the kernel needs of a file to map its table (page-aligned like the
// loader's mappings); nullopt for a file with no executable PT_LOAD.
std::optional<ehp_file_info> KernelFileInfo(const FileInfo& f, uint64_t size);

class KernelFileIndex {
 public:
  explicit KernelFileIndex(std::unique_ptr<FileIndexMap> map) : map_(std::move(map)) {}

  // The file `key` is known to the kernel as `kkey`. Cheap when already
  // published in the same state.
  void Publish(const KernelFileKey& kkey, const FileKey& key, const FileInfo& info);
  // `key`'s table changed state: every kernel key it was published under
  // says so.
  void Refresh(const FileKey& key, const FileInfo& info);
  // `exe` ran with the interpreter `interp` (ld.so): an exec of `exe` adds
  // both. Remembered until exe is published if it is not yet.
  void SetInterpreter(const KernelFileKey& exe, const KernelFileKey& interp);
  // The file's table is about to be unloaded, or the file forgotten: every
  // kernel key of it goes.
  void Unpublish(const FileKey& key);
  // The file a kernel-added mapping named; nullopt when not published.
  std::optional<FileKey> Find(const KernelFileKey& kkey) const;
  size_t size() const { return by_kernel_.size(); }

 private:
  struct Entry {
    FileKey key;
    ehp_file_info info{};
  };
  void Write(const KernelFileKey& kkey, const Entry& e);

  std::unique_ptr<FileIndexMap> map_;
  std::map<KernelFileKey, Entry> by_kernel_;
  // Interpreters of executables not published yet; bounded.
  static constexpr size_t kMaxPendingInterps = 4096;
  std::map<KernelFileKey, KernelFileKey> pending_interp_;
};

}  // namespace ehprof

#endif  // EHPROF_AGENT_TABLES_KERNEL_FILE_INDEX_H_
