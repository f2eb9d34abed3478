#include "symbolizer/xz_decompress.h"

#include <lzma.h>

#include <algorithm>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace ehprof {
namespace {

// Owns an lzma_stream's decoder state.
class LzmaStream {
 public:
  LzmaStream() = default;
  LzmaStream(const LzmaStream&) = delete;
  LzmaStream& operator=(const LzmaStream&) = delete;
  ~LzmaStream() { lzma_end(&strm_); }
  lzma_stream* get() { return &strm_; }

 private:
  lzma_stream strm_ = LZMA_STREAM_INIT;
};

// The decoder's own memory (dictionary) limit: xz's largest preset (-9,
// a 64 MiB dictionary) needs about 65 MiB to decode.
constexpr uint64_t kDecoderMemLimit = uint64_t{80} << 20;

}  // namespace

absl::StatusOr<std::vector<uint8_t>> XzDecompress(const std::string& name,
                                                  std::span<const uint8_t> input,
                                                  uint64_t max_output) {
  LzmaStream stream;
  lzma_stream* s = stream.get();
  if (lzma_stream_decoder(s, kDecoderMemLimit, 0) != LZMA_OK) {
    return absl::InternalError(absl::StrCat(name, ": cannot start the xz decoder"));
  }
  s->next_in = input.data();
  s->avail_in = input.size();
  std::vector<uint8_t> out;
  size_t chunk = std::max<size_t>(input.size() * 4, 64 << 10);
  while (true) {
    if (out.size() >= max_output) {
      return absl::ResourceExhaustedError(absl::StrCat(
          name, ": xz data decompresses to more than ", max_output, " bytes"));
    }
    size_t used = out.size();
    out.resize(std::min<uint64_t>(used + chunk, max_output));
    s->next_out = out.data() + used;
    s->avail_out = out.size() - used;
    // LZMA_FINISH: all the input is there, so running out of it is an error.
    lzma_ret ret = lzma_code(s, LZMA_FINISH);
    out.resize(out.size() - s->avail_out);
    if (ret == LZMA_STREAM_END) return out;
    if (ret == LZMA_MEMLIMIT_ERROR) {
      return absl::ResourceExhaustedError(absl::StrCat(
          name, ": xz data needs more than ", kDecoderMemLimit >> 20, " MiB to decode"));
    }
    if (ret != LZMA_OK) {
      return absl::InvalidArgumentError(
          absl::StrCat(name, ": corrupt xz data (liblzma error ", static_cast<int>(ret), ")"));
    }
    chunk = std::max<size_t>(out.size(), 64 << 10);  // grow geometrically
  }
}

}  // namespace ehprof
