// Numbers in text from a process or a file (names, /proc files, maps,
// perf maps, CLI values): never an exception, never a wrapped value. The
// standard library's std::stoi and friends throw on "no number" and on
// overflow (a program named python3.99999999999 once aborted the agent),
// and strtoul wraps and accepts signs and spaces; these accept exactly
// the digits of one number that fits T, or say no.
#ifndef EHPROF_BASE_PARSE_NUMBER_H_
#define EHPROF_BASE_PARSE_NUMBER_H_

#include <charconv>
#include <optional>
#include <string_view>
#include <type_traits>

namespace ehprof {

// The whole of `s` as an unsigned number in `base` (2-16; no sign, no
// prefix, no spaces): nullopt when it is empty, holds any other character,
// or does not fit in T.
template <typename T>
std::optional<T> ParseUnsigned(std::string_view s, int base = 10) {
  static_assert(std::is_integral_v<T>, "an integer type");
  if (s.empty() || s.front() == '-' || s.front() == '+') return std::nullopt;
  T v{};
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v, base);
  if (ec != std::errc() || end != s.data() + s.size() || v < T{}) return std::nullopt;
  return v;
}

// The run of decimal digits at the start of `s` as a T (nullopt: no digit,
// or more than T holds); `s` is advanced past the digits either way.
template <typename T>
std::optional<T> ConsumeDecimal(std::string_view* s) {
  size_t n = 0;
  while (n < s->size() && (*s)[n] >= '0' && (*s)[n] <= '9') ++n;
  std::optional<T> v = ParseUnsigned<T>(s->substr(0, n));
  s->remove_prefix(n);
  return v;
}

}  // namespace ehprof

#endif  // EHPROF_BASE_PARSE_NUMBER_H_
