// A minimal protobuf wire-format encoder: enough to write profile.proto
// without pulling libprotobuf (and protoc) into the build for one message
// type. Fields are appended in call order; readers accept any order.
#ifndef EHPROF_AGENT_OUTPUT_PROTOBUF_WRITER_H_
#define EHPROF_AGENT_OUTPUT_PROTOBUF_WRITER_H_

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace ehprof {

class ProtobufWriter {
 public:
  // Wire type 0. Negative int64 values are written as their 64-bit two's
  // complement (10 bytes), as protobuf does for int64 (not zigzag/sint64).
  void Varint(uint32_t field, uint64_t value) {
    Tag(field, kVarint);
    RawVarint(value);
  }
  void Int64(uint32_t field, int64_t value) { Varint(field, static_cast<uint64_t>(value)); }
  void Bool(uint32_t field, bool value) { Varint(field, value ? 1 : 0); }
  // Wire type 1 (fixed64), little-endian.
  void Fixed64(uint32_t field, uint64_t value) {
    Tag(field, kFixed64);
    for (int i = 0; i < 8; ++i) data_.push_back(static_cast<char>(value >> (8 * i)));
  }

  // Wire type 2: strings, bytes and embedded messages.
  void Bytes(uint32_t field, std::string_view data) {
    Tag(field, kLengthDelimited);
    RawVarint(data.size());
    data_.append(data);
  }
  void Message(uint32_t field, const ProtobufWriter& message) { Bytes(field, message.data()); }

  // A packed repeated varint field: one length-delimited record instead of
  // a tag per element (proto3's default for repeated scalars). Nothing is
  // written for an empty list, which decodes as the empty list.
  void PackedVarints(uint32_t field, std::span<const uint64_t> values) {
    if (values.empty()) return;
    size_t size = 0;
    for (uint64_t v : values) size += VarintSize(v);
    Tag(field, kLengthDelimited);
    RawVarint(size);
    for (uint64_t v : values) RawVarint(v);
  }

  const std::string& data() const { return data_; }
  void Clear() { data_.clear(); }

  static size_t VarintSize(uint64_t value) {
    size_t n = 1;
    while (value >= 0x80) {
      value >>= 7;
      ++n;
    }
    return n;
  }

 private:
  static constexpr uint32_t kVarint = 0;
  static constexpr uint32_t kFixed64 = 1;
  static constexpr uint32_t kLengthDelimited = 2;

  void Tag(uint32_t field, uint32_t wire_type) {
    RawVarint((static_cast<uint64_t>(field) << 3) | wire_type);
  }
  void RawVarint(uint64_t value) {
    while (value >= 0x80) {
      data_.push_back(static_cast<char>((value & 0x7f) | 0x80));
      value >>= 7;
    }
    data_.push_back(static_cast<char>(value));
  }

  std::string data_;
};

}  // namespace ehprof

#endif  // EHPROF_AGENT_OUTPUT_PROTOBUF_WRITER_H_
