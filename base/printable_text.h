// Text from a process or a file it owns (comms, paths, Python names, JIT
// and ELF symbol names, cgroup names) made safe to leave the host and to
// print: valid UTF-8 with no control characters. Pyroscope refuses a whole
// push (every service's series) for one string that is not UTF-8, XML 1.0
// (the SVG) allows no C0 control but tab and newlines, the line formats
// (folded, perf script) break on a newline, and an escape sequence in a
// warning would reach the operator's terminal raw.
//
// Each byte that is not part of a valid UTF-8 sequence, and each byte of a
// C0 control (U+0000-U+001F), DEL (U+007F) or C1 control (U+0080-U+009F,
// which some terminals take as CSI), becomes the four ASCII characters
// "\xNN" (lower-case hex). Escapes rather than U+FFFD: two comms that
// differ only in invalid bytes stay two names, and the operator can tell
// which bytes the process had. Overlong forms, surrogates and code points
// past U+10FFFF are invalid (RFC 3629). Clean text is returned unchanged.
#ifndef EHPROF_BASE_PRINTABLE_TEXT_H_
#define EHPROF_BASE_PRINTABLE_TEXT_H_

#include <string>
#include <string_view>

namespace ehprof {

// Whether `s` is valid UTF-8 with no control character.
bool IsPrintableText(std::string_view s);
// `s` with each offending byte as \xNN (see above).
std::string PrintableText(std::string_view s);

}  // namespace ehprof

#endif  // EHPROF_BASE_PRINTABLE_TEXT_H_
