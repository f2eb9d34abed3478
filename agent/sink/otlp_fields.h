// Field numbers of the OTLP profiles signal (package
// opentelemetry.proto.collector.profiles.v1development and
// opentelemetry.proto.profiles.v1development), as the OpenTelemetry
// Collector v0.165.0 (pdata v1.71.0, Profiles development version "1")
// decodes them: checked against its pdata/internal/generated_proto_*.go.
// The schema has moved between releases (one dictionary per request,
// a stack table, attribute_indices instead of attributes): a Collector of
// another release may want other numbers.
#ifndef EHPROF_AGENT_SINK_OTLP_FIELDS_H_
#define EHPROF_AGENT_SINK_OTLP_FIELDS_H_

#include <cstdint>

namespace ehprof::otlp_fields {

// ExportProfilesServiceRequest
enum RequestField : uint32_t { kRequestResourceProfiles = 1, kRequestDictionary = 2 };
// ResourceProfiles / ScopeProfiles
enum ResourceProfilesField : uint32_t { kResourceProfilesResource = 1, kResourceProfilesScopeProfiles = 2 };
enum ScopeProfilesField : uint32_t { kScopeProfilesScope = 1, kScopeProfilesProfiles = 2 };
// opentelemetry.proto.resource.v1.Resource, common.v1 types
enum ResourceField : uint32_t { kResourceAttributes = 1 };
enum ScopeField : uint32_t { kScopeName = 1, kScopeVersion = 2 };
enum KeyValueField : uint32_t { kKeyValueKey = 1, kKeyValueValue = 2 };
enum AnyValueField : uint32_t { kAnyValueString = 1 };
// Profile
enum ProfileField : uint32_t {
  kProfileSampleType = 1,  // ValueType (one)
  kProfileSamples = 2,
  kProfileTimeUnixNano = 3,  // fixed64
  kProfileDurationNano = 4,
  kProfilePeriodType = 5,
  kProfilePeriod = 6,
  kProfileProfileId = 7,  // 16 bytes
  kProfileAttributeIndices = 11,
};
enum ValueTypeField : uint32_t { kValueTypeType = 1, kValueTypeUnit = 2 };
enum SampleField : uint32_t { kSampleStackIndex = 1, kSampleAttributeIndices = 2, kSampleValues = 4 };
// ProfilesDictionary: every table's entry 0 is the zero value.
enum DictionaryField : uint32_t {
  kDictionaryMappings = 1,
  kDictionaryLocations = 2,
  kDictionaryFunctions = 3,
  kDictionaryLinks = 4,
  kDictionaryStrings = 5,
  kDictionaryAttributes = 6,
  kDictionaryStacks = 7,
};
enum MappingField : uint32_t {
  kMappingMemoryStart = 1,
  kMappingMemoryLimit = 2,
  kMappingFileOffset = 3,
  kMappingFilename = 4,
  kMappingAttributeIndices = 5,
};
enum LocationField : uint32_t {
  kLocationMappingIndex = 1,
  kLocationAddress = 2,
  kLocationLines = 3,
  kLocationAttributeIndices = 4,
};
enum LineField : uint32_t { kLineFunctionIndex = 1, kLineLine = 2 };
enum FunctionField : uint32_t { kFunctionName = 1, kFunctionSystemName = 2, kFunctionFilename = 3 };
enum StackField : uint32_t { kStackLocationIndices = 1 };
// KeyValueAndUnit (the dictionary's attribute table)
enum AttributeField : uint32_t { kAttributeKey = 1, kAttributeValue = 2, kAttributeUnit = 3 };

}  // namespace ehprof::otlp_fields

#endif  // EHPROF_AGENT_SINK_OTLP_FIELDS_H_
