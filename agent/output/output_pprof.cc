#include "agent/output/output_pprof.h"

#include <zlib.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string_view>
#include <tuple>
#include <utility>

#include "base/scoped_handle.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "agent/output/pprof_fields.h"
#include "agent/output/protobuf_writer.h"

namespace ehprof {
namespace {

using namespace pprof_fields;  // NOLINT: the field names read as the schema's

std::string OrUnknown(const std::string& s) { return s.empty() ? "[unknown]" : s; }

// Every string in the profile is an index into one table whose entry 0
// must be "" (the proto3 default of an unset index).
class StringTable {
 public:
  StringTable() { Index(""); }
  int64_t Index(const std::string& s) {
    auto [it, inserted] = index_.try_emplace(s, static_cast<int64_t>(strings_.size()));
    if (inserted) strings_.push_back(s);
    return it->second;
  }
  const std::vector<std::string>& strings() const { return strings_; }

 private:
  absl::flat_hash_map<std::string, int64_t> index_;
  std::vector<std::string> strings_;
};

struct Mapping {
  int64_t filename = 0;
  int64_t build_id = 0;
  uint64_t start = 0, limit = 0, offset = 0;
  bool kernel = false;
  bool has_lines = false;
  bool has_inline = false;
  // Samples whose outermost user frame is in this mapping: the most common
  // one holds the profiled program's _start, and pprof takes the first
  // mapping for the main binary (it titles the profile "File: ...").
  uint64_t bottoms = 0;
};
struct Function {
  int64_t name = 0;
  int64_t filename = 0;
};
struct Line {
  uint64_t function_id = 0;
  int64_t line = 0;
  bool operator==(const Line&) const = default;
  template <typename H>
  friend H AbslHashValue(H h, const Line& l) {
    return H::combine(std::move(h), l.function_id, l.line);
  }
};
struct Location {
  uint64_t mapping_id = 0;
  uint64_t address = 0;
  std::vector<Line> lines;  // innermost inline first
};
struct Sample {
  std::vector<uint64_t> location_ids;  // leaf first
  uint32_t pid = 0;
  uint32_t tid = 0;
  int64_t comm = 0;
  std::vector<std::pair<int64_t, int64_t>> labels;  // key, value string ids
  uint64_t count = 0;
  uint64_t weight_ns = 0;
};

// Ids are positions + 1 (0 is reserved for "unset"), handed out in first
// seen order so the same input always gives the same bytes.
class ProfileBuilder {
 public:
  explicit ProfileBuilder(const PprofOptions& options) : options_(options) {}

  absl::Status Add(const ResolvedSample& sample) {
    if (sample.count == 0) return absl::OkStatus();
    std::vector<uint64_t> location_ids;
    uint64_t bottom_mapping = 0;  // of the outermost user frame
    const auto& frames = sample.frames;
    for (size_t i = 0; i < frames.size();) {
      // frames[i..end) is one Location: a run of inline expansions and the
      // frame they expand (the first one not marked inlined).
      size_t end = i;
      while (end + 1 < frames.size() && frames[end].inlined) ++end;
      ++end;
      const ResolvedFrame& base = frames[end - 1];
      const uint64_t mapping_id = MappingId(base);
      std::vector<Line> lines;
      for (size_t j = i; j < end; ++j) {
        const ResolvedFrame& f = frames[j];
        lines.push_back({FunctionId(OrUnknown(f.symbol), OrUnknown(f.dso), f.src_file), f.line});
        Mapping& m = mappings_[mapping_id - 1];
        m.has_lines = m.has_lines || f.line != 0;
        m.has_inline = m.has_inline || f.inlined;
      }
      const uint64_t address = base.runtime_addr != 0 ? base.runtime_addr : base.addr;
      location_ids.push_back(LocationId(mapping_id, address, std::move(lines)));
      if (!base.kernel) bottom_mapping = mapping_id;
      i = end;
    }
    if (bottom_mapping != 0) mappings_[bottom_mapping - 1].bottoms += sample.count;
    const int64_t comm = strings_.Index(sample.comm);
    std::vector<std::pair<int64_t, int64_t>> labels;
    for (const auto& [k, v] : sample.labels) labels.emplace_back(strings_.Index(k), strings_.Index(v));
    auto key = std::make_tuple(location_ids, sample.pid, sample.tid, comm, labels);
    auto [it, inserted] = sample_index_.try_emplace(std::move(key), samples_.size());
    if (inserted) {
      samples_.push_back({std::move(location_ids), sample.pid, sample.tid, comm, std::move(labels), 0});
    }
    uint64_t& count = samples_[it->second].count;
    uint64_t& weight_ns = samples_[it->second].weight_ns;
    if (__builtin_add_overflow(count, sample.count, &count) ||
        __builtin_add_overflow(weight_ns, sample.weight_ns, &weight_ns)) {
      return absl::OutOfRangeError("pprof: sample count overflows");
    }
    return absl::OkStatus();
  }

