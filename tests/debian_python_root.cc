#include "tests/debian_python_root.h"

#include <stdlib.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "absl/strings/str_cat.h"
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

const DebianPythonRoot& ForkyPython314() {
  static Owned* root = [] {
    static Owned r;
    Make(&r);
    return &r;
  }();
  return *root;
}

}  // namespace ehprof::testing
