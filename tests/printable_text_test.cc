// Strings from processes made printable before they leave the host
// (base/printable_text.h): the rules byte by byte, and the places every
// such string passes (ProfileBuilder::String, Warnings, folded stacks).
#include "base/printable_text.h"

#include <random>
#include <string>

#include "agent/output/interned_profile.h"
#include "agent/output/output_folded.h"
#include "base/warnings.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace ehprof {
namespace {

TEST(PrintableText, CleanTextIsKeptAsItIs) {
  for (const std::string s : {"", "fio", "std::vector<int>::push_back", "/usr/lib/x86_64-linux-gnu/libc.so.6",
                              "caf\xc3\xa9", "\xe6\x97\xa5\xe6\x9c\xac", "\xf0\x9f\x94\xa5 hot",
                              "\xef\xbf\xbd", "\xf4\x8f\xbf\xbf", "a\\xff"}) {
    EXPECT_TRUE(IsPrintableText(s)) << s;
    EXPECT_EQ(PrintableText(s), s);
  }
}

TEST(PrintableText, BytesThatAreNotUtf8BecomeEscapes) {
  EXPECT_EQ(PrintableText("\xff\xfe\xc3" "bad"), "\\xff\\xfe\\xc3bad");  // the comm of the issue
  EXPECT_EQ(PrintableText("\xc0\xaf"), "\\xc0\\xaf");                 // overlong '/'
  EXPECT_EQ(PrintableText("\xe0\x80\xaf"), "\\xe0\\x80\\xaf");        // overlong, 3 bytes
  EXPECT_EQ(PrintableText("\xf0\x80\x80\xaf"), "\\xf0\\x80\\x80\\xaf");  // overlong, 4 bytes
  EXPECT_EQ(PrintableText("\xed\xa0\x80"), "\\xed\\xa0\\x80");        // a UTF-16 surrogate
  EXPECT_EQ(PrintableText("\xf4\x90\x80\x80"), "\\xf4\\x90\\x80\\x80");  // past U+10FFFF
  EXPECT_EQ(PrintableText("ab\xe6\x97"), "ab\\xe6\\x97");             // cut short at the end
  EXPECT_EQ(PrintableText("\xe6\x97x"), "\\xe6\\x97x");               // cut short by an ASCII byte
  EXPECT_EQ(PrintableText("\x80x"), "\\x80x");                        // a lone continuation byte
  EXPECT_FALSE(IsPrintableText("\xff"));
}

TEST(PrintableText, ControlCharactersBecomeEscapes) {
  EXPECT_EQ(PrintableText("\x1b[2Jx"), "\\x1b[2Jx");  // clears a terminal
  EXPECT_EQ(PrintableText("a\nb\tc\r"), "a\\x0ab\\x09c\\x0d");
  EXPECT_EQ(PrintableText(std::string("a\0b", 3)), "a\\x00b");
  EXPECT_EQ(PrintableText("\x7f"), "\\x7f");
  EXPECT_EQ(PrintableText("\xc2\x9b" "2J"), "\\xc2\\x9b2J");  // C1 CSI, valid UTF-8 but a control
  EXPECT_EQ(PrintableText("\xc2\xa0"), "\xc2\xa0");           // U+00A0 is not a control
}

// Whatever the bytes, the result is printable and clean text is a fixed
// point: 20,000 random strings, biased towards bytes >= 0x80.
TEST(PrintableText, AnyBytesGivePrintableText) {
  std::mt19937 rng(31);
  for (int i = 0; i < 20000; ++i) {
    std::string s(rng() % 12, '\0');
    for (char& c : s) c = static_cast<char>(rng() % 3 ? 0x80 + rng() % 0x80 : rng() % 0x80);
    const std::string p = PrintableText(s);
    ASSERT_TRUE(IsPrintableText(p)) << p;
    ASSERT_EQ(PrintableText(p), p);
    ASSERT_EQ(IsPrintableText(s), p == s);
  }
}

ResolvedSample HostileSample() {
  ResolvedSample s;
  s.comm = "\xff\xfe\xc3" "bad";
  s.pid = s.tid = 7;
  ResolvedFrame leaf;
  leaf.symbol = "evil\x1b[2J";
  leaf.dso = "/tmp/\xff/libx.so";
  leaf.src_file = "a\nb.py";
  leaf.runtime = FrameRuntime::kPython;
  s.frames = {leaf};
  s.labels = {{"k\xff", "v\x01"}};
  return s;
}

// Every string of a profile is interned through ProfileBuilder::String,
// so every writer, push and export sees printable ones only.
TEST(PrintableText, EveryStringOfAProfileIsPrintable) {
  const InternedProfile p = BuildProfile({HostileSample()});
  for (const std::string& s : p.strings) EXPECT_TRUE(IsPrintableText(s)) << s;
  ASSERT_EQ(p.samples.size(), 1u);
  EXPECT_EQ(p.strings[p.samples[0].comm], "\\xff\\xfe\\xc3bad");
  const std::vector<FrameView> frames = Frames(p, p.samples[0]);
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0].symbol, "evil\\x1b[2J");
  EXPECT_EQ(frames[0].dso, "/tmp/\\xff/libx.so");
  EXPECT_EQ(frames[0].src_file, "a\\x0ab.py");
  ASSERT_EQ(p.samples[0].labels.size(), 1u);
  EXPECT_EQ(p.strings[p.samples[0].labels[0].first], "k\\xff");
  EXPECT_EQ(p.strings[p.samples[0].labels[0].second], "v\\x01");
}

TEST(PrintableText, FoldedStacksOfResolvedSamplesArePrintable) {
  const std::string line = FoldedStack(HostileSample(), FoldedOptions());
  EXPECT_TRUE(IsPrintableText(line)) << line;
  EXPECT_EQ(line.find('\n'), std::string::npos);
  EXPECT_NE(line.find("\\xff\\xfe\\xc3bad"), std::string::npos) << line;
}

TEST(PrintableText, WarningsReachTheTerminalEscaped) {
  Warnings w;
  w.Add("/tmp/\x1b[2J\n/x: no symbols");
  w.AddOnce("topic", "\xff");
  EXPECT_THAT(w.Take(), ::testing::ElementsAre("/tmp/\\x1b[2J\\x0a/x: no symbols", "\\xff"));
}

}  // namespace
}  // namespace ehprof
