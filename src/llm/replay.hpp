#pragma once
// Deterministic re-runs: `recording` writes every call a provider answers to a
// transcript; `replay` answers from that transcript without any server.
//   auto live = llm::make_recording(llm::make_provider("openai:gpt-4o"), "run.llm.jsonl");
//   auto again = llm::make_provider("replay:run.llm.jsonl");   // same answers, offline
//
// Transcript: JSON lines, one per finished call, in the order calls finished:
//   {"v":1,"index":0,"request_hash":"<sha256>","request":{...},"response":{...}}
//   {"v":1,"index":1,"request_hash":"<sha256>","request":{...},"error":{"kind":"rate_limit","message":...}}
// Matching rule: a request with a replay_key takes the next unused entry recorded with
// that key ({"replay_key": ...} beside request_hash), whatever its prompt; otherwise by request_hash (llm::request_hash: model, system, messages,
// max_tokens, temperature, stop), and among entries with the same hash, in file order:
// the k-th call with a given request gets the k-th recorded answer to it. So parallel
// calls that finish in another order still replay the same answers, and sampling one
// prompt B times replays B different answers. A call beyond the recorded ones, or a
// request never recorded, throws llm::error (bad_request) naming the hash. A recorded
// error is thrown again, with its kind and message. A streaming call gets the whole
// text in one on_text_delta call.
#include "llm/provider.hpp"

#include <cstdint>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <string>

namespace kforge::llm {

class replay final : public provider {
public:
  /// @throws llm::error (bad_request) when the file cannot be read or a line is not a transcript entry.
  explicit replay(const std::filesystem::path& transcript);
  response complete(const request& req, const text_callback& on_text_delta = {}) override;
  std::string spec() const override { return "replay:" + m_path.string(); }

private:
  std::filesystem::path m_path;
  std::mutex m_mu;
  std::map<std::string, std::deque<std::string>> m_entries; // hash -> entry lines (JSON), file order
  std::map<std::string, std::deque<std::string>> m_by_key;  // replay_key -> entry lines, file order
  std::size_t m_total = 0;
};

class recording final : public provider {
public:
  /// Truncates `transcript`: one file holds one run.
  recording(std::unique_ptr<provider> inner, const std::filesystem::path& transcript);
  /// Forwards to the inner provider; records its response or error, then returns or rethrows it.
  response complete(const request& req, const text_callback& on_text_delta = {}) override;
  std::string spec() const override { return m_inner->spec(); }

private:
  std::unique_ptr<provider> m_inner;
  std::mutex m_mu;
  std::ofstream m_out;
  int64_t m_index = 0;
};

[[nodiscard]] std::unique_ptr<provider> make_recording(std::unique_ptr<provider> inner,
                                                       const std::filesystem::path& transcript);

} // namespace kforge::llm
