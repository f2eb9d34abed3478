#include "agent/output/output_pprof.h"

#include <zlib.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string_view>
#include <tuple>
#include <utility>

#include "base/scoped_handle.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "agent/output/interned_profile.h"
#include "agent/output/pprof_fields.h"
#include "agent/output/pprof_tables.h"
#include "agent/output/protobuf_writer.h"

namespace ehprof {
namespace {

using namespace pprof_fields;  // NOLINT: the field names read as the schema's
using pprof_tables::IdMap;
using pprof_tables::StringTable;

// The pprof file of some of a model's samples: only the mappings,
// locations, functions and strings they use.
class PprofEncoder {
 public:
  PprofEncoder(const InternedProfile& p, const PprofOptions& options)
      : p_(p), options_(options), strings_(p), mappings_(p.mappings.size()), functions_(p.functions.size()),
        locations_(p.locations.size()), bottoms_(p.mappings.size(), 0), has_lines_(p.mappings.size(), false),
        has_inline_(p.mappings.size(), false) {}

  // The steps in the file's order; strings last, once every other part has
  // interned its own.
  absl::StatusOr<std::string> Encode(const std::vector<uint32_t>& samples) {
    ProtobufWriter profile;
    WriteTypes(profile);
    const SampleLabelKeys keys{strings_.Index("pid"), strings_.Index("tid"), strings_.Index("comm")};
    for (uint32_t index : samples) {
      if (p_.samples[index].count == 0) continue;
      if (absl::Status s = WriteSample(p_.samples[index], keys, profile); !s.ok()) return s;
    }
    const std::vector<uint64_t> mapping_ids = WriteMappings(profile);
    WriteLocations(mapping_ids, profile);
    WriteFunctions(profile);
    for (std::string_view s : strings_.strings()) profile.Bytes(kProfileStringTable, s);
    return profile.data();
  }

 private:
  struct SampleLabelKeys {
    int64_t pid, tid, comm;
  };

