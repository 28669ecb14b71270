#pragma once
// Which LLMs a run uses: the [llm] table of kforge.toml, overridden by --llm on the
// command line, and the router that hands each role (ideas, code, fix) a weighted
// ensemble of providers. docs/llm.md describes the table.
//   llm::llm_config cfg = llm::load_llm_config("kforge.toml");
//   llm::apply_cli_models(cfg, {"anthropic:claude-sonnet-4-5*3", "openai:gpt-5-mini"});
//   llm::require_prices(cfg, cfg.budget);                  // usage.hpp
//   llm::ledger book(cfg.budget);
//   llm::router models(cfg, &book);                        // every call metered per role
//   std::mt19937_64 rng(seed);
//   llm::ensemble& team = models.for_role("ideas");
//   const std::size_t i = team.pick_index(rng);            // weighted, deterministic per seed
//   llm::request req = llm::with_defaults({.messages = {{llm::role::user, "..."}}}, team.entry(i), cfg);
//   llm::response r = team.at(i).complete(req);
//
// Every error in the file names the file, the key (e.g. llm.models[1].weight) and the
// reason, and throws kforge::error (usage). Unknown keys are errors, so a typo is never
// silently ignored.
//
// --llm SPEC (repeatable) replaces the default ensemble and every role's ensemble with
// the given models. SPEC is "scheme:model", optionally followed by "*WEIGHT", a number
// > 0 (default 1): --llm 'anthropic:claude-sonnet-4-5*3' --llm openai:gpt-5-mini picks
// Claude 3 times in 4. (Quote it: * is a shell glob character.) A spec also listed in
// kforge.toml keeps that entry's base_url, key_env, max_tokens and temperature.
// --base-url URL points every model at one server (a local one, usually); without it,
// $OPENAI_BASE_URL / $ANTHROPIC_BASE_URL serve entries that set no base_url.
#include "llm/provider.hpp"
#include "llm/usage.hpp"

#include <toml++/toml.h>

#include <array>
#include <cstddef>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

namespace kforge::llm {

/// The roles that ask an LLM: propose ideas, write code, fix code that failed.
inline constexpr std::array<std::string_view, 3> k_llm_roles{"ideas", "code", "fix"};

struct model_entry {
  std::string spec;          // "openai:MODEL", "anthropic:MODEL" or "replay:PATH"
  double weight = 1;         // relative chance of being picked in its ensemble, > 0
  std::string base_url;      // empty: the provider's own endpoint
  std::string key_env;       // empty: OPENAI_API_KEY / ANTHROPIC_API_KEY
  std::optional<int> max_tokens;     // empty: llm_config::max_tokens
  std::optional<double> temperature; // empty: llm_config::temperature
  std::optional<int> max_concurrency;   // empty: llm_config::max_concurrency
  std::optional<double> timeout_s;      // empty: llm_config::timeout_s
  std::optional<double> idle_timeout_s; // empty: llm_config::idle_timeout_s
};

// Defaults that suit the endpoint: a server on this machine (loopback base URL: llama.cpp,
// vLLM, Ollama) is slow and serves few streams at once; a hosted API is fast and parallel.
inline constexpr int k_max_tokens_hosted = 8192, k_max_tokens_local = 4096;
inline constexpr int k_max_concurrency_hosted = 8, k_max_concurrency_local = 1;
inline constexpr double k_idle_timeout_s = 120;       // no byte for this long ends a streamed attempt
inline constexpr double k_timeout_s_unstreamed = 600; // a non-streamed answer is silent until done

struct llm_config {
  // Defaults for every call; empty: the endpoint's default above.
  std::optional<int> max_tokens;
  std::optional<double> temperature; // empty: the provider's default
  bool stream = true;
  std::optional<int> max_concurrency; // calls in flight per endpoint (base URL)
  std::optional<double> timeout_s;    // whole-attempt limit; empty: none when streamed (idle_timeout_s
                                      // decides), k_timeout_s_unstreamed otherwise
  double idle_timeout_s = k_idle_timeout_s;
  std::string base_url; // --base-url: every model's endpoint (beats the entries' and the environment's)
  std::vector<model_entry> models;                          // default ensemble
  std::map<std::string, std::vector<model_entry>> roles;   // role -> its own ensemble
  std::map<std::string, price> prices;                      // spec -> USD per Mtok
  llm::budget budget;                                       // [llm.budget]
  std::filesystem::path source;                             // the file read, for messages
};

/// Reads the [llm] table of a parsed kforge.toml (`doc` is the whole document; other
/// top-level tables belong to other modules and are not looked at). No [llm] table gives
/// the defaults and no models.
/// @throws kforge::error (usage) "FILE:LINE:COL: key 'llm.models[1].weight': must be > 0, got 0"
[[nodiscard]] llm_config parse_llm_config(const toml::table& doc, const std::string& file);

/// Parses `path` and reads its [llm] table.
/// @throws kforge::error (usage) when the file cannot be read, is not TOML, or the table is wrong.
[[nodiscard]] llm_config load_llm_config(const std::filesystem::path& path);

/// Applies --llm SPEC[*WEIGHT] arguments (see the top of this file). No arguments: no change.
/// @throws kforge::error (usage) naming the argument when a spec or weight is malformed.
void apply_cli_models(llm_config& cfg, const std::vector<std::string>& specs);

/// What a command (optimize, suite) runs with: the file `config_flag` names (--config; it
/// must exist), else $KFORGE_CONFIG, else ./kforge.toml when there is one; then
/// `cli_models` (--llm) applied. @return nullopt when that leaves no model: no LLM.
/// @throws kforge::error (usage) for a missing --config file or a bad [llm] table.
[[nodiscard]] std::optional<llm_config> find_llm_config(const std::string& config_flag,
                                                        const std::vector<std::string>& cli_models);

/// @throws kforge::error (usage) "no LLM configured: ..." when some role would have no model.
void require_models(const llm_config& cfg);

/// `url` when it is an http:// or https:// URL. @throws kforge::error (usage) naming `where`.
[[nodiscard]] std::string checked_base_url(const std::string& url, std::string_view where);

/// The base URL an entry's calls go to: --base-url, else the entry's, else $OPENAI_BASE_URL /
/// $ANTHROPIC_BASE_URL for its scheme, else "" (the provider's own API).
[[nodiscard]] std::string base_url_for(const model_entry& e, const llm_config& cfg);

/// Whether a base URL names this machine (localhost, 127.0.0.0/8, [::1], 0.0.0.0).
[[nodiscard]] bool is_loopback_url(std::string_view url);

/// What make_provider gets for an entry: base URL (base_url_for), key_env, and the entry's
/// concurrency and timeouts, else the config's, else the endpoint's defaults.
[[nodiscard]] provider_options options_for(const model_entry& e, const llm_config& cfg);

/// `r` with max_tokens and stream set from the entry and the config, and temperature when
/// the entry or the config gives one (otherwise r's own is kept).
[[nodiscard]] request with_defaults(request r, const model_entry& e, const llm_config& cfg);

/// Makes the provider for an entry; the default calls make_provider(e.spec, options_for(e, cfg)).
using provider_factory = std::function<std::unique_ptr<provider>(const model_entry&)>;

/// Providers with weights; pick() chooses one at random in proportion to its weight.
class ensemble {
public:
  ensemble() = default;
  /// @pre entries.size() == providers.size(), weights > 0, no null provider
  ensemble(std::vector<model_entry> entries, std::vector<std::shared_ptr<provider>> providers);

