// The attacker of the hostile tests (hostile_*_priv_test.cc and others
// that act as a local user): uid/gid 65534 (nobody), no supplementary
// groups. Each attack runs in a child forked from the (root) test.
#ifndef EHPROF_TESTS_HOSTILE_USER_H_
#define EHPROF_TESTS_HOSTILE_USER_H_

#include <grp.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <unistd.h>

#include <string>
#include <vector>

namespace ehprof::testing {

inline constexpr uid_t kNobody = 65534;

// Drops the calling process (a forked child) to uid/gid `uid` with no
// supplementary groups, real, effective and saved alike; false when the
// kernel refused a step (the child should then _exit, never run as root).
// Still dumpable, as a process that started as that user is: its /proc
// files are its own.
inline bool BecomeUser(uid_t uid = kNobody) {
  if (::setgroups(0, nullptr) != 0 || ::setresgid(uid, uid, uid) != 0 || ::setresuid(uid, uid, uid) != 0) {
    return false;
  }
  ::prctl(PR_SET_DUMPABLE, 1);
  return true;
}

// Forks a child that becomes `uid` and execs path with argv (argv[0]
// first), ended by SIGALRM after alarm_seconds; its pid (-1: fork failed).
// The child exits 2 when dropping to the user failed, 127 when exec did.
inline pid_t SpawnAsUser(const std::string& path, const std::vector<std::string>& argv, unsigned alarm_seconds,
                         uid_t uid = kNobody) {
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (!BecomeUser(uid)) ::_exit(2);
    ::alarm(alarm_seconds);
    ::execv(path.c_str(), args.data());
    ::_exit(127);
  }
  return pid;
}

}  // namespace ehprof::testing

#endif  // EHPROF_TESTS_HOSTILE_USER_H_