  bool probe() const { return !options_.count_type.empty(); }
  int64_t period() const { return static_cast<int64_t>(1'000'000'000 / options_.frequency_hz); }

  const ProtobufWriter& ValueType(const std::string& type, const std::string& unit) {
    inner_.Clear();
    inner_.Int64(kValueTypeType, strings_.Index(type));
    inner_.Int64(kValueTypeUnit, strings_.Index(unit));
    return inner_;
  }

  // Sample and period types (a probe's counts, or CPU or off-CPU time), the
  // period, and the profile's time and duration when known.
  void WriteTypes(ProtobufWriter& profile) {
    if (probe()) {
      profile.Message(kProfileSampleType, ValueType("samples", "count"));
      profile.Message(kProfileSampleType, ValueType(options_.count_type, "count"));
      profile.Message(kProfilePeriodType, ValueType(options_.count_type, "count"));
      profile.Int64(kProfilePeriod, static_cast<int64_t>(options_.count_period));
    } else {
      const bool in_ns = !options_.ns_type.empty();
      const std::string what = in_ns ? options_.ns_type : "cpu";
      profile.Message(kProfileSampleType, ValueType(what == "off_cpu" ? "blocks" : "samples", "count"));
      profile.Message(kProfileSampleType, ValueType(what, "nanoseconds"));
      profile.Message(kProfilePeriodType, ValueType(what, "nanoseconds"));
      profile.Int64(kProfilePeriod, in_ns ? 1 : period());
    }
    if (options_.time_nanos != 0) profile.Int64(kProfileTimeNanos, options_.time_nanos);
    if (options_.duration_nanos != 0) {
      profile.Int64(kProfileDurationNanos, options_.duration_nanos);
    }
  }

  // The sample's second value: its weight in nanoseconds, or count times
  // the period. An error when either value does not fit pprof's int64.
  absl::StatusOr<uint64_t> SecondValue(const InternedProfile::Sample& s) const {
    constexpr auto kMaxValue = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
    uint64_t nanos = s.weight_ns;
    const bool overflow =
        s.count > kMaxValue ||
        ((probe() || options_.ns_type.empty()) &&
         __builtin_mul_overflow(s.count, probe() ? options_.count_period : static_cast<uint64_t>(period()),
                                &nanos)) ||
        nanos > kMaxValue;
    if (overflow) return absl::OutOfRangeError(absl::StrCat("pprof: sample count ", s.count, " too large"));
    return nanos;
  }

  void AddLabel(int64_t key, uint32_t field, int64_t value) {
    inner_.Clear();
    inner_.Int64(kLabelKey, key);
    inner_.Int64(field, value);
    msg_.Message(kSampleLabel, inner_);
  }

  // One sample: its locations (mapping them, and counting it for the
  // mapping of its outermost user frame), values and labels.
  absl::Status WriteSample(const InternedProfile::Sample& s, const SampleLabelKeys& keys,
                           ProtobufWriter& profile) {
    absl::StatusOr<uint64_t> nanos = SecondValue(s);
    if (!nanos.ok()) return nanos.status();
    location_ids_.clear();
    uint32_t bottom = UINT32_MAX;  // the mapping of the outermost user frame
    for (uint32_t loc : s.locations) {
      location_ids_.push_back(Location(loc));
      if (p_.locations[loc].kind != InternedProfile::Kind::kKernel) bottom = p_.locations[loc].mapping;
    }
    if (bottom != UINT32_MAX) bottoms_[bottom] += s.count;
    msg_.Clear();
    msg_.PackedVarints(kSampleLocationId, location_ids_);
    const uint64_t values[] = {s.count, *nanos};
    msg_.PackedVarints(kSampleValue, values);
    // pid 0 is never sampled: aggregated samples (ehprof agent) have none.
    if (s.pid != 0) {
      AddLabel(keys.pid, kLabelNum, s.pid);
      AddLabel(keys.tid, kLabelNum, s.tid);
    }
    AddLabel(keys.comm, kLabelStr, strings_.Of(s.comm));
    for (const auto& [k, v] : s.labels) AddLabel(strings_.Of(k), kLabelStr, strings_.Of(v));
    profile.Message(kProfileSample, msg_);
    return absl::OkStatus();
  }

  // The mappings the samples used, in the order pprof should see them: the
  // main binary first (pprof takes the first mapping for it and titles the
  // profile "File: ..."; it holds the _start of most samples), the kernel
  // last. Returns each model mapping's id in the file.
  std::vector<uint64_t> WriteMappings(ProtobufWriter& profile) {
    std::vector<uint32_t> order = mappings_.order();
    std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
      const InternedProfile::Mapping &x = p_.mappings[a], &y = p_.mappings[b];
      if (x.kernel != y.kernel) return y.kernel;
      return bottoms_[a] > bottoms_[b];
    });
    std::vector<uint64_t> new_id(p_.mappings.size(), 0);
    for (size_t i = 0; i < order.size(); ++i) {
      new_id[order[i]] = i + 1;
      const InternedProfile::Mapping& m = p_.mappings[order[i]];
      msg_.Clear();
      msg_.Varint(kMappingId, i + 1);
      if (m.limit > m.start) {
        msg_.Varint(kMappingMemoryStart, m.start);
        msg_.Varint(kMappingMemoryLimit, m.limit);
        msg_.Varint(kMappingFileOffset, m.offset);
      }
      msg_.Int64(kMappingFilename, strings_.Of(m.dso));
      const auto b = options_.build_ids.find(p_.strings[m.dso]);
      if (b != options_.build_ids.end() && !b->second.empty()) {
        msg_.Int64(kMappingBuildId, strings_.Index(b->second));
      }
      msg_.Bool(kMappingHasFunctions, true);
      if (has_lines_[order[i]]) {
        msg_.Bool(kMappingHasFilenames, true);
        msg_.Bool(kMappingHasLineNumbers, true);
      }
      if (has_inline_[order[i]]) msg_.Bool(kMappingHasInlineFrames, true);
      profile.Message(kProfileMapping, msg_);
    }
    return new_id;
  }

  // The locations the samples used, each with its lines (innermost first),
  // mapping the functions those name.
  void WriteLocations(const std::vector<uint64_t>& mapping_ids, ProtobufWriter& profile) {
    const std::vector<uint32_t>& locations = locations_.order();
    for (size_t i = 0; i < locations.size(); ++i) {
      const InternedProfile::Location& loc = p_.locations[locations[i]];
      msg_.Clear();
      msg_.Varint(kLocationId, i + 1);
      msg_.Varint(kLocationMappingId, mapping_ids[loc.mapping]);
      msg_.Varint(kLocationAddress, loc.address);
      for (uint32_t l = loc.first_line; l < loc.first_line + loc.num_lines; ++l) {
        const InternedProfile::Line& line = p_.lines[l];
        uint64_t function_id;
        functions_.Map(line.function, &function_id);
        inner_.Clear();
        inner_.Varint(kLineFunctionId, function_id);
        if (line.line != 0) inner_.Int64(kLineLine, line.line);
        msg_.Message(kLocationLine, inner_);
      }
      profile.Message(kProfileLocation, msg_);
    }
  }

