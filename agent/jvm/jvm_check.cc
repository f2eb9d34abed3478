#include "agent/jvm/jvm_check.h"

#include <filesystem>
#include <fstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "agent/jvm/jvm_tracker.h"
#include "agent/jvm/libjvm.h"
#include "elf/elf_file.h"

namespace ehprof {
namespace {

// JAVA_VERSION="17.0.15" of a JDK's release file.
std::string ReleaseVersion(const std::filesystem::path& home) {
  std::ifstream in(home / "release");
  std::string line;
  while (std::getline(in, line)) {
    absl::string_view v = line;
    if (absl::ConsumePrefix(&v, "JAVA_VERSION=\"") && absl::ConsumeSuffix(&v, "\"")) return std::string(v);
  }
  return "";
}

}  // namespace

std::vector<RuntimeCheck> CheckInstalledJvms() {
  std::vector<RuntimeCheck> out;
  for (const std::string& path : InstalledFiles({"/usr/lib/jvm/*/lib/server/libjvm.so"})) {
    const std::filesystem::path real = path;
    RuntimeCheck c;
    c.runtime = "HotSpot";
    c.what = path;
    c.version = ReleaseVersion(real.parent_path().parent_path().parent_path());
    absl::StatusOr<ElfFile> elf = ElfFile::Open(c.what);
    absl::StatusOr<LibjvmFile> file = elf.ok() ? InspectLibjvm(*elf) : absl::StatusOr<LibjvmFile>(elf.status());
    c.readable = file.ok();
    c.detail = file.ok() ? "gHotSpotVMStructs and gHotSpotVMTypes exported" : std::string(file.status().message());
    out.push_back(std::move(c));
  }
  return out;
}

std::optional<RuntimeCheck> JvmTracker::CheckProcess(uint32_t pid) {
  Notice(pid, 0);
  auto it = procs_.find(pid);
  if (it == procs_.end() || it->second.state == Proc::kNotJvm || it->second.state == Proc::kUnknown) {
    return std::nullopt;
  }
  const Proc& p = it->second;
  auto lib = libjvms_.find(p.libjvm);
  RuntimeCheck c;
  c.runtime = "HotSpot";
  c.what = ProcessLabel(static_cast<int>(pid)) + (lib != libjvms_.end() ? lib->second.path : "libjvm.so");
  if (lib != libjvms_.end()) c.version = lib->second.version;
  c.readable = p.state == Proc::kJvm;
  if (c.readable) {
    c.detail = "VMStructs read, code cache found";
  } else if (p.state == Proc::kNotUp) {
    c.detail = "its JVM is still starting (VMStructs or code cache not set up yet)";
  } else {
    c.detail = lib != libjvms_.end() && !lib->second.problem.empty() ? lib->second.problem : "reading its memory failed";
  }
  return c;
}

}  // namespace ehprof
