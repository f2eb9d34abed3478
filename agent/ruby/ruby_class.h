// Class paths of a live Ruby process, to name a method "Class#method"
// ("Class.method" for a singleton's) as Ruby 3.4's backtraces and rbspy
// on Ruby 3.3+ do: a method entry's class (defined_class for a Ruby method,
// owner for a C method) and that class's path, which 3.3+ keep in
// rb_classext_t's classpath. Where classpath and a singleton class's
// attached object lie, and which flag marks a singleton, are probed on the
// process's own classes (Object, Module, String, Object's singleton
// class), not taken from a version: a Ruby that keeps the path elsewhere
// (3.1: an instance variable) has none found, and its names stay Ruby's
// bare labels, as rbspy's do there. A class that is not read (anonymous,
// unreadable, a singleton of a plain object) gives an error, never a guess.
#ifndef EHPROF_AGENT_RUBY_RUBY_CLASS_H_
#define EHPROF_AGENT_RUBY_RUBY_CLASS_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "agent/process/process_memory.h"
#include "agent/ruby/ruby_objects.h"

namespace ehprof {

// Where the probe found the fields (0: not found).
struct RubyClassLayout {
  uint32_t classpath = 0;       // from the RClass's start
  uint32_t attached = 0;        // a singleton class's attached object
  uint64_t singleton_flag = 0;  // the RBasic flag of a singleton class
};

struct RubyClassName {
  std::string path;  // "Foo::Bar"
  bool singleton = false;
};

class RubyClasses {
 public:
  RubyClasses(const ProcessMemory& mem, const RubyObjects& objects) : mem_(mem), objects_(objects) {}
  // The layout from the classes in the VALUE variables rb_cObject,
  // rb_cModule and rb_cString (runtime addresses): the three paths at one
  // offset, Object's singleton class attached to Object.
  absl::Status Probe(uint64_t object_var, uint64_t module_var, uint64_t string_var);
  bool ready() const { return layout_.classpath != 0; }
  // The class a method entry (cme) runs in, by its path.
  absl::StatusOr<RubyClassName> OfMethodEntry(uint64_t cme, bool cfunc) const;
  // The path of a class or module (an include's iclass: its module's).
  absl::StatusOr<RubyClassName> Path(uint64_t klass) const;
  const RubyClassLayout& layout() const { return layout_; }

 private:
  absl::StatusOr<uint64_t> U64(uint64_t addr) const;
  absl::StatusOr<std::string> PathAt(uint64_t klass, uint32_t off) const;

  const ProcessMemory& mem_;
  const RubyObjects& objects_;
  RubyClassLayout layout_;
};

// Ruby's profile_frame_full_label: the label with its method's base label
// replaced by "Class#method" (or "Class.method"): "foo" -> "Foo#foo",
// "block in foo" -> "block in Foo#foo". The label as is when the base
// label does not end it.
std::string QualifiedLabel(const std::string& label, const std::string& base_label, const RubyClassName& klass);

}  // namespace ehprof

#endif  // EHPROF_AGENT_RUBY_RUBY_CLASS_H_
