// Perl's objects read from a live process: a sub's name (`Package::sub`,
// from its CV's glob and the glob's stash, or the name and stash a lexical
// sub keeps itself) and file (CvFILE), and a statement's file and line
// (COP). Every type is checked before it is followed (a CV is SVt_PVCV, a
// glob SVt_PVGV, a stash SVt_PVHV), every length bounded: what fails is an
// error, never a wrong name. The struct layouts are the ones libperl has
// kept since 5.22 (sv.h, cv.h, gv.h, hv.h, cop.h of an ithreads build);
// the walk's own offsets come from the binary (agent/perl/perl_binary.h).
#ifndef EHPROF_AGENT_PERL_PERL_OBJECTS_H_
#define EHPROF_AGENT_PERL_PERL_OBJECTS_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "agent/process/process_memory.h"

namespace ehprof {

struct PerlSub {
  std::string name;  // "Package::sub", "Package::__ANON__" for a closure
  std::string file;  // where it was defined; "" for an XSUB
  bool xsub = false;
};

struct PerlCop {
  std::string file;
  int32_t line = -1;
};

class PerlObjects {
 public:
  explicit PerlObjects(const ProcessMemory& mem) : mem_(mem) {}
  absl::StatusOr<PerlSub> Sub(uint64_t cv) const;
  absl::StatusOr<PerlCop> Cop(uint64_t cop) const;

 private:
  absl::StatusOr<std::string> Hek(uint64_t hek) const;
  absl::StatusOr<std::string> StashName(uint64_t hv) const;
  absl::StatusOr<std::string> CString(uint64_t at) const;
  absl::StatusOr<uint32_t> SvType(uint64_t sv, uint32_t* flags) const;
  const ProcessMemory& mem_;
};

}  // namespace ehprof

#endif  // EHPROF_AGENT_PERL_PERL_OBJECTS_H_
