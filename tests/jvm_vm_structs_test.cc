// agent/jvm/vm_structs.h against tables laid out as libjvm.so's, built in
// this test's own memory and read through the same reader
// (process_vm_readv on this process): a good table reads, with fields
// found through superclasses; hostile ones (strides and offsets out of
// bounds, names without an end, pointers to nowhere, no last entry, a
// missing symbol) are clean errors; a layout that lacks a field the walk
// needs is refused naming it.
#include "agent/jvm/vm_structs.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "agent/jvm/jvm_layout.h"
#include "gtest/gtest.h"

namespace ehprof {
namespace {

// The entries as vmStructs.hpp declares them.
struct FieldEntry {
  const char* type;
  const char* field;
  const char* type_string;
  int32_t is_static;
  uint64_t offset;
  uint64_t address;
};
struct TypeEntry {
  const char* name;
  const char* superclass;
  int32_t is_oop, is_integer, is_unsigned;
  uint64_t size;
};
struct IntEntry {
  const char* name;
  int32_t value;
};
struct LongEntry {
  const char* name;
  uint64_t value;
};

uint64_t Addr(const void* p) { return reinterpret_cast<uint64_t>(p); }

// The exported variables: each gHotSpotVM* symbol's value lives in vars.
class FakeJvm {
 public:
  FakeJvm() {
    fields = {{"CodeBlob", "_name", "const char*", 0, 8, 0},
              {"CompiledMethod", "_method", "Method*", 0, 112, 0},
              {"CodeCache", "_heaps", "GrowableArray<CodeHeap*>*", 1, 0, 0x1234},
              {"Symbol", "_body", nullptr, 0, 6, 0},
              {}};
    types = {{"nmethod", "CompiledMethod", 0, 0, 0, 352}, {"CompiledMethod", "CodeBlob", 0, 0, 0, 192},
             {"CodeBlob", nullptr, 0, 0, 0, 104}, {}};
    ints = {{"frame::interpreter_frame_sender_sp_offset", -1}, {}};
    longs = {{"markWord::hash_mask", uint64_t{1} << 40}, {}};
    Set("gHotSpotVMStructs", Addr(fields.data()));
    Set("gHotSpotVMStructEntryArrayStride", sizeof(FieldEntry));
    Set("gHotSpotVMStructEntryTypeNameOffset", offsetof(FieldEntry, type));
    Set("gHotSpotVMStructEntryFieldNameOffset", offsetof(FieldEntry, field));
    Set("gHotSpotVMStructEntryTypeStringOffset", offsetof(FieldEntry, type_string));
    Set("gHotSpotVMStructEntryIsStaticOffset", offsetof(FieldEntry, is_static));
    Set("gHotSpotVMStructEntryOffsetOffset", offsetof(FieldEntry, offset));
    Set("gHotSpotVMStructEntryAddressOffset", offsetof(FieldEntry, address));
    Set("gHotSpotVMTypes", Addr(types.data()));
    Set("gHotSpotVMTypeEntryArrayStride", sizeof(TypeEntry));
    Set("gHotSpotVMTypeEntryTypeNameOffset", offsetof(TypeEntry, name));
    Set("gHotSpotVMTypeEntrySuperclassNameOffset", offsetof(TypeEntry, superclass));
    Set("gHotSpotVMTypeEntrySizeOffset", offsetof(TypeEntry, size));
    Set("gHotSpotVMIntConstants", Addr(ints.data()));
    Set("gHotSpotVMIntConstantEntryArrayStride", sizeof(IntEntry));
    Set("gHotSpotVMIntConstantEntryNameOffset", offsetof(IntEntry, name));
    Set("gHotSpotVMIntConstantEntryValueOffset", offsetof(IntEntry, value));
    Set("gHotSpotVMLongConstants", Addr(longs.data()));
    Set("gHotSpotVMLongConstantEntryArrayStride", sizeof(LongEntry));
    Set("gHotSpotVMLongConstantEntryNameOffset", offsetof(LongEntry, name));
    Set("gHotSpotVMLongConstantEntryValueOffset", offsetof(LongEntry, value));
  }
  void Set(const std::string& name, uint64_t value) {
    vars_.push_back(std::make_unique<uint64_t>(value));
    symbols[name] = Addr(vars_.back().get());
  }
  absl::StatusOr<VmStructs> Read() const { return VmStructs::Read(ProcessMemory(getpid()), symbols); }

  std::vector<FieldEntry> fields;
  std::vector<TypeEntry> types;
  std::vector<IntEntry> ints;
  std::vector<LongEntry> longs;
  VmSymbols symbols;