  absl::StatusOr<std::string> Encode() {
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
    for (const Sample& s : samples_) {
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
      msg.Clear();
      msg.PackedVarints(kSampleLocationId, s.location_ids);
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
      inner.Int64(kLabelStr, s.comm);
      msg.Message(kSampleLabel, inner);
      for (const auto& [k, v] : s.labels) {
        inner.Clear();
        inner.Int64(kLabelKey, k);
        inner.Int64(kLabelStr, v);
        msg.Message(kSampleLabel, inner);
      }
      profile.Message(kProfileSample, msg);
    }

    // Mapping ids in the order pprof should see them: the main binary
    // first, the kernel last.
    std::vector<uint64_t> order(mappings_.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](uint64_t a, uint64_t b) {
      const Mapping &x = mappings_[a], &y = mappings_[b];
      if (x.kernel != y.kernel) return y.kernel;
      return x.bottoms > y.bottoms;
    });
    std::vector<uint64_t> new_id(mappings_.size() + 1, 0);
    for (size_t i = 0; i < order.size(); ++i) new_id[order[i] + 1] = i + 1;
    for (size_t i = 0; i < order.size(); ++i) {
      const Mapping& m = mappings_[order[i]];
      msg.Clear();
      msg.Varint(kMappingId, i + 1);
      if (m.limit > m.start) {
        msg.Varint(kMappingMemoryStart, m.start);
        msg.Varint(kMappingMemoryLimit, m.limit);
        msg.Varint(kMappingFileOffset, m.offset);
      }
      msg.Int64(kMappingFilename, m.filename);
      if (m.build_id != 0) msg.Int64(kMappingBuildId, m.build_id);
      msg.Bool(kMappingHasFunctions, true);
      if (m.has_lines) {
        msg.Bool(kMappingHasFilenames, true);
        msg.Bool(kMappingHasLineNumbers, true);
      }
      if (m.has_inline) msg.Bool(kMappingHasInlineFrames, true);
      profile.Message(kProfileMapping, msg);
    }

    for (size_t i = 0; i < locations_.size(); ++i) {
      const Location& loc = locations_[i];
      msg.Clear();
      msg.Varint(kLocationId, i + 1);
      msg.Varint(kLocationMappingId, new_id[loc.mapping_id]);
      msg.Varint(kLocationAddress, loc.address);
      for (const Line& line : loc.lines) {
        inner.Clear();
        inner.Varint(kLineFunctionId, line.function_id);
        if (line.line != 0) inner.Int64(kLineLine, line.line);
        msg.Message(kLocationLine, inner);
      }
      profile.Message(kProfileLocation, msg);
    }

    for (size_t i = 0; i < functions_.size(); ++i) {
      msg.Clear();
      msg.Varint(kFunctionId, i + 1);
      msg.Int64(kFunctionName, functions_[i].name);
      // No separate mangled name: the symbolizer hands over one name.
      msg.Int64(kFunctionSystemName, functions_[i].name);
      if (functions_[i].filename != 0) msg.Int64(kFunctionFilename, functions_[i].filename);
      profile.Message(kProfileFunction, msg);
    }

    // Last: every string above has been interned by now.
    for (const std::string& s : strings_.strings()) profile.Bytes(kProfileStringTable, s);
    return profile.data();
  }

