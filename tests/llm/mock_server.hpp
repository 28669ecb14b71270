#pragma once
// A local HTTP server for the llm tests (no network exists in CI): cpp-httplib bound to
// 127.0.0.1 on a free port, serving in a thread until the object is destroyed.
//   mock_server s;  s.svr.Post(R"(.*/chat/completions)", handler);  s.start();
//   provider_options o{.base_url = s.base_url()};
#include <httplib.h>

#include <chrono>
#include <string>
#include <string_view>
#include <thread>

namespace kforge::llm::test {

struct mock_server {
  httplib::Server svr;
  int port = 0;
  std::thread th;

  void start() {
    port = svr.bind_to_any_port("127.0.0.1"); // listening already: connections queue until accept
    th = std::thread([this] { svr.listen_after_bind(); });
  }
  ~mock_server() {
    svr.stop();
    if (th.joinable()) th.join();
  }
  [[nodiscard]] std::string base_url(std::string_view prefix = "") const {
    return "http://127.0.0.1:" + std::to_string(port) + std::string(prefix) + "/v1";
  }
};

// Streams `body` as an SSE response, `piece` bytes per write (1: byte by byte, so
// events arrive split anywhere), then ends the response.
inline void stream_sse(httplib::Response& res, std::string body, std::size_t piece = 1) {
  res.set_chunked_content_provider("text/event-stream", [body, piece](std::size_t, httplib::DataSink& sink) {
    for (std::size_t i = 0; i < body.size(); i += piece)
      if (!sink.write(body.data() + i, std::min(piece, body.size() - i))) return false;
    sink.done();
    return true;
  });
}

} // namespace kforge::llm::test