 private:
  std::vector<std::unique_ptr<uint64_t>> vars_;
};

TEST(VmStructs, ReadsTheTablesAndFindsFieldsThroughSuperclasses) {
  FakeJvm jvm;
  auto vm = jvm.Read();
  ASSERT_TRUE(vm.ok()) << vm.status();
  EXPECT_EQ(vm->field_count(), 4u);
  EXPECT_EQ(vm->type_count(), 3u);
  ASSERT_NE(vm->Field("nmethod", "_method"), nullptr);
  EXPECT_EQ(vm->Field("nmethod", "_method")->offset, 112u);
  EXPECT_EQ(vm->Field("nmethod", "_name")->type, "const char*");
  EXPECT_EQ(vm->Field("nmethod", "_nothing"), nullptr);
  EXPECT_TRUE(vm->Field("CodeCache", "_heaps")->is_static);
  EXPECT_EQ(vm->Field("CodeCache", "_heaps")->address, 0x1234u);
  EXPECT_EQ(vm->Field("Symbol", "_body")->type, "");
  EXPECT_EQ(vm->Size("nmethod"), 352u);
  EXPECT_EQ(vm->Constant("frame::interpreter_frame_sender_sp_offset"), -1);
  EXPECT_EQ(vm->Constant("markWord::hash_mask"), int64_t{1} << 40);
  // A JVM whose tables lack what the walk needs is refused, naming it.
  auto layout = ReadJvmLayout(*vm, ProcessMemory(getpid()));
  ASSERT_FALSE(layout.ok());
  EXPECT_TRUE(absl::IsFailedPrecondition(layout.status())) << layout.status();
  EXPECT_TRUE(absl::StrContains(layout.status().message(), "::") ||
              absl::StrContains(layout.status().message(), "size of"))
      << layout.status();
}

TEST(VmStructs, HostileStridesOffsetsAndPointersAreErrors) {
  const auto fails = [](const char* what, auto change) {
    FakeJvm jvm;
    change(jvm);
    auto vm = jvm.Read();
    EXPECT_FALSE(vm.ok()) << what;
    return std::string(vm.status().message());
  };
  EXPECT_TRUE(absl::StrContains(fails("no symbol", [](FakeJvm& j) { j.symbols.erase("gHotSpotVMTypeEntrySizeOffset"); }),
                                "exports no gHotSpotVMTypeEntrySizeOffset"));
  fails("stride 0", [](FakeJvm& j) { j.Set("gHotSpotVMStructEntryArrayStride", 0); });
  fails("huge stride", [](FakeJvm& j) { j.Set("gHotSpotVMTypeEntryArrayStride", uint64_t{1} << 40); });
  fails("offset past the entry", [](FakeJvm& j) { j.Set("gHotSpotVMStructEntryAddressOffset", 48); });
  fails("huge offset", [](FakeJvm& j) { j.Set("gHotSpotVMIntConstantEntryValueOffset", ~uint64_t{0} - 2); });
  fails("null table", [](FakeJvm& j) { j.Set("gHotSpotVMTypes", 0); });
  fails("table nowhere", [](FakeJvm& j) { j.Set("gHotSpotVMLongConstants", 0x10); });
  fails("symbol nowhere", [](FakeJvm& j) { j.symbols["gHotSpotVMStructs"] = 0x20; });
  fails("name nowhere", [](FakeJvm& j) { j.fields[1].field = reinterpret_cast<const char*>(0x30); });
  static const std::string kLong(1000, 'A');
  static const std::vector<char> kUnterminated(4096, 'B');
  fails("name too long", [](FakeJvm& j) { j.types[0].name = kLong.c_str(); });
  fails("name without end", [](FakeJvm& j) { j.ints[0].name = kUnterminated.data(); });
  const std::string endless = fails("no last entry", [](FakeJvm& j) {
    j.fields.assign(kMaxVmEntries + 10, FieldEntry{"T", "f", "int", 0, 0, 0});
    j.Set("gHotSpotVMStructs", Addr(j.fields.data()));
  });
  EXPECT_TRUE(absl::StrContains(endless, "no end")) << endless;
}

TEST(VmStructs, StringsReadUpToAPageThatIsNotMapped) {
  const long page = sysconf(_SC_PAGESIZE);
  void* m = mmap(nullptr, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(m, MAP_FAILED);
  char* p = static_cast<char*>(m);
  ASSERT_EQ(munmap(p + page, page), 0);
  std::memcpy(p + page - 4, "abc", 4);
  const ProcessMemory self(getpid());
  auto s = ReadVmString(self, Addr(p + page - 4));
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(*s, "abc");
  std::memset(p + page - 3, 'x', 3);  // runs into the unmapped page
  EXPECT_FALSE(ReadVmString(self, Addr(p + page - 3)).ok());
  std::string longest(kMaxVmString - 1, 'y');
  EXPECT_EQ(ReadVmString(self, Addr(longest.c_str())).value_or(""), longest);
  longest.push_back('y');
  EXPECT_FALSE(ReadVmString(self, Addr(longest.c_str())).ok());
  munmap(p, page);
}

}  // namespace
}  // namespace ehprof
