#include "agent/jvm/jvm_check.h"

#include <filesystem>
#include <fstream>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
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

std::vector<JvmCheck> CheckInstalledJvms() {
  std::vector<JvmCheck> out;
  std::set<std::filesystem::path> seen;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/usr/lib/jvm", ec)) {
    const std::filesystem::path lib = entry.path() / "lib/server/libjvm.so";
    const std::filesystem::path real = std::filesystem::canonical(lib, ec);
    if (ec || !seen.insert(real).second) continue;
    JvmCheck c;
    c.libjvm = real.string();
    c.version = ReleaseVersion(real.parent_path().parent_path().parent_path());
    absl::StatusOr<ElfFile> elf = ElfFile::Open(c.libjvm);
    absl::StatusOr<LibjvmFile> file = elf.ok() ? InspectLibjvm(*elf) : absl::StatusOr<LibjvmFile>(elf.status());
    c.readable = file.ok();
    c.detail = file.ok() ? "gHotSpotVMStructs and gHotSpotVMTypes exported" : std::string(file.status().message());
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace ehprof
