#include "agent/sink/otlp_profiles.h"

#include <cstdint>
#include <random>
#include <set>
#include <string_view>

#include "absl/container/flat_hash_map.h"
#include "absl/container/node_hash_map.h"
#include "absl/strings/match.h"
#include "agent/output/protobuf_writer.h"
#include "agent/resolve/frame_runtime_traits.h"
#include "agent/sink/otlp_fields.h"

namespace ehprof {
namespace {

using namespace otlp_fields;  // NOLINT: the field names read as the schema's

// The profile.frame.type attribute of a location (OpenTelemetry's
// semantic conventions for profiles).
std::string_view FrameType(const InternedProfile::Location& l) {
  if (const FrameRuntimeTraits* t = TraitsOf(l.runtime)) return t->otlp_type;
  return l.kind == InternedProfile::Kind::kKernel ? "kernel" : "native";
}

// A dictionary table: each distinct entry once, keyed by its own encoding
// (equal messages are equal entries); entry 0 is the empty message, the
// zero value an unset index points at.
class Table {
 public:
  Table() { Add(""); }
  int32_t Add(const std::string& encoded) {
    auto [it, inserted] = index_.try_emplace(encoded, static_cast<int32_t>(entries_.size()));
    if (inserted) entries_.push_back(&it->first);
    return it->second;
  }
  void WriteTo(uint32_t field, ProtobufWriter* out) const {
    for (const std::string* e : entries_) out->Bytes(field, *e);
  }

 private:
  absl::node_hash_map<std::string, int32_t> index_;  // keys do not move
  std::vector<const std::string*> entries_;
};

class Dictionary {
 public:
  int32_t String(std::string_view s) {
    auto [it, inserted] = string_index_.try_emplace(std::string(s), static_cast<int32_t>(strings_.size()));
    if (inserted) strings_.emplace_back(s);
    return it->second;
  }
  int32_t Attribute(std::string_view key, std::string_view value) {
    ProtobufWriter v, a;
    v.Bytes(kAnyValueString, value);
    a.Varint(kAttributeKey, String(key));
    a.Message(kAttributeValue, v);
    return attributes_.Add(a.data());
  }
  void ValueType(std::string_view type, std::string_view unit, ProtobufWriter* out) {
    out->Clear();
    out->Varint(kValueTypeType, String(type));
    out->Varint(kValueTypeUnit, String(unit));
  }
  // The stack of a sample (its locations leaf first); the model's
  // entries are encoded once each.
  int32_t Stack(const IntervalOutput& out, const InternedProfile::Sample& s) {
    std::vector<uint64_t> locations;
    locations.reserve(s.locations.size());
    for (uint32_t loc : s.locations) locations.push_back(static_cast<uint64_t>(Location(out, loc)));
    ProtobufWriter st;
    st.PackedVarints(kStackLocationIndices, locations);
    return stacks_.Add(st.data());
  }
  void WriteTo(ProtobufWriter* out) const {
    mappings_.WriteTo(kDictionaryMappings, out);
    locations_.WriteTo(kDictionaryLocations, out);
    functions_.WriteTo(kDictionaryFunctions, out);
    out->Bytes(kDictionaryLinks, "");  // link_table[0], the zero link
    for (const std::string& s : strings_) out->Bytes(kDictionaryStrings, s);
    attributes_.WriteTo(kDictionaryAttributes, out);
    stacks_.WriteTo(kDictionaryStacks, out);
  }

 private:
  // An index cached per model id (-1: not encoded yet).
  static int32_t& Cached(std::vector<int32_t>& cache, size_t size, uint32_t id) {
    if (cache.size() < size) cache.resize(size, -1);
    return cache[id];
  }
  int32_t Mapping(const IntervalOutput& out, uint32_t id) {
    int32_t& cached = Cached(mapping_of_, out.profile.mappings.size(), id);
    if (cached >= 0) return cached;
    const InternedProfile::Mapping& mp = out.profile.mappings[id];
    const std::string& dso = out.profile.strings[mp.dso];
    ProtobufWriter m;
    if (mp.limit != 0) {
      m.Varint(kMappingMemoryStart, mp.start);
      m.Varint(kMappingMemoryLimit, mp.limit);
      m.Varint(kMappingFileOffset, mp.offset);
    }
    m.Varint(kMappingFilename, String(dso.empty() ? "[unknown]" : dso));
    if (auto it = out.build_ids.find(dso); it != out.build_ids.end() && !it->second.empty()) {
      const uint64_t attr[] = {static_cast<uint64_t>(Attribute("process.executable.build_id.gnu", it->second))};
      m.PackedVarints(kMappingAttributeIndices, attr);
    }
    return cached = mappings_.Add(m.data());
  }
  int32_t Function(const IntervalOutput& out, uint32_t id) {
    int32_t& cached = Cached(function_of_, out.profile.functions.size(), id);
    if (cached >= 0) return cached;
    const InternedProfile::Function& f = out.profile.functions[id];
    ProtobufWriter fn;
    fn.Varint(kFunctionName, String(out.profile.strings[f.name]));
    if (f.file != 0) fn.Varint(kFunctionFilename, String(out.profile.strings[f.file]));
    return cached = functions_.Add(fn.data());
  }
  int32_t Location(const IntervalOutput& out, uint32_t id) {
    int32_t& cached = Cached(location_of_, out.profile.locations.size(), id);
    if (cached >= 0) return cached;
    const InternedProfile::Location& l = out.profile.locations[id];
    ProtobufWriter loc, line;
    loc.Varint(kLocationMappingIndex, Mapping(out, l.mapping));
    loc.Varint(kLocationAddress, l.address);
    for (uint32_t i = l.first_line; i < l.first_line + l.num_lines; ++i) {
      line.Clear();
      line.Varint(kLineFunctionIndex, Function(out, out.profile.lines[i].function));
      if (out.profile.lines[i].line != 0) line.Varint(kLineLine, out.profile.lines[i].line);
      loc.Message(kLocationLines, line);
    }
    const std::string_view type = FrameType(l);
    const uint64_t attr[] = {static_cast<uint64_t>(Attribute("profile.frame.type", type))};
    loc.PackedVarints(kLocationAttributeIndices, attr);
    return cached = locations_.Add(loc.data());
  }

