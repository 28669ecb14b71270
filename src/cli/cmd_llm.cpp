// kforge llm ping: one tiny streamed request to each configured model, to learn before a
// search what the endpoint does: does it answer, how fast, does usage arrive in streams,
// does the system prompt reach the model (some chat templates drop it).
#include "cli/commands.hpp"
#include "core/error.hpp"
#include "llm/config.hpp"
#include "llm/provider.hpp"
#include "llm/usage.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cctype>
#include <chrono>
#include <iostream>
#include <optional>
#include <set>

namespace kforge::cli {

namespace {

// A word the model cannot guess: it can only answer it if it saw the system prompt.
constexpr std::string_view k_secret = "PERIWINKLE";

struct ping_result {
  std::string spec, base_url, model;
  std::optional<std::string> error, error_kind;
  bool ends_the_run = false;
  double first_token_s = 0, total_s = 0;
  int64_t output_tokens = 0;
  bool usage_in_stream = false, system_honoured = false, finished = false;
  std::string stop_reason, answer;
};

ping_result ping(const llm::model_entry& e, const llm::llm_config& cfg) {
  ping_result out;
  out.spec = e.spec;
  out.base_url = llm::base_url_for(e, cfg);
  llm::request req;
  req.system = fmt::format("The password is {}. When the user asks for the password, reply with the password "
                           "and nothing else.",
                           k_secret);
  req.messages = {{llm::role::user, "What is the password?"}};
  req = llm::with_defaults(std::move(req), e, cfg);
  req.max_tokens = 32;
  req.temperature = 0;
  req.stream = true;
  using clock = std::chrono::steady_clock;
  const auto t0 = clock::now();
  std::optional<clock::time_point> first;
  try {
    auto p = llm::make_provider(e.spec, llm::options_for(e, cfg));
    auto r = p->complete(req, [&](std::string_view) {
      if (!first) first = clock::now();
    });
    out.total_s = std::chrono::duration<double>(clock::now() - t0).count();
    out.first_token_s = first ? std::chrono::duration<double>(*first - t0).count() : out.total_s;
    out.model = r.model;
    out.usage_in_stream = r.usage.output_tokens > 0 || r.usage.input_tokens > 0;
    out.output_tokens = out.usage_in_stream ? r.usage.output_tokens : llm::estimate_tokens(r.text.size());
    out.stop_reason = r.stop_reason;
    out.finished = !r.stop_reason.empty();
    out.answer = r.text;
    std::string upper;
    for (char c : r.text) upper += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    out.system_honoured = upper.find(k_secret) != std::string::npos;
  } catch (const llm::error& err) {
    out.total_s = std::chrono::duration<double>(clock::now() - t0).count();
    out.error = err.what();
    out.error_kind = std::string(llm::error_kind_name(err.kind()));
    out.ends_the_run = llm::ends_the_run(err);
  }
  return out;
}

nlohmann::json to_json(const ping_result& r) {
  nlohmann::json j{{"spec", r.spec}, {"base_url", r.base_url}, {"total_s", r.total_s}};
  if (r.error) {
    j["ok"] = false;
    j["error"] = *r.error;
    j["error_kind"] = *r.error_kind;
    return j;
  }
  const double gen_s = r.total_s - r.first_token_s;
  j.update({{"ok", true},
            {"model", r.model},
            {"first_token_s", r.first_token_s},
            {"output_tokens", r.output_tokens},
            {"tokens_per_s", gen_s > 0 && r.output_tokens > 1 ? nlohmann::json(r.output_tokens / gen_s) : nullptr},
            {"usage_in_stream", r.usage_in_stream},
            {"finish_reason", r.stop_reason},
            {"system_prompt_honoured", r.system_honoured},
            {"answer", r.answer.substr(0, 200)}});
  return j;
}

void print(const ping_result& r) {
  std::cout << fmt::format("{}  ({})\n", r.spec, r.base_url.empty() ? "the provider's own API" : r.base_url);
  if (r.error) {
    std::cout << fmt::format("  FAILED   {}: {}\n", *r.error_kind, *r.error);
    return;
  }
  const double gen_s = r.total_s - r.first_token_s;
  std::cout << fmt::format("  model          {}\n", r.model.empty() ? "(not named in the answer)" : r.model);
  std::cout << fmt::format("  latency        {:.2f} s to the first token, {:.2f} s in all\n", r.first_token_s, r.total_s);
  if (gen_s > 0 && r.output_tokens > 1)
    std::cout << fmt::format("  speed          {:.1f} tokens/s ({} tokens{})\n", r.output_tokens / gen_s, r.output_tokens,
                             r.usage_in_stream ? "" : ", estimated");
  std::cout << fmt::format("  usage          {}\n",
                           r.usage_in_stream ? "sent in streams"
                                             : "NOT sent in streams: kforge estimates tokens from the text (about "
                                               "4 bytes a token) and marks them estimated");
  std::cout << fmt::format("  finish reason  {}\n",
                           r.finished ? r.stop_reason : "none (the server ended the stream without one)");
  std::cout << fmt::format("  system prompt  {}\n",
                           r.system_honoured
                               ? "reaches the model (the answer holds a word only the system prompt gave)"
                               : "NOT seen in the answer: the server's chat template may drop system prompts, or "
                                 "the model did not follow it; kforge's instructions live there");
  std::string shown = r.answer.substr(0, 120);
  for (char& c : shown)
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  std::cout << fmt::format("  answer         {}\n", shown);
}

} // namespace

command_fn add_llm_command(CLI::App& app, global_options& g) {
  auto* llm_cmd = app.add_subcommand("llm", "Check the configured LLM endpoints");
  llm_cmd->require_subcommand(1);
  auto* sub = llm_cmd->add_subcommand(
      "ping", "Send one tiny request to each model: latency, tokens/s, usage in streams, system prompt honoured");
  struct opts_t {
    std::vector<std::string> llm;
    std::string base_url, config;
  };
  auto o = std::make_shared<opts_t>();
  sub->add_option("--llm", o->llm, "Model as provider:model (repeatable; default: kforge.toml's models)");
  sub->add_option("--base-url", o->base_url, "Send the calls to this server, e.g. http://127.0.0.1:8080/v1");
  sub->add_option("--config", o->config, "Configuration file (default: $KFORGE_CONFIG, else ./kforge.toml)");
  sub->add_flag("--json", g.json, "Print one JSON object (kforge.llm-ping/1)");
  return [o, &g]() {
    auto cfg = llm::find_llm_config(o->config, o->llm);
    if (!cfg)
      KFORGE_THROW(usage, "no LLM configured: pass --llm openai:MODEL (with --base-url for a local server) or add "
                          "[llm] models to kforge.toml");
    if (!o->base_url.empty()) cfg->base_url = llm::checked_base_url(o->base_url, "--base-url");
    // Every distinct model of every role, once.
    std::vector<llm::model_entry> entries;
    std::set<std::string> seen;
    auto add = [&](const std::vector<llm::model_entry>& list) {
      for (const auto& e : list)
        if (!e.spec.starts_with("replay:") && seen.insert(e.spec + '\n' + llm::base_url_for(e, *cfg)).second)
          entries.push_back(e);
    };
    add(cfg->models);
    for (const auto& [role, list] : cfg->roles) add(list);
    if (entries.empty()) KFORGE_THROW(usage, "no model to ping: replay: models make no calls");
    std::vector<ping_result> results;
    for (const auto& e : entries) {
      results.push_back(ping(e, *cfg));
      if (!g.json) print(results.back());
    }
    bool failed = false, endpoint_wrong = false;
    nlohmann::json all = nlohmann::json::array();
    for (const auto& r : results) {
      failed |= r.error.has_value();
      endpoint_wrong |= r.ends_the_run;
      all.push_back(to_json(r));
    }
    if (g.json) std::cout << nlohmann::json{{"schema", "kforge.llm-ping/1"}, {"models", all}}.dump(2) << "\n";
    return endpoint_wrong ? exit_usage : failed ? exit_failed : exit_ok;
  };
}

} // namespace kforge::cli
