#include "agent/tables/kernel_file_index.h"

#include <elf.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"

namespace ehprof {
namespace {

constexpr uint64_t kPageMask = 0xfff;

ehp_file_key ToBpf(const KernelFileKey& k) { return ehp_file_key{k.dev, k.ino}; }

}  // namespace

uint32_t TableStateFlags(const FileInfo& f) {
  switch (f.state) {
    case FileInfo::State::kReady:
      return EHP_MAPPING_HAS_TABLE;
    case FileInfo::State::kPending:
      return EHP_MAPPING_PENDING;
    default:
      return 0;
  }
}

std::optional<ehp_file_info> KernelFileInfo(const FileInfo& f, uint64_t size) {
  const ElfSegment* text = nullptr;
  for (const ElfSegment& s : f.loads) {
    // The largest executable segment: the loader maps each PT_LOAD on its
    // own, and the code is there (a second one is rare and small).
    if ((s.flags & PF_X) && (!text || s.memsz > text->memsz)) text = &s;
  }
  if (!text || f.loads.empty()) return std::nullopt;
  ehp_file_info info{};
  info.flags = TableStateFlags(f);
  if (info.flags & EHP_MAPPING_HAS_TABLE) info.table_id = f.table_id;
  info.size = size;
  info.entry = f.entry;
  info.first_vaddr = f.loads.front().vaddr & ~kPageMask;
  info.x_begin = text->vaddr & ~kPageMask;
  info.x_end = (text->vaddr + text->memsz + kPageMask) & ~kPageMask;
  info.x_offset = text->offset & ~kPageMask;
  return info;
}

void KernelFileIndex::Write(const KernelFileKey& kkey, const Entry& e) {
  if (map_) map_->Put(ToBpf(kkey), e.info).IgnoreError();  // a full map: /proc serves
}

void KernelFileIndex::Publish(const KernelFileKey& kkey, const FileKey& key, const FileInfo& f) {
  if (!kkey.known()) return;
  std::optional<ehp_file_info> info = KernelFileInfo(f, key.size);
  if (!info) return;
  auto it = by_kernel_.find(kkey);
  if (it != by_kernel_.end() && it->second.key == key && it->second.info.table_id == info->table_id &&
      it->second.info.flags == info->flags) {
    return;
  }
  Entry e{key, *info};
  if (auto p = pending_interp_.find(kkey); p != pending_interp_.end()) {
    e.info.interp = ToBpf(p->second);
    pending_interp_.erase(p);
  } else if (it != by_kernel_.end()) {
    e.info.interp = it->second.info.interp;
  }
  by_kernel_[kkey] = e;
  Write(kkey, e);
}

void KernelFileIndex::Refresh(const FileKey& key, const FileInfo& f) {
  std::vector<KernelFileKey> kkeys;
  for (const auto& [kkey, e] : by_kernel_) {
    if (e.key == key) kkeys.push_back(kkey);
  }
  for (const KernelFileKey& kkey : kkeys) Publish(kkey, key, f);
}

void KernelFileIndex::SetInterpreter(const KernelFileKey& exe, const KernelFileKey& interp) {
  if (!exe.known() || !interp.known() || exe == interp) return;
  auto it = by_kernel_.find(exe);
  if (it == by_kernel_.end()) {
    if (pending_interp_.size() >= kMaxPendingInterps) pending_interp_.clear();
    pending_interp_[exe] = interp;
    return;
  }
  if (it->second.info.interp.dev == interp.dev && it->second.info.interp.ino == interp.ino) return;
  it->second.info.interp = ToBpf(interp);
  Write(exe, it->second);
}

void KernelFileIndex::Unpublish(const FileKey& key) {
  for (auto it = by_kernel_.begin(); it != by_kernel_.end();) {
    if (it->second.key == key) {
      if (map_) map_->Remove(ToBpf(it->first));
      it = by_kernel_.erase(it);
    } else {
      ++it;
    }
  }
}

std::optional<FileKey> KernelFileIndex::Find(const KernelFileKey& kkey) const {
  auto it = by_kernel_.find(kkey);
  if (it == by_kernel_.end()) return std::nullopt;
  return it->second.key;
}

}  // namespace ehprof
