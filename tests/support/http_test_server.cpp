#include "support/http_test_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <stdexcept>

namespace yoloflow::test {
namespace {

bool send_all(int fd, const char* p, std::size_t n) {
  while (n > 0) {
    const ssize_t w = ::send(fd, p, n, MSG_NOSIGNAL);
    if (w <= 0) return false;
    p += w;
    n -= static_cast<std::size_t>(w);
  }
  return true;
}

std::string header_value(const std::string& head, const std::string& name) {
  std::string lower = head;
  for (auto& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  const auto at = lower.find("\r\n" + name + ":");
  if (at == std::string::npos) return "";
  auto start = at + 2 + name.size() + 1;
  while (start < head.size() && head[start] == ' ') ++start;
  return head.substr(start, head.find("\r\n", start) - start);
}

}  // namespace

HttpTestServer::HttpTestServer() {
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  if (listen_fd_ < 0 || ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 ||
      ::listen(listen_fd_, 16) != 0) {
    throw std::runtime_error("test HTTP server: cannot listen on 127.0.0.1");
  }
  socklen_t len = sizeof(a);
  ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&a), &len);
  port_ = ntohs(a.sin_port);
  acceptor_ = std::thread([this] { accept_loop(); });
}

HttpTestServer::~HttpTestServer() {
  stopping_ = true;
  ::shutdown(listen_fd_, SHUT_RDWR);
  ::close(listen_fd_);
  acceptor_.join();
  for (auto& t : connections_) t.join();
}

void HttpTestServer::route(const std::string& path, const HttpRoute& r) {
  std::lock_guard<std::mutex> lock(mutex_);
  routes_[path] = r;
}

std::vector<HttpRequest> HttpTestServer::requests() {
  std::lock_guard<std::mutex> lock(mutex_);
  return requests_;
}

void HttpTestServer::accept_loop() {
  while (!stopping_) {
    const int fd = ::accept(listen_fd_, nullptr, nullptr);
    if (fd < 0) {
      if (stopping_) return;
      continue;
    }
    std::lock_guard<std::mutex> lock(mutex_);
    connections_.emplace_back([this, fd] {
      serve(fd);
      ::close(fd);
    });
  }
}

void HttpTestServer::serve(int fd) {
  std::string head;
  char buf[4096];
  while (head.find("\r\n\r\n") == std::string::npos) {
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) return;
    head.append(buf, static_cast<std::size_t>(n));
  }
  const auto sp1 = head.find(' '), sp2 = head.find(' ', sp1 + 1);
  HttpRequest req{head.substr(sp1 + 1, sp2 - sp1 - 1), header_value(head, "range")};
  HttpRoute r;
  bool found = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    requests_.push_back(req);
    if (auto it = routes_.find(req.path); it != routes_.end()) {
      r = it->second;
      found = true;
      it->second.cut_after = -1;  // a cut happens once: the next request resumes
    }
  }
  std::string status = "200 OK", extra;
  std::string body = r.body;
  if (!found || r.status == 404) {
    status = "404 Not Found";
    body = "not found";
  } else if (r.status == 301 || r.status == 302) {
    status = std::to_string(r.status) + " Found";
    extra = "Location: " + r.location + "\r\n";
    body.clear();
  } else if (!req.range.empty() && !r.ignore_range) {
    const long from = std::stol(req.range.substr(req.range.find('=') + 1));
    if (from >= static_cast<long>(body.size())) {
      status = "416 Range Not Satisfiable";
      extra = "Content-Range: bytes */" + std::to_string(body.size()) + "\r\n";
      body.clear();
    } else {
      status = "206 Partial Content";
      extra = "Content-Range: bytes " + std::to_string(from) + "-" + std::to_string(body.size() - 1) + "/" +
              std::to_string(body.size()) + "\r\n";
      body = body.substr(static_cast<std::size_t>(from));
    }
  }
  const long declared = r.declared_size >= 0 ? r.declared_size : static_cast<long>(body.size());
  const std::string response_head = "HTTP/1.1 " + status + "\r\nContent-Length: " + std::to_string(declared) +
                                     "\r\nConnection: close\r\n" + extra + "\r\n";
  if (!send_all(fd, response_head.data(), response_head.size())) return;
  std::size_t n = body.size();
  if (r.cut_after >= 0) n = std::min(n, static_cast<std::size_t>(r.cut_after));
  if (r.stall_after >= 0) n = std::min(n, static_cast<std::size_t>(r.stall_after));
  if (!send_all(fd, body.data(), n)) return;
  if (r.stall_after >= 0) {
    // Nothing more until the client gives up (it closes: recv returns 0) or the server stops.
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    timeval tv{0, 100000};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    while (!stopping_ && std::chrono::steady_clock::now() < until) {
      const ssize_t got = ::recv(fd, buf, sizeof buf, 0);
      if (got == 0) break;
    }
  }
  ::shutdown(fd, SHUT_WR);
}

}  // namespace yoloflow::test
