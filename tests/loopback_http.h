// A plain HTTP client for servers on 127.0.0.1 (the agent's metrics
// endpoint): connect, send a request as given, read until the server closes.
#ifndef EHPROF_TESTS_LOOPBACK_HTTP_H_
#define EHPROF_TESTS_LOOPBACK_HTTP_H_

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <string>

namespace ehprof::testing {

// A connected socket (blocking, 10 s receive timeout), or -1.
inline int ConnectLoopback(uint16_t port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const timeval tv{10, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(port);
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// Everything the server sends until it closes (or the timeout).
inline std::string ReadUntilClosed(int fd) {
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = recv(fd, buf, sizeof(buf), 0)) > 0;) out.append(buf, static_cast<size_t>(n));
  return out;
}

// `request` sent whole, the response ("" when it could not connect).
inline std::string LoopbackRequest(uint16_t port, const std::string& request) {
  const int fd = ConnectLoopback(port);
  if (fd < 0) return "";
  send(fd, request.data(), request.size(), MSG_NOSIGNAL);
  std::string out = ReadUntilClosed(fd);
  close(fd);
  return out;
}

}  // namespace ehprof::testing

#endif  // EHPROF_TESTS_LOOPBACK_HTTP_H_