  void WriteFunctions(ProtobufWriter& profile) {
    const std::vector<uint32_t>& functions = functions_.order();
    for (size_t i = 0; i < functions.size(); ++i) {
      const InternedProfile::Function& fn = p_.functions[functions[i]];
      const int64_t name = strings_.Of(fn.name);
      msg_.Clear();
      msg_.Varint(kFunctionId, i + 1);
      msg_.Int64(kFunctionName, name);
      // No separate mangled name: the symbolizer hands over one name.
      msg_.Int64(kFunctionSystemName, name);
      if (fn.file != 0) msg_.Int64(kFunctionFilename, strings_.Of(fn.file));
      profile.Message(kProfileFunction, msg_);
    }
  }

  uint64_t Location(uint32_t id) {
    uint64_t local;
    if (locations_.Map(id, &local)) {
      const InternedProfile::Location& loc = p_.locations[id];
      uint64_t unused;
      mappings_.Map(loc.mapping, &unused);
      for (uint32_t l = loc.first_line; l < loc.first_line + loc.num_lines; ++l) {
        has_lines_[loc.mapping] = has_lines_[loc.mapping] || p_.lines[l].line != 0;
      }
      if (loc.num_lines > 1) has_inline_[loc.mapping] = true;
    }
    return local;
  }

  const InternedProfile& p_;
  const PprofOptions& options_;
  StringTable strings_;
  IdMap mappings_, functions_, locations_;
  std::vector<uint64_t> bottoms_;
  std::vector<bool> has_lines_, has_inline_;
  // Scratch writers for a message and a message inside it, and a sample's
  // location ids: reused, so a sample allocates nothing once they have grown.
  ProtobufWriter msg_, inner_;
  std::vector<uint64_t> location_ids_;
};

}  // namespace

// windowBits 15 + 16 asks zlib for a gzip header and trailer instead of its
// own zlib wrapper: pprof (Go's compress/gzip) sniffs the gzip magic.
absl::Status WriteGzip(std::string_view data, std::ostream& out) {
  z_stream z{};
  if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    return absl::InternalError("pprof: deflateInit2 failed");
  }
  // Ended on every path out, once initialized.
  ScopedHandle<z_stream, deflateEnd> end_deflate(&z);
  char buf[1 << 16];
  // avail_in is 32-bit: feed large inputs in slices.
  constexpr size_t kMaxIn = 1u << 30;
  int rc = Z_OK;
  while (rc != Z_STREAM_END) {
    if (z.avail_in == 0 && !data.empty()) {
      const size_t n = std::min(data.size(), kMaxIn);
      z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
      z.avail_in = static_cast<uInt>(n);
      data.remove_prefix(n);
    }
    z.next_out = reinterpret_cast<Bytef*>(buf);
    z.avail_out = sizeof(buf);
    rc = deflate(&z, data.empty() ? Z_FINISH : Z_NO_FLUSH);
    if (rc != Z_OK && rc != Z_STREAM_END && rc != Z_BUF_ERROR) {
      return absl::InternalError(absl::StrCat("pprof: deflate failed: ", rc));
    }
    out.write(buf, static_cast<std::streamsize>(sizeof(buf) - z.avail_out));
  }
  if (!out) return absl::DataLossError("pprof: writing the output failed");
  return absl::OkStatus();
}

absl::Status WritePprof(const InternedProfile& profile, const std::vector<uint32_t>& samples,
                        std::ostream& out, const PprofOptions& options) {
  if (options.frequency_hz == 0 || options.frequency_hz > 1'000'000'000) {
    return absl::InvalidArgumentError(
        absl::StrCat("pprof: frequency_hz must be in [1, 1e9], got ", options.frequency_hz));
  }
  absl::StatusOr<std::string> encoded = PprofEncoder(profile, options).Encode(samples);
  if (!encoded.ok()) return encoded.status();
  return WriteGzip(*encoded, out);
}

absl::Status WritePprof(const std::vector<ResolvedSample>& samples, std::ostream& out,
                        const PprofOptions& options) {
  ProfileBuilder builder;
  std::vector<uint32_t> order;  // the samples in first seen order, each once
  for (const ResolvedSample& s : samples) {
    if (auto [index, fresh] = builder.Add(s); fresh) order.push_back(index);
  }
  return WritePprof(builder.Take(), order, out, options);
}

}  // namespace ehprof
