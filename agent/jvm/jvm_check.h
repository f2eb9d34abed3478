// The HotSpot JVMs installed here, as `ehprof check` lists them: each
// libjvm.so under /usr/lib/jvm and whether it exports the tables
// (gHotSpotVMStructs and the rest) its Java frames are read by.
#ifndef EHPROF_AGENT_JVM_JVM_CHECK_H_
#define EHPROF_AGENT_JVM_JVM_CHECK_H_

#include <string>
#include <vector>

namespace ehprof {

struct JvmCheck {
  std::string libjvm;
  std::string version;  // JAVA_VERSION of the JDK's release file; empty: unknown
  bool readable = false;
  std::string detail;   // what was found, or why it cannot be read
};

// Every */lib/server/libjvm.so under /usr/lib/jvm (links to one file once).
std::vector<JvmCheck> CheckInstalledJvms();

}  // namespace ehprof

#endif  // EHPROF_AGENT_JVM_JVM_CHECK_H_
