#include "agent/output/output_pprof.h"

#include <zlib.h>

#include <algorithm>
#include <cstdint>
#include <deque>
#include <limits>
#include <string_view>
#include <tuple>
#include <utility>

#include "base/scoped_handle.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "agent/output/interned_profile.h"
#include "agent/output/pprof_fields.h"
#include "agent/output/protobuf_writer.h"

namespace ehprof {
namespace {

using namespace pprof_fields;  // NOLINT: the field names read as the schema's

// Every string in the profile is an index into one table whose entry 0
// must be "" (the proto3 default of an unset index). The model's strings
// are unique already; the table holds those a file uses, and the names of
// its sample types and labels, each once.
class StringTable {
 public:
  explicit StringTable(const InternedProfile& p) : p_(p), remap_(p.strings.size(), -1) { Index(""); }
  // A string of the writer's own (a copy is kept).
  int64_t Index(std::string_view s) {
    auto it = index_.find(s);
    if (it != index_.end()) return it->second;
    return Intern(own_.emplace_back(s));
  }
  // A string of the model.
  int64_t Of(uint32_t id) {
    if (id == 0) return 0;
    if (remap_[id] < 0) {
      auto it = index_.find(p_.strings[id]);
      remap_[id] = it != index_.end() ? it->second : Intern(p_.strings[id]);
    }
    return remap_[id];
  }
  const std::vector<std::string_view>& strings() const { return strings_; }

 private:
  // `s` outlives the table.
  int64_t Intern(std::string_view s) {
    index_.emplace(s, static_cast<int64_t>(strings_.size()));
    strings_.push_back(s);
    return static_cast<int64_t>(strings_.size() - 1);
  }

  const InternedProfile& p_;
  std::deque<std::string> own_;
  std::vector<int64_t> remap_;
  absl::flat_hash_map<std::string_view, int64_t> index_;
  std::vector<std::string_view> strings_;
};

// A model id -> the file's id (position + 1; 0 is reserved for "unset"),
// handed out in first seen order so the same input always gives the same
// bytes.
class IdMap {
 public:
  explicit IdMap(size_t n) : local_(n, 0) {}
  // Whether it was new.
  bool Map(uint32_t id, uint64_t* local) {
    const bool fresh = local_[id] == 0;
    if (fresh) {
      order_.push_back(id);
      local_[id] = order_.size();
    }
    *local = local_[id];
    return fresh;
  }
  const std::vector<uint32_t>& order() const { return order_; }

 private:
  std::vector<uint64_t> local_;
  std::vector<uint32_t> order_;
};

// The pprof file of some of a model's samples: only the mappings,
// locations, functions and strings they use.
class PprofEncoder {
 public:
  PprofEncoder(const InternedProfile& p, const PprofOptions& options)
      : p_(p), options_(options), strings_(p), mappings_(p.mappings.size()), functions_(p.functions.size()),
        locations_(p.locations.size()), bottoms_(p.mappings.size(), 0), has_lines_(p.mappings.size(), false),
        has_inline_(p.mappings.size(), false) {}