 private:
  // One per file and place it was mapped at: a file mapped by several
  // processes at different addresses is several mappings.
  uint64_t MappingId(const ResolvedFrame& f) {
    const std::string dso = OrUnknown(f.dso);
    auto key = std::make_tuple(dso, f.map_start, f.map_limit, f.map_offset);
    auto [it, inserted] = mapping_index_.try_emplace(std::move(key), mappings_.size() + 1);
    if (inserted) {
      Mapping m;
      m.filename = strings_.Index(dso);
      m.start = f.map_start;
      m.limit = f.map_limit;
      m.offset = f.map_offset;
      m.kernel = f.kernel;
      const auto b = options_.build_ids.find(dso);
      if (b != options_.build_ids.end() && !b->second.empty()) {
        m.build_id = strings_.Index(b->second);
      }
      mappings_.push_back(m);
    }
    return it->second;
  }

  // Keyed by dso too: the same name in two files (static functions, two
  // copies of an inline function) is two functions.
  uint64_t FunctionId(const std::string& name, const std::string& dso, const std::string& file) {
    auto [it, inserted] =
        function_index_.try_emplace(std::make_pair(name, dso), functions_.size() + 1);
    if (inserted) functions_.push_back({strings_.Index(name), 0});
    Function& fn = functions_[it->second - 1];
    if (fn.filename == 0 && !file.empty()) fn.filename = strings_.Index(file);
    return it->second;
  }

  // Keyed by the inline chain as well as the address: one address always
  // resolves to one chain in practice, but if it did not, merging would
  // silently attribute samples to the wrong function.
  uint64_t LocationId(uint64_t mapping_id, uint64_t address, std::vector<Line> lines) {
    auto key = std::make_tuple(mapping_id, address, lines);
    auto [it, inserted] = location_index_.try_emplace(std::move(key), locations_.size() + 1);
    if (inserted) locations_.push_back({mapping_id, address, std::move(lines)});
    return it->second;
  }

  const PprofOptions& options_;
  StringTable strings_;
  std::vector<Mapping> mappings_;
  std::vector<Function> functions_;
  std::vector<Location> locations_;
  std::vector<Sample> samples_;
  absl::flat_hash_map<std::tuple<std::string, uint64_t, uint64_t, uint64_t>, uint64_t>
      mapping_index_;
  absl::flat_hash_map<std::pair<std::string, std::string>, uint64_t> function_index_;
  absl::flat_hash_map<std::tuple<uint64_t, uint64_t, std::vector<Line>>, uint64_t>
      location_index_;
  absl::flat_hash_map<std::tuple<std::vector<uint64_t>, uint32_t, uint32_t, int64_t,
                                 std::vector<std::pair<int64_t, int64_t>>>,
                      size_t>
      sample_index_;
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

namespace {

template <typename Samples, typename Deref>
absl::Status WriteAll(const Samples& samples, Deref deref, std::ostream& out,
                      const PprofOptions& options) {
  if (options.frequency_hz == 0 || options.frequency_hz > 1'000'000'000) {
    return absl::InvalidArgumentError(
        absl::StrCat("pprof: frequency_hz must be in [1, 1e9], got ", options.frequency_hz));
  }
  ProfileBuilder builder(options);
  for (const auto& sample : samples) {
    if (absl::Status s = builder.Add(deref(sample)); !s.ok()) return s;
  }
  absl::StatusOr<std::string> encoded = builder.Encode();
  if (!encoded.ok()) return encoded.status();
  return WriteGzip(*encoded, out);
}

}  // namespace

absl::Status WritePprof(const std::vector<ResolvedSample>& samples, std::ostream& out,
                        const PprofOptions& options) {
  return WriteAll(samples, [](const ResolvedSample& s) -> const ResolvedSample& { return s; }, out,
                  options);
}

absl::Status WritePprof(const std::vector<const ResolvedSample*>& samples, std::ostream& out,
                        const PprofOptions& options) {
  return WriteAll(samples, [](const ResolvedSample* s) -> const ResolvedSample& { return *s; }, out,
                  options);
}

}  // namespace ehprof
