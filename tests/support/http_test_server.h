#pragma once
// A small HTTP/1.1 server on 127.0.0.1 for the fetching tests: it serves routes the test sets
// up, honours `Range: bytes=N-`, and can misbehave on purpose (cut a transfer, declare a wrong
// size, stall, redirect, answer 404). One thread per connection; every request is recorded.
#include <atomic>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace yoloflow::test {

struct HttpRoute {
  std::string body;
  int status = 200;
  std::string location;      // a redirect's target (with status 301/302)
  long cut_after = -1;       // >= 0: declare the whole body, send this many bytes, close (once)
  long declared_size = -1;   // >= 0: Content-Length says this, whatever the body's size
  long stall_after = -1;     // >= 0: send this many bytes, then nothing until the client gives up
  bool ignore_range = false; // answer a range request with the whole body (200)
};

struct HttpRequest {
  std::string path;
  std::string range;  // the Range header's value, "" without one
};

class HttpTestServer {
 public:
  HttpTestServer();
  ~HttpTestServer();
  HttpTestServer(const HttpTestServer&) = delete;
  HttpTestServer& operator=(const HttpTestServer&) = delete;

  int port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  void route(const std::string& path, const HttpRoute& r);
  std::vector<HttpRequest> requests();

 private:
  void accept_loop();
  void serve(int fd);

  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::mutex mutex_;
  std::map<std::string, HttpRoute> routes_;
  std::vector<HttpRequest> requests_;
  std::vector<std::thread> connections_;
  std::thread acceptor_;
};

}  // namespace yoloflow::test