  absl::StatusOr<std::string> Encode(const std::vector<uint32_t>& samples) {
    const int64_t period = static_cast<int64_t>(1'000'000'000 / options_.frequency_hz);
    ProtobufWriter profile;
    ProtobufWriter msg;
    ProtobufWriter inner;

    auto value_type = [&](const std::string& type, const std::string& unit) {
      inner.Clear();
      inner.Int64(kValueTypeType, strings_.Index(type));
      inner.Int64(kValueTypeUnit, strings_.Index(unit));
      return inner;
    };
    const bool probe = !options_.count_type.empty();
    if (probe) {
      profile.Message(kProfileSampleType, value_type("samples", "count"));
      profile.Message(kProfileSampleType, value_type(options_.count_type, "count"));
      profile.Message(kProfilePeriodType, value_type(options_.count_type, "count"));
      profile.Int64(kProfilePeriod, static_cast<int64_t>(options_.count_period));
    } else {
      const bool in_ns = !options_.ns_type.empty();
      const std::string what = in_ns ? options_.ns_type : "cpu";
      profile.Message(kProfileSampleType, value_type(what == "off_cpu" ? "blocks" : "samples", "count"));
      profile.Message(kProfileSampleType, value_type(what, "nanoseconds"));
      profile.Message(kProfilePeriodType, value_type(what, "nanoseconds"));
      profile.Int64(kProfilePeriod, in_ns ? 1 : period);
    }
    if (options_.time_nanos != 0) profile.Int64(kProfileTimeNanos, options_.time_nanos);
    if (options_.duration_nanos != 0) {
      profile.Int64(kProfileDurationNanos, options_.duration_nanos);
    }

    const int64_t pid_key = strings_.Index("pid");
    const int64_t tid_key = strings_.Index("tid");
    const int64_t comm_key = strings_.Index("comm");
    constexpr auto kMaxValue = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
    std::vector<uint64_t> location_ids;
    for (uint32_t index : samples) {
      const InternedProfile::Sample& s = p_.samples[index];
      if (s.count == 0) continue;
      uint64_t nanos = s.weight_ns;
      const bool overflow =
          s.count > kMaxValue ||
          ((probe || options_.ns_type.empty()) &&
           __builtin_mul_overflow(s.count, probe ? options_.count_period : static_cast<uint64_t>(period),
                                  &nanos)) ||
          nanos > kMaxValue;
      if (overflow) {
        return absl::OutOfRangeError(absl::StrCat("pprof: sample count ", s.count, " too large"));
      }
      location_ids.clear();
      uint32_t bottom = UINT32_MAX;  // the mapping of the outermost user frame
      for (uint32_t loc : s.locations) {
        location_ids.push_back(Location(loc));
        if (p_.locations[loc].kind != InternedProfile::Kind::kKernel) bottom = p_.locations[loc].mapping;
      }
      if (bottom != UINT32_MAX) bottoms_[bottom] += s.count;
      msg.Clear();
      msg.PackedVarints(kSampleLocationId, location_ids);
      const uint64_t values[] = {s.count, nanos};
      msg.PackedVarints(kSampleValue, values);
      // pid 0 is never sampled: aggregated samples (ehprof agent) have none.
      if (s.pid != 0) {
        inner.Clear();
        inner.Int64(kLabelKey, pid_key);
        inner.Int64(kLabelNum, s.pid);
        msg.Message(kSampleLabel, inner);
        inner.Clear();
        inner.Int64(kLabelKey, tid_key);
        inner.Int64(kLabelNum, s.tid);
        msg.Message(kSampleLabel, inner);
      }
      inner.Clear();
      inner.Int64(kLabelKey, comm_key);
      inner.Int64(kLabelStr, strings_.Of(s.comm));
      msg.Message(kSampleLabel, inner);
      for (const auto& [k, v] : s.labels) {
        inner.Clear();
        inner.Int64(kLabelKey, strings_.Of(k));
        inner.Int64(kLabelStr, strings_.Of(v));
        msg.Message(kSampleLabel, inner);
      }
      profile.Message(kProfileSample, msg);
    }

    // Mapping ids in the order pprof should see them: the main binary
    // first (pprof takes the first mapping for it and titles the profile
    // "File: ..."; it holds the _start of most samples), the kernel last.
    std::vector<uint32_t> order = mappings_.order();
    std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
      const InternedProfile::Mapping &x = p_.mappings[a], &y = p_.mappings[b];
      if (x.kernel != y.kernel) return y.kernel;
      return bottoms_[a] > bottoms_[b];
    });
    std::vector<uint64_t> new_id(p_.mappings.size(), 0);
    for (size_t i = 0; i < order.size(); ++i) new_id[order[i]] = i + 1;
    for (size_t i = 0; i < order.size(); ++i) {
      const InternedProfile::Mapping& m = p_.mappings[order[i]];
      msg.Clear();
      msg.Varint(kMappingId, i + 1);
      if (m.limit > m.start) {
        msg.Varint(kMappingMemoryStart, m.start);
        msg.Varint(kMappingMemoryLimit, m.limit);
        msg.Varint(kMappingFileOffset, m.offset);
      }
      msg.Int64(kMappingFilename, strings_.Of(m.dso));
      const auto b = options_.build_ids.find(p_.strings[m.dso]);
      if (b != options_.build_ids.end() && !b->second.empty()) {
        msg.Int64(kMappingBuildId, strings_.Index(b->second));
      }
      msg.Bool(kMappingHasFunctions, true);
      if (has_lines_[order[i]]) {
        msg.Bool(kMappingHasFilenames, true);
        msg.Bool(kMappingHasLineNumbers, true);
      }
      if (has_inline_[order[i]]) msg.Bool(kMappingHasInlineFrames, true);
      profile.Message(kProfileMapping, msg);
    }

    const std::vector<uint32_t>& locations = locations_.order();
    for (size_t i = 0; i < locations.size(); ++i) {
      const InternedProfile::Location& loc = p_.locations[locations[i]];
      msg.Clear();
      msg.Varint(kLocationId, i + 1);
      msg.Varint(kLocationMappingId, new_id[loc.mapping]);
      msg.Varint(kLocationAddress, loc.address);
      for (uint32_t l = loc.first_line; l < loc.first_line + loc.num_lines; ++l) {
        const InternedProfile::Line& line = p_.lines[l];
        uint64_t function_id;
        functions_.Map(line.function, &function_id);
        inner.Clear();
        inner.Varint(kLineFunctionId, function_id);
        if (line.line != 0) inner.Int64(kLineLine, line.line);
        msg.Message(kLocationLine, inner);
      }
      profile.Message(kProfileLocation, msg);
    }

    const std::vector<uint32_t>& functions = functions_.order();
    for (size_t i = 0; i < functions.size(); ++i) {
      const InternedProfile::Function& fn = p_.functions[functions[i]];
      const int64_t name = strings_.Of(fn.name);
      msg.Clear();
      msg.Varint(kFunctionId, i + 1);
      msg.Int64(kFunctionName, name);
      // No separate mangled name: the symbolizer hands over one name.
      msg.Int64(kFunctionSystemName, name);
      if (fn.file != 0) msg.Int64(kFunctionFilename, strings_.Of(fn.file));
      profile.Message(kProfileFunction, msg);
    }

    // Last: every string above has been interned by now.
    for (std::string_view s : strings_.strings()) profile.Bytes(kProfileStringTable, s);
    return profile.data();
  }

 private:
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
