// The HotSpot JVMs installed here, as `ehprof check` lists them: each
// libjvm.so under /usr/lib/jvm and whether it exports the tables
// (gHotSpotVMStructs and the rest) its Java frames are read by.
#ifndef EHPROF_AGENT_JVM_JVM_CHECK_H_
#define EHPROF_AGENT_JVM_JVM_CHECK_H_

#include <vector>

#include "agent/process/runtime_check.h"

namespace ehprof {

// Every */lib/server/libjvm.so under /usr/lib/jvm (links to one file once),
// its version JAVA_VERSION of the JDK's release file.
std::vector<RuntimeCheck> CheckInstalledJvms();

}  // namespace ehprof

#endif  // EHPROF_AGENT_JVM_JVM_CHECK_H_
