#include "llm/sse.hpp"

namespace kforge::llm {

void sse_parser::feed(std::string_view chunk, const handler& on_event) {
  for (char c : chunk) {
    if (m_after_cr) {
      m_after_cr = false;
      if (c == '\n') continue; // the \n of a \r\n
    }
    if (c == '\r' || c == '\n') {
      m_after_cr = (c == '\r');
      std::string l;
      l.swap(m_line);
      line(l, on_event);
    } else {
      m_line.push_back(c);
    }
  }
}

void sse_parser::line(std::string_view l, const handler& on_event) {
  if (l.empty()) { // blank line: dispatch
    sse_event e;
    std::swap(e, m_event);
    const bool has_data = m_has_data;
    m_has_data = false;
    m_event.id = e.id; // the last event id persists across events
    if (!has_data) return;
    if (!e.data.empty() && e.data.back() == '\n') e.data.pop_back();
    on_event(e);
    return;
  }
  if (l.front() == ':') return; // comment / keep-alive
  std::string_view field = l, value;
  if (const auto colon = l.find(':'); colon != std::string_view::npos) {
    field = l.substr(0, colon);
    value = l.substr(colon + 1);
    if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  }
  if (field == "data") {
    m_event.data.append(value);
    m_event.data.push_back('\n');
    m_has_data = true;
  } else if (field == "event") {
    m_event.event.assign(value);
  } else if (field == "id") {
    if (value.find('\0') == std::string_view::npos) m_event.id.assign(value);
  }
  // "retry" and unknown fields: ignored (reconnection is the retry layer's business).
}

} // namespace kforge::llm
