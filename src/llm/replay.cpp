#include "llm/replay.hpp"

#include <nlohmann/json.hpp>

namespace kforge::llm {

replay::replay(const std::filesystem::path& transcript) : m_path(transcript) {
  std::ifstream in(transcript);
  if (!in)
    throw error(error_kind::bad_request,
                "replay: cannot read transcript " + transcript.string() + "; record one first");
  std::string line;
  for (int lineno = 1; std::getline(in, line); ++lineno) {
    if (line.empty()) continue;
    const auto j = nlohmann::json::parse(line, nullptr, false);
    if (!j.is_object() || !j.contains("request_hash") || !j["request_hash"].is_string() ||
        !(j.contains("response") || j.contains("error")))
      throw error(error_kind::bad_request, "replay: " + transcript.string() + ":" + std::to_string(lineno) +
                                               ": not a transcript entry (a truncated file?)");
    if (auto k = j.find("replay_key"); k != j.end() && k->is_string() && !k->get<std::string>().empty())
      m_by_key[k->get<std::string>()].push_back(line);
    else
      m_entries[j["request_hash"].get<std::string>()].push_back(line);
    ++m_total;
  }
}

response replay::complete(const request& req, const text_callback& on_text_delta) {
  const std::string hash = request_hash(req);
  std::string line;
  {
    std::lock_guard lock(m_mu);
    auto& table = req.replay_key.empty() ? m_entries : m_by_key;
    const std::string& key = req.replay_key.empty() ? hash : req.replay_key;
    auto it = table.find(key);
    if (it == table.end() || it->second.empty())
      throw error(error_kind::bad_request,
                  "replay: " + m_path.string() + " has no " +
                      (it == table.end() ? "recorded answer" : "further answer") + " for request " +
                      (req.replay_key.empty() ? hash.substr(0, 12) : "'" + req.replay_key + "'") + " (of " +
                      std::to_string(m_total) + " entries); the run asked something the recorded run did not");
    line = std::move(it->second.front());
    it->second.pop_front();
  }
  const auto j = nlohmann::json::parse(line);
  if (auto e = j.find("error"); e != j.end()) {
    const auto kind = error_kind_from_name(e->value("kind", "")).value_or(error_kind::server);
    throw error(kind, e->value("message", "") + " (replayed)", false, e->value("http_status", 0));
  }
  response r = response_from_json(j["response"]);
  if (on_text_delta && !r.text.empty()) on_text_delta(r.text);
  return r;
}

recording::recording(std::unique_ptr<provider> inner, const std::filesystem::path& transcript)
    : m_inner(std::move(inner)), m_out(transcript, std::ios::trunc) {
  if (!m_out)
    throw error(error_kind::bad_request, "recording: cannot write transcript " + transcript.string());
}

response recording::complete(const request& req, const text_callback& on_text_delta) {
  nlohmann::json entry{{"v", 1}, {"request_hash", request_hash(req)}, {"request", to_json(req)}};
  if (!req.replay_key.empty()) entry["replay_key"] = req.replay_key;
  auto write = [&] {
    std::lock_guard lock(m_mu);
    entry["index"] = m_index++;
    m_out << entry.dump() << '\n';
    m_out.flush(); // a killed run keeps every call it finished
  };
  try {
    response r = m_inner->complete(req, on_text_delta);
    entry["response"] = to_json(r);
    write();
    return r;
  } catch (const error& e) {
    entry["error"] = {{"kind", error_kind_name(e.kind())}, {"message", e.what()}, {"http_status", e.http_status()}};
    write();
    throw;
  }
}

std::unique_ptr<provider> make_recording(std::unique_ptr<provider> inner, const std::filesystem::path& transcript) {
  return std::make_unique<recording>(std::move(inner), transcript);
}

} // namespace kforge::llm
