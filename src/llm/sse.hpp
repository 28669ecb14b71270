#pragma once
// Incremental Server-Sent Events parser (WHATWG rules): feed it the body in chunks of
// any size, split anywhere, and it calls back once per complete event.
//   llm::sse_parser p;  p.feed(chunk, [&](const llm::sse_event& e) { use(e.event, e.data); });
// Lines end with \n, \r\n or \r (a \r\n split across two chunks counts once); a blank
// line ends an event; "data:" lines are joined with \n; lines starting with ':' are
// comments (keep-alives); one space after the colon is dropped; unknown fields are
// ignored. An event with no data line is not dispatched; a partial event at end of
// stream is dropped, as the standard says.
#include <functional>
#include <string>
#include <string_view>

namespace kforge::llm {

struct sse_event {
  std::string event;  // empty when the server sent no "event:" (the standard's "message")
  std::string data;
  std::string id;
};

class sse_parser {
public:
  using handler = std::function<void(const sse_event&)>;
  /// Parses `chunk`, calling `on_event` for each event it completes. An exception from
  /// `on_event` propagates; the parser is then in an unspecified state.
  void feed(std::string_view chunk, const handler& on_event);

private:
  void line(std::string_view l, const handler& on_event);

  std::string m_line;        // the current, unfinished line
  bool m_after_cr = false;   // last byte was \r: a following \n belongs to the same line end
  sse_event m_event;         // fields of the event being built
  bool m_has_data = false;
};

} // namespace kforge::llm
