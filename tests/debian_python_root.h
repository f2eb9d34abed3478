// A root of Debian's next release (forky) holding its python3.14, for the
// tests that run Python 3.14: made by scripts/debian_root.sh (the base
// tarball cached under /var/cache/ehprof/roots, unpacked afresh for each
// test program), with /proc and /dev bound so the interpreter runs in it
// under chroot and ehprof, outside, reads it through /proc. Removed when
// the test program exits.
#ifndef EHPROF_TESTS_DEBIAN_PYTHON_ROOT_H_
#define EHPROF_TESTS_DEBIAN_PYTHON_ROOT_H_

#include <string>

#include "absl/status/statusor.h"

namespace ehprof::testing {

struct DebianPythonRoot {
  std::string dir;     // the root, "" when it could not be made
  std::string python;  // the interpreter inside it: "/usr/bin/python3.14"
  std::string skip;    // why not: a missing machine feature, named
  // Copies the source file `rel` into the root's /tmp; its path inside.
  std::string Copy(const std::string& rel) const;
  // "chroot DIR PYTHON": the command that runs the interpreter.
  std::string Command() const;
  // How the symbolizer names the eval loop's .cold part, where forky's
  // GCC 16 build runs its dispatch loop ("python3.14+0x43e429"): the FDE
  // InspectPythonBinary finds, the binary being stripped.
  absl::StatusOr<std::string> EvalColdName() const;
};

// Whether a root frame (perf-script's dso and symbol) is a thread's first
// in a libc that names no clone3 (forky's, "libc.so.6+0x112f91"): the code
// right before its FDE is clone3's syscall (mov $435, %eax; syscall),
// after which the child's FDE starts.
bool IsClone3Child(const std::string& dso, const std::string& symbol);

// The root, made on first use. A root that could not be made for another
// reason than a missing tool (mmdebstrap, with no cached tarball) fails
// the calling test.
const DebianPythonRoot& ForkyPython314();

}  // namespace ehprof::testing

#endif  // EHPROF_TESTS_DEBIAN_PYTHON_ROOT_H_