  // The dictionary's index of each model mapping, function, location.
  std::vector<int32_t> mapping_of_, function_of_, location_of_;
  std::vector<std::string> strings_{""};
  absl::flat_hash_map<std::string, int32_t> string_index_{{"", 0}};
  Table attributes_, mappings_, locations_, functions_, stacks_;
};

void KeyValue(std::string_view key, std::string_view value, uint32_t field, ProtobufWriter* out) {
  ProtobufWriter v, kv;
  v.Bytes(kAnyValueString, value);
  kv.Bytes(kKeyValueKey, key);
  kv.Message(kKeyValueValue, v);
  out->Message(field, kv);
}

std::string ProfileId() {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  std::string id(16, '\0');
  for (int half = 0; half < 2; ++half) {
    uint64_t r = rng() | 1;  // never all zero (an invalid id)
    for (int i = 0; i < 8; ++i) id[half * 8 + i] = static_cast<char>(r >> (8 * i));
  }
  return id;
}

// One profile of a service's samples (all CPU or all off-CPU).
void Profile(const IntervalOutput& out, const std::vector<uint32_t>& samples, bool off_cpu,
             Dictionary* dict, ProtobufWriter* scope) {
  ProtobufWriter p, vt, msg;
  dict->ValueType(off_cpu ? "off_cpu" : "samples", off_cpu ? "nanoseconds" : "count", &vt);
  p.Message(kProfileSampleType, vt);
  dict->ValueType(off_cpu ? "off_cpu" : "cpu", "nanoseconds", &vt);
  p.Message(kProfilePeriodType, vt);
  const uint64_t hz = out.frequency_hz ? out.frequency_hz : 1;
  p.Varint(kProfilePeriod, off_cpu ? 1 : 1'000'000'000 / hz);
  p.Fixed64(kProfileTimeUnixNano, out.start_unix_ns);
  p.Varint(kProfileDurationNano, out.duration_ns);
  p.Bytes(kProfileProfileId, ProfileId());
  // Equal (stack, thread name) pairs are one sample.
  absl::flat_hash_map<std::pair<int32_t, int32_t>, uint64_t> merged;
  std::vector<std::pair<int32_t, int32_t>> order;
  for (uint32_t index : samples) {
    const InternedProfile::Sample& s = out.profile.samples[index];
    const uint64_t value = off_cpu ? s.weight_ns : s.count;
    if (value == 0) continue;
    auto key = std::make_pair(dict->Stack(out, s), dict->Attribute("thread.name", out.profile.strings[s.comm]));
    auto [it, inserted] = merged.try_emplace(key, 0);
    if (inserted) order.push_back(key);
    it->second += value;
  }
  for (const auto& key : order) {
    msg.Clear();
    msg.Varint(kSampleStackIndex, key.first);
    const uint64_t attr[] = {static_cast<uint64_t>(key.second)};
    msg.PackedVarints(kSampleAttributeIndices, attr);
    const uint64_t values[] = {merged[key]};
    msg.PackedVarints(kSampleValues, values);
    p.Message(kProfileSamples, msg);
  }
  scope->Message(kScopeProfilesProfiles, p);
}

}  // namespace

std::string EncodeOtlpProfiles(const IntervalOutput& out, const OtlpAttributes& common) {
  Dictionary dict;
  ProtobufWriter request;
  for (const auto& [service, samples] : out.by_service) {
    std::vector<uint32_t> cpu, off;
    std::set<std::string_view> comms;
    for (uint32_t i : samples) {
      const InternedProfile::Sample& s = out.profile.samples[i];
      (s.off_cpu ? off : cpu).push_back(i);
      comms.insert(out.profile.strings[s.comm]);
    }
    ProtobufWriter resource, scope, scope_id, rp;
    const ServiceSeries series = SplitSeriesKey(service);
    KeyValue("service.name", series.name, kResourceAttributes, &resource);
    for (const auto& [k, v] : series.labels) KeyValue(k, v, kResourceAttributes, &resource);
    if (auto name = out.container_names.find(service); name != out.container_names.end()) {
      KeyValue("container.name", name->second, kResourceAttributes, &resource);
    }
    if (comms.size() == 1) KeyValue("process.executable.name", *comms.begin(), kResourceAttributes, &resource);
    for (const auto& [k, v] : common) KeyValue(k, v, kResourceAttributes, &resource);
    scope_id.Bytes(kScopeName, "ehprof");
    scope.Message(kScopeProfilesScope, scope_id);
    if (!cpu.empty()) Profile(out, cpu, false, &dict, &scope);
    if (!off.empty()) Profile(out, off, true, &dict, &scope);
    rp.Message(kResourceProfilesResource, resource);
    rp.Message(kResourceProfilesScopeProfiles, scope);
    request.Message(kRequestResourceProfiles, rp);
  }
  ProtobufWriter d;
  dict.WriteTo(&d);
  request.Message(kRequestDictionary, d);
  return request.data();
}

}  // namespace ehprof
