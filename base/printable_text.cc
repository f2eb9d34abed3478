#include "base/printable_text.h"

#include <cstdint>

namespace ehprof {
namespace {

// The length of the valid, printable UTF-8 sequence at s[i], or 0 when
// s[i] must be escaped.
size_t PrintableAt(std::string_view s, size_t i) {
  const auto b = [&](size_t k) { return static_cast<uint8_t>(s[i + k]); };
  const uint8_t c = b(0);
  if (c < 0x20 || c == 0x7f) return 0;
  if (c < 0x80) return 1;
  size_t n;
  uint32_t cp;
  if (c >= 0xc2 && c <= 0xdf) {
    n = 2, cp = c & 0x1f;
  } else if (c >= 0xe0 && c <= 0xef) {
    n = 3, cp = c & 0x0f;
  } else if (c >= 0xf0 && c <= 0xf4) {
    n = 4, cp = c & 0x07;
  } else {
    return 0;  // a continuation byte, 0xc0/0xc1 (overlong) or 0xf5 and up
  }
  if (s.size() - i < n) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((b(k) & 0xc0) != 0x80) return 0;
    cp = (cp << 6) | (b(k) & 0x3f);
  }
  const bool overlong = (n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000);
  const bool surrogate = cp >= 0xd800 && cp <= 0xdfff;
  const bool c1 = cp >= 0x80 && cp <= 0x9f;
  if (overlong || surrogate || c1 || cp > 0x10ffff) return 0;
  return n;
}

}  // namespace

bool IsPrintableText(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const size_t n = PrintableAt(s, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

std::string PrintableText(std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    if (const size_t n = PrintableAt(s, i); n > 0) {
      out.append(s.substr(i, n));
      i += n;
      continue;
    }
    const auto c = static_cast<uint8_t>(s[i++]);
    out += "\\x";
    out += kHex[c >> 4];
    out += kHex[c & 0xf];
  }
  return out;
}

}  // namespace ehprof
