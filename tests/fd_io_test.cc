// base/fd_io: whole reads and writes over pipes fed piecewise, an end of
// file, an offset, a signal in the middle of a read, and errors.
#include "base/fd_io.h"

#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <string>
#include <thread>

#include "base/unique_fd.h"
#include "gtest/gtest.h"

namespace ehprof {
namespace {

struct Pipe {
  UniqueFd read, write;
};

Pipe MakePipe() {
  int fds[2];
  EXPECT_EQ(::pipe(fds), 0);
  return {UniqueFd(fds[0]), UniqueFd(fds[1])};
}

TEST(FdIo, ReadFullGathersPiecesAndStopsAtTheEnd) {
  Pipe p = MakePipe();
  std::thread writer([&] {
    for (const char* piece : {"abc", "defg", "h"}) {
      ASSERT_TRUE(WriteFull(p.write.get(), piece, std::char_traits<char>::length(piece)));
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    p.write.reset();
  });
  char buf[16] = {};
  EXPECT_EQ(ReadFull(p.read.get(), buf, 6), 6);
  EXPECT_EQ(std::string(buf, 6), "abcdef");
  // Two bytes are left, then the end: fewer than asked, no error.
  EXPECT_EQ(ReadFull(p.read.get(), buf, 10), 2);
  EXPECT_EQ(std::string(buf, 2), "gh");
  EXPECT_EQ(ReadFull(p.read.get(), buf, 10), 0);
  writer.join();
}

TEST(FdIo, PreadFullReadsAtAnOffsetWithoutMovingThePosition) {
  UniqueFd fd(::memfd_create("fd_io_test", MFD_CLOEXEC));
  ASSERT_TRUE(fd.valid());
  ASSERT_TRUE(WriteFull(fd.get(), "0123456789", 10));
  ASSERT_EQ(::lseek(fd.get(), 2, SEEK_SET), 2);
  char buf[8] = {};
  EXPECT_EQ(PreadFull(fd.get(), buf, 4, 5), 4);
  EXPECT_EQ(std::string(buf, 4), "5678");
  EXPECT_EQ(PreadFull(fd.get(), buf, 8, 7), 3);  // past the end: what there is
  EXPECT_EQ(::lseek(fd.get(), 0, SEEK_CUR), 2);
}

TEST(FdIo, WriteFullPutsMoreThanAPipeHoldsAtOnce) {
  Pipe p = MakePipe();
  const std::string big(1 << 20, 'x');  // 16 pipe buffers' worth
  std::string got;
  std::thread reader([&] {
    char buf[4096];
    ssize_t n;
    while ((n = ::read(p.read.get(), buf, sizeof(buf))) > 0) got.append(buf, static_cast<size_t>(n));
  });
  EXPECT_TRUE(WriteFull(p.write.get(), big.data(), big.size()));
  p.write.reset();
  reader.join();
  EXPECT_EQ(got.size(), big.size());
}

void Ignore(int) {}

TEST(FdIo, ASignalInTheMiddleOfAReadIsRetried) {
  // No SA_RESTART: the blocked read(2) returns EINTR.
  struct sigaction sa = {}, old = {};
  sa.sa_handler = Ignore;
  ASSERT_EQ(sigaction(SIGUSR1, &sa, &old), 0);
  Pipe p = MakePipe();
  const pthread_t reader = pthread_self();
  std::thread other([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    pthread_kill(reader, SIGUSR1);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    ASSERT_TRUE(WriteFull(p.write.get(), "late", 4));
  });
  char buf[4];
  EXPECT_EQ(ReadFull(p.read.get(), buf, 4), 4);
  EXPECT_EQ(std::string(buf, 4), "late");
  other.join();
  sigaction(SIGUSR1, &old, nullptr);
}

TEST(FdIo, ErrorsAreSaidWithErrno) {
  char buf[4];
  errno = 0;
  EXPECT_EQ(ReadFull(-1, buf, 4), -1);
  EXPECT_EQ(errno, EBADF);
  EXPECT_EQ(PreadFull(-1, buf, 4, 0), -1);
  EXPECT_EQ(errno, EBADF);
  // A pipe nobody reads: EPIPE (SIGPIPE ignored, as ehprof does).
  struct sigaction sa = {}, old = {};
  sa.sa_handler = SIG_IGN;
  ASSERT_EQ(sigaction(SIGPIPE, &sa, &old), 0);
  Pipe p = MakePipe();
  p.read.reset();
  EXPECT_FALSE(WriteFull(p.write.get(), "x", 1));
  EXPECT_EQ(errno, EPIPE);
  sigaction(SIGPIPE, &old, nullptr);
}

}  // namespace
}  // namespace ehprof
