#include "tests/debian_python_root.h"

#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "agent/python/python_binary.h"
#include "elf/elf_file.h"
#include "gtest/gtest.h"
#include "tests/test_support.h"

namespace ehprof::testing {

namespace {

constexpr char kPackages[] = "python3.14";
constexpr char kPython[] = "/usr/bin/python3.14";

// The cached base tarball of forky with kPackages, if made before.
bool TarballCached() {
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/var/cache/ehprof/roots", ec)) {
    const std::string name = e.path().filename();
    if (name.starts_with("debian-forky-apt-systemd-") && name.ends_with(".tar")) return true;
  }
  return false;
}

struct Owned : DebianPythonRoot {
  ~Owned() {
    if (dir.empty()) return;
    const std::string cmd = absl::StrCat("umount -R -l ", dir, "/proc ", dir, "/dev 2>/dev/null; ",
                                         "findmnt -rno TARGET | grep -q '^", dir, "/' || rm -rf --one-file-system ",
                                         dir);
    [[maybe_unused]] int rc = std::system(cmd.c_str());
  }
};

void Make(Owned* r) {
  if (getuid() != 0) {
    r->skip = "the Python 3.14 root needs root (chroot, mounts)";
    return;
  }
  if (!TarballCached() && access("/usr/bin/mmdebstrap", X_OK) != 0) {
    r->skip = "no mmdebstrap to make the forky root with python3.14, and no cached one";
    return;
  }
  char tmpl[] = "/tmp/ehprof-py314-root.XXXXXX";
  char empty_tmpl[] = "/tmp/ehprof-py314-empty.XXXXXX";
  if (!mkdtemp(tmpl) || !mkdtemp(empty_tmpl)) {
    ADD_FAILURE() << "mkdtemp failed";
    return;
  }
  const std::string cmd = absl::StrCat(
      "EHPROF_ROOT_PACKAGES=", kPackages, " EHPROF_ROOT_KEEP=", tmpl, " timeout 1800 bash ",
      SourcePath("scripts/debian_root.sh"), " forky ", empty_tmpl, " true >/dev/null && mount --bind /proc ", tmpl,
      "/proc && mount --rbind /dev ", tmpl, "/dev && mount --make-rslave ", tmpl, "/dev");
  const int rc = std::system(cmd.c_str());
  rmdir(empty_tmpl);
  r->dir = tmpl;
  if (rc != 0) {
    ADD_FAILURE() << "could not make the forky root: " << cmd;
    return;
  }
  r->python = kPython;
  if (access((r->dir + kPython).c_str(), X_OK) != 0) ADD_FAILURE() << "no " << kPython << " in " << r->dir;
}

}  // namespace

std::string DebianPythonRoot::Copy(const std::string& rel) const {
  const std::string inside = absl::StrCat("/tmp/", std::filesystem::path(rel).filename().string());
  std::filesystem::copy_file(SourcePath(rel), dir + inside, std::filesystem::copy_options::overwrite_existing);
  return inside;
}

std::string DebianPythonRoot::Command() const { return absl::StrCat("chroot ", dir, " ", python); }

absl::StatusOr<std::string> DebianPythonRoot::EvalColdName() const {
  auto elf = ElfFile::Open(dir + python);
  if (!elf.ok()) return elf.status();
  auto bin = InspectPythonBinary(*elf, python);
  if (!bin.ok()) return bin.status();
  if (!*bin || (*bin)->eval.size() < 2) return absl::NotFoundError(absl::StrCat("no eval loop .cold part in ", python));
  return absl::StrFormat("python3.14+%#x", (*bin)->eval[1].begin);
}

bool IsClone3Child(const std::string& dso, const std::string& symbol) {
  constexpr std::string_view kPrefix = "libc.so.6+";
  if (!dso.ends_with("/libc.so.6") || !symbol.starts_with(kPrefix)) return false;
  uint64_t at = 0;
  auto elf = ElfFile::Open(dso);
  if (!absl::SimpleHexAtoi(symbol.substr(kPrefix.size()), &at) || !elf.ok() || at < 16) return false;
  static constexpr uint8_t kClone3Syscall[] = {0xb8, 0xb3, 0x01, 0x00, 0x00, 0x0f, 0x05};
  auto before = elf->BytesAtVaddr(at - 16, 16);
  return before && std::search(before->begin(), before->end(), std::begin(kClone3Syscall),
                               std::end(kClone3Syscall)) != before->end();
}

const DebianPythonRoot& ForkyPython314() {
  static Owned* root = [] {
    static Owned r;
    Make(&r);
    return &r;
  }();
  return *root;
}

}  // namespace ehprof::testing
