// Field numbers of pprof's proto/profile.proto, in one place: the writer
// uses them, and tests/output_pprof_test.cc checks each against the classes
// protoc generates from that schema.
#ifndef EHPROF_AGENT_OUTPUT_PPROF_FIELDS_H_
#define EHPROF_AGENT_OUTPUT_PPROF_FIELDS_H_

#include <cstdint>

namespace ehprof::pprof_fields {

enum ProfileField : uint32_t {
  kProfileSampleType = 1,
  kProfileSample = 2,
  kProfileMapping = 3,
  kProfileLocation = 4,
  kProfileFunction = 5,
  kProfileStringTable = 6,
  kProfileTimeNanos = 9,
  kProfileDurationNanos = 10,
  kProfilePeriodType = 11,
  kProfilePeriod = 12,
};
enum ValueTypeField : uint32_t { kValueTypeType = 1, kValueTypeUnit = 2 };
enum SampleField : uint32_t { kSampleLocationId = 1, kSampleValue = 2, kSampleLabel = 3 };
enum LabelField : uint32_t { kLabelKey = 1, kLabelStr = 2, kLabelNum = 3 };
enum MappingField : uint32_t {
  kMappingId = 1,
  kMappingMemoryStart = 2,
  kMappingMemoryLimit = 3,
  kMappingFileOffset = 4,
  kMappingFilename = 5,
  kMappingBuildId = 6,
  kMappingHasFunctions = 7,
  kMappingHasFilenames = 8,
  kMappingHasLineNumbers = 9,
  kMappingHasInlineFrames = 10,
};
enum LocationField : uint32_t {
  kLocationId = 1,
  kLocationMappingId = 2,
  kLocationAddress = 3,
  kLocationLine = 4,
};
enum LineField : uint32_t { kLineFunctionId = 1, kLineLine = 2 };
enum FunctionField : uint32_t {
  kFunctionId = 1,
  kFunctionName = 2,
  kFunctionSystemName = 3,
  kFunctionFilename = 4,
};

}  // namespace ehprof::pprof_fields

#endif  // EHPROF_AGENT_OUTPUT_PPROF_FIELDS_H_
