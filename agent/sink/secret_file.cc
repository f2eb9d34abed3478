#include "agent/sink/secret_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "base/fd_io.h"
#include "base/unique_fd.h"

namespace ehprof {
namespace {

// Far more than any header set or token; a bigger file is a wrong path.
constexpr size_t kMaxSecretFileBytes = 64 << 10;

absl::StatusOr<std::string> ReadWhole(const std::string& path, const std::string& flag) {
  const std::string what = absl::StrCat(flag, " ", path, ": ");
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
  if (!fd.valid()) {
    return absl::NotFoundError(what + (errno == ELOOP ? "a symbolic link: name the file itself" : std::strerror(errno)));
  }
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) return absl::NotFoundError(what + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) return absl::PermissionDeniedError(what + "not a regular file");
  if ((st.st_uid != 0 && st.st_uid != ::geteuid()) || (st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    return absl::PermissionDeniedError(absl::StrCat(
        what, "owned by uid ", st.st_uid, " with mode ", absl::Hex(st.st_mode & 07777),
        ": a secret file must be owned by root or uid ", ::geteuid(), " and writable by no group or other"));
  }
  std::string text(kMaxSecretFileBytes + 1, '\0');
  const ssize_t n = ReadFull(fd.get(), text.data(), text.size());
  if (n < 0) return absl::NotFoundError(what + std::strerror(errno));
  if (static_cast<size_t>(n) > kMaxSecretFileBytes) {
    return absl::InvalidArgumentError(absl::StrCat(what, "larger than ", kMaxSecretFileBytes, " bytes"));
  }
  text.resize(static_cast<size_t>(n));
  return text;
}

bool TokenChar(char c) {
  return absl::ascii_isalnum(static_cast<unsigned char>(c)) || std::strchr("!#$%&'*+-.^_`|~", c) != nullptr;
}

bool ValidHeader(absl::string_view line) {
  const size_t colon = line.find(':');
  if (colon == 0 || colon == absl::string_view::npos) return false;
  for (char c : line.substr(0, colon)) {
    if (!TokenChar(c)) return false;
  }
  for (char c : line.substr(colon + 1)) {
    if ((static_cast<unsigned char>(c) < 0x20 && c != '\t') || c == 0x7f) return false;
  }
  return true;
}

}  // namespace

absl::StatusOr<std::string> ReadSecretLine(const std::string& path, const std::string& flag) {
  absl::StatusOr<std::string> text = ReadWhole(path, flag);
  if (!text.ok()) return text.status();
  const std::string line(absl::StripAsciiWhitespace(absl::string_view(*text).substr(0, text->find('\n'))));
  if (line.empty()) return absl::InvalidArgumentError(absl::StrCat(flag, " ", path, ": the first line is empty"));
  return line;
}

absl::StatusOr<std::vector<std::string>> ReadHeaderFile(const std::string& path, const std::string& flag) {
  absl::StatusOr<std::string> text = ReadWhole(path, flag);
  if (!text.ok()) return text.status();
  std::vector<std::string> headers;
  size_t line_no = 0;
  for (absl::string_view line : absl::StrSplit(*text, '\n')) {
    ++line_no;
    absl::ConsumeSuffix(&line, "\r");
    if (absl::StripAsciiWhitespace(line).empty() || line[0] == '#') continue;
    if (!ValidHeader(line)) {
      return absl::InvalidArgumentError(
          absl::StrCat(flag, " ", path, ": line ", line_no, " is not 'Name: value' (content not shown)"));
    }
    headers.emplace_back(line);
  }
  if (headers.empty()) return absl::InvalidArgumentError(absl::StrCat(flag, " ", path, ": no header in it"));
  return headers;
}

}  // namespace ehprof
