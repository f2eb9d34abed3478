// Bounds-checked little-endian reader over an untrusted byte span.
//
// Reads past the end return 0 and set a sticky failure flag instead of
// branching out on every field: parsers read a whole record, then check
// ok() once. Nothing here ever touches memory outside [begin, end).
#ifndef EHPROF_BASE_BYTE_READER_H_
#define EHPROF_BASE_BYTE_READER_H_

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string_view>

namespace ehprof {

class ByteReader {
 public:
  ByteReader() = default;
  explicit ByteReader(std::span<const uint8_t> bytes)
      : begin_(bytes.data()), pos_(bytes.data()), end_(bytes.data() + bytes.size()) {}

  bool ok() const { return !failed_; }
  bool at_end() const { return pos_ >= end_; }
  size_t offset() const { return static_cast<size_t>(pos_ - begin_); }
  // Offset from the start of the outermost reader this one was cut from.
  uint64_t abs_offset() const { return origin_ + offset(); }
  size_t remaining() const { return static_cast<size_t>(end_ - pos_); }
  const uint8_t* pos() const { return pos_; }

  // Moves to an absolute offset; fails (and stays put) when out of range.
  void seek(size_t offset) {
    if (offset > static_cast<size_t>(end_ - begin_)) {
      failed_ = true;
      return;
    }
    pos_ = begin_ + offset;
  }
  void skip(uint64_t n) {
    if (n > remaining()) {
      failed_ = true;
      pos_ = end_;
      return;
    }
    pos_ += n;
  }
  // A sub-reader over the next n bytes, which this reader then skips.
  ByteReader sub(uint64_t n) {
    if (n > remaining()) {
      failed_ = true;
      pos_ = end_;
      return ByteReader::failed();
    }
    ByteReader r(std::span<const uint8_t>(pos_, static_cast<size_t>(n)));
    r.origin_ = abs_offset();
    pos_ += n;
    return r;
  }

  uint8_t u8() { return fixed<uint8_t>(); }
  uint16_t u16() { return fixed<uint16_t>(); }
  uint32_t u32() { return fixed<uint32_t>(); }
  uint64_t u64() { return fixed<uint64_t>(); }
  int8_t s8() { return static_cast<int8_t>(u8()); }
  int16_t s16() { return static_cast<int16_t>(u16()); }
  int32_t s32() { return static_cast<int32_t>(u32()); }
  int64_t s64() { return static_cast<int64_t>(u64()); }

  uint64_t uleb128() {
    uint64_t result = 0;
    unsigned shift = 0;
    while (pos_ < end_) {
      uint8_t b = *pos_++;
      if (shift < 64) result |= static_cast<uint64_t>(b & 0x7f) << shift;
      shift += 7;
      if (!(b & 0x80)) return result;
    }
    failed_ = true;
    return 0;
  }
  int64_t sleb128() {
    uint64_t result = 0;
    unsigned shift = 0;
    while (pos_ < end_) {
      uint8_t b = *pos_++;
      if (shift < 64) result |= static_cast<uint64_t>(b & 0x7f) << shift;
      shift += 7;
      if (!(b & 0x80)) {
        if (shift < 64 && (b & 0x40)) result |= ~uint64_t{0} << shift;
        return static_cast<int64_t>(result);
      }
    }
    failed_ = true;
    return 0;
  }
  // A NUL-terminated string; empty and failed when unterminated.
  std::string_view cstr() {
    const void* nul = std::memchr(pos_, 0, remaining());
    if (!nul) {
      failed_ = true;
      pos_ = end_;
      return {};
    }
    std::string_view s(reinterpret_cast<const char*>(pos_),
                       static_cast<const uint8_t*>(nul) - pos_);
    pos_ = static_cast<const uint8_t*>(nul) + 1;
    return s;
  }

 private:
  static ByteReader failed() {
    ByteReader r;
    r.failed_ = true;
    return r;
  }
  template <typename T>
  T fixed() {
    if (remaining() < sizeof(T)) {
      failed_ = true;
      pos_ = end_;
      return 0;
    }
    T v;
    std::memcpy(&v, pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }

  const uint8_t* begin_ = nullptr;
  const uint8_t* pos_ = nullptr;
  const uint8_t* end_ = nullptr;
  uint64_t origin_ = 0;
  bool failed_ = false;
};

}  // namespace ehprof

#endif  // EHPROF_BASE_BYTE_READER_H_
