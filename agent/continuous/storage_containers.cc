#include "agent/continuous/storage_containers.h"

#include <cstdint>

#include "absl/strings/str_cat.h"

namespace ehprof {
namespace {

// Far above any real value (a container's "metadata" is a few hundred
// bytes); a longer string is an attack on memory, not a container.
constexpr size_t kMaxStringBytes = size_t{1} << 20;
constexpr int kMaxDepth = 32;

bool ValidId(std::string_view id) {
  if (id.size() != 64) return false;
  for (char c : id) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

// podman's own rule for --name (libpod's NameRegex).
bool ValidName(std::string_view name) {
  if (name.empty() || name.size() > kMaxNameBytes) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool alnum = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
    if (!alnum && (i == 0 || (c != '_' && c != '.' && c != '-'))) return false;
  }
  return true;
}

void AppendUtf8(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xc0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3f)));
  } else {
    if (cp >= 0xd800 && cp <= 0xdfff) cp = 0xfffd;  // a lone surrogate half
    out->push_back(static_cast<char>(0xe0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3f)));
  }
}

class Scanner {
 public:
  explicit Scanner(std::string_view s) : s_(s) {}

  bool Eat(char c) {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\n' || s_[pos_] == '\r' || s_[pos_] == '\t')) ++pos_;
    if (pos_ < s_.size() && s_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  absl::Status Error(const char* what) const {
    return absl::InvalidArgumentError(absl::StrCat("containers.json: ", what, " at byte ", pos_));
  }
  bool AtEnd() {
    Eat(' ');
    return pos_ == s_.size();
  }

  // A string into *out (nullptr: skipped), escapes decoded.
  absl::Status String(std::string* out) {
    if (!Eat('"')) return Error("expected a string");
    std::string ignored;
    if (out == nullptr) out = &ignored;
    out->clear();
    while (pos_ < s_.size()) {
      if (out->size() > kMaxStringBytes) return Error("a string longer than 1 MiB");
      const char c = s_[pos_++];
      if (c == '"') return absl::OkStatus();
      if (static_cast<unsigned char>(c) < 0x20) return Error("a control character in a string");
      if (c != '\\') {
        out->push_back(c);
        continue;
      }
      if (pos_ >= s_.size()) break;
      const char e = s_[pos_++];
      if (e == 'u') {
        uint32_t cp = 0;
        for (int i = 0; i < 4; ++i, ++pos_) {
          if (pos_ >= s_.size()) return Error("a cut \\u escape");
          const char h = s_[pos_];
          const int v = h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10 : h >= 'A' && h <= 'F' ? h - 'A' + 10 : -1;
          if (v < 0) return Error("a bad \\u escape");
          cp = cp * 16 + static_cast<uint32_t>(v);
        }
        AppendUtf8(cp, out);
        continue;
      }
      const std::string_view from = "\"\\/bfnrt", to = "\"\\/\b\f\n\r\t";
      const size_t k = from.find(e);
      if (k == std::string_view::npos) return Error("a bad escape");
      out->push_back(to[k]);
    }
    return Error("an unterminated string");
  }

  // Any value, skipped.
  absl::Status Skip(int depth) {
    if (depth > kMaxDepth) return Error("nesting deeper than 32");
    Eat(' ');
    if (pos_ >= s_.size()) return Error("a missing value");
    const char c = s_[pos_];
    if (c == '"') return String(nullptr);
    if (c == '{' || c == '[') {
      ++pos_;
      const char close = c == '{' ? '}' : ']';
      if (Eat(close)) return absl::OkStatus();
      do {
        if (c == '{') {
          if (absl::Status s = String(nullptr); !s.ok()) return s;
          if (!Eat(':')) return Error("expected ':'");
        }
        if (absl::Status s = Skip(depth + 1); !s.ok()) return s;
      } while (Eat(','));
      return Eat(close) ? absl::OkStatus() : Error("expected ',' or the end of a list");
    }
    const size_t start = pos_;
    while (pos_ < s_.size() && (isalnum(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '-' ||
                                s_[pos_] == '+' || s_[pos_] == '.')) {
      ++pos_;
    }
    return pos_ > start ? absl::OkStatus() : Error("an unexpected character");
  }

 private:
  std::string_view s_;
  size_t pos_ = 0;
};

// One container object: its id and its first valid name.
absl::Status Container(Scanner& in, StorageContainer* c) {
  if (!in.Eat('{')) return in.Error("expected a container object");
  if (in.Eat('}')) return absl::OkStatus();
  std::string key, name;
  do {
    if (absl::Status s = in.String(&key); !s.ok()) return s;
    if (!in.Eat(':')) return in.Error("expected ':'");
    absl::Status s;
    if (key == "id") {
      s = in.String(&c->id);
    } else if (key == "names" && in.Eat('[')) {
      if (in.Eat(']')) continue;
      do {
        if (s = in.String(&name); !s.ok()) return s;
        if (c->name.empty() && ValidName(name)) c->name = name;
      } while (in.Eat(','));
      if (!in.Eat(']')) return in.Error("expected ',' or the end of the names");
    } else {
      s = in.Skip(1);
    }
    if (!s.ok()) return s;
  } while (in.Eat(','));
  return in.Eat('}') ? absl::OkStatus() : in.Error("expected ',' or the end of a container");
}

}  // namespace

absl::StatusOr<std::vector<StorageContainer>> ParseStorageContainers(std::string_view json) {
  if (json.size() > kMaxStorageFileBytes) return absl::ResourceExhaustedError("containers.json: over 64 MiB");
  Scanner in(json);
  std::vector<StorageContainer> out;
  if (!in.Eat('[')) return in.Error("expected a list of containers");
  if (!in.Eat(']')) {
    do {
      if (out.size() >= kMaxStorageContainers) return in.Error("more than 100,000 containers");
      StorageContainer c;
      if (absl::Status s = Container(in, &c); !s.ok()) return s;
      if (ValidId(c.id) && !c.name.empty()) out.push_back(std::move(c));
    } while (in.Eat(','));
    if (!in.Eat(']')) return in.Error("expected ',' or the end of the list");
  }
  if (!in.AtEnd()) return in.Error("text after the list");
  return out;
}

}  // namespace ehprof