  /// Weighted choice. The same rng state gives the same pick on every platform (no
  /// std::*_distribution, whose results differ between standard libraries).
  /// @throws kforge::error (usage) when the ensemble is empty.
  [[nodiscard]] std::size_t pick_index(std::mt19937_64& rng) const;
  [[nodiscard]] provider& pick(std::mt19937_64& rng) { return at(pick_index(rng)); }

  [[nodiscard]] provider& at(std::size_t i) { return *m_providers.at(i); }
  [[nodiscard]] const model_entry& entry(std::size_t i) const { return m_entries.at(i); }
  [[nodiscard]] std::size_t size() const { return m_entries.size(); }
  [[nodiscard]] bool empty() const { return m_entries.empty(); }

private:
  std::vector<model_entry> m_entries;
  std::vector<std::shared_ptr<provider>> m_providers;
  std::vector<double> m_cumulative; // running sums of the weights
};

/// One provider per entry, made by `factory` (default: make_provider).
/// @throws kforge::error (usage) when `entries` is empty; llm::error from the factory
///         (e.g. auth when an API key variable is unset).
[[nodiscard]] ensemble make_ensemble(const std::vector<model_entry>& entries, const llm_config& cfg,
                                     const provider_factory& factory = {});

/// Role name -> ensemble. Each role uses its own [llm.roles] list, else the default models.
/// A model (same spec, base_url and key_env) in several ensembles is made once and shared,
/// so a replay transcript is consumed once and an endpoint's limits apply across roles.
class router {
public:
  /// Makes every provider now, so a missing key fails at startup, not mid-run. With
  /// `book`, every provider is wrapped in a metered provider for its role and price
  /// (price_for), recording each call in `book`; `book` must outlive the router.
  /// @throws kforge::error (usage) when some role has no model (require_models);
  ///         llm::error from the factory.
  explicit router(const llm_config& cfg, ledger* book = nullptr, const provider_factory& factory = {});

  /// @throws kforge::error (internal) for a role not in k_llm_roles (a programming error:
  ///         the config only accepts those).
  [[nodiscard]] ensemble& for_role(std::string_view role);
  [[nodiscard]] const llm_config& config() const { return m_cfg; }

private:
  llm_config m_cfg;
  std::vector<std::shared_ptr<provider>> m_pool; // one per distinct model, owned here
  std::map<std::string, ensemble, std::less<>> m_roles;
};

} // namespace kforge::llm
