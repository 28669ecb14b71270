#include "llm/config.hpp"

#include "core/error.hpp"
#include "core/text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstdlib>
#include <cmath>
#include <fstream>
#include <initializer_list>
#include <sstream>

namespace kforge::llm {

namespace {

namespace fs = std::filesystem;
using keys = std::initializer_list<std::string_view>;

constexpr std::array<std::string_view, 3> k_schemes{"openai", "anthropic", "replay"};

template <class Range> std::string join(const Range& r) {
  std::string out;
  for (const auto& s : r) out += (out.empty() ? "" : ", ") + std::string(s);
  return out;
}

/// "; did you mean 'X'?" for the candidate nearest `word` (edit distance 2 at most), else
/// for one that `word` begins ("max_cost" -> "max_cost_usd"), else "".
template <class Range> std::string did_you_mean(std::string_view word, const Range& candidates) {
  std::string best;
  std::size_t best_d = 3;
  for (std::string_view c : candidates) {
    const std::size_t d = edit_distance(word, c);
    if (d < best_d && d < std::max(word.size(), c.size())) best_d = d, best = c;
  }
  if (best.empty() && word.size() >= 3)
    for (std::string_view c : candidates)
      if (c.starts_with(word)) {
        best = c;
        break;
      }
  return best.empty() ? "" : "; did you mean '" + best + "'?";
}

/// Why `spec` is not a model spec, or "" when it is one.
std::string spec_problem(std::string_view spec) {
  const auto colon = spec.find(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 == spec.size())
    return fmt::format("'{}' is not a model spec; write openai:MODEL, anthropic:MODEL or replay:PATH", spec);
  const std::string_view scheme = spec.substr(0, colon);
  if (std::find(k_schemes.begin(), k_schemes.end(), scheme) != k_schemes.end()) return "";
  return fmt::format("unknown provider '{}' in '{}' (known: {}){}", scheme, spec, join(k_schemes),
                     did_you_mean(scheme, k_schemes));
}

bool is_http_url(std::string_view u) { return u.starts_with("http://") || u.starts_with("https://"); }

bool valid_env_name(std::string_view s) {
  if (s.empty() || (s[0] >= '0' && s[0] <= '9')) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  });
}

/// A key as TOML writes it: bare when it can be, quoted otherwise ("anthropic:claude").
std::string key_part(std::string_view k) {
  const bool bare = !k.empty() && std::all_of(k.begin(), k.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
  });
  return bare ? std::string(k) : "\"" + std::string(k) + "\"";
}

std::string sub(const std::string& prefix, std::string_view key) { return prefix + "." + key_part(key); }

const char* type_name(const toml::node& n) {
  switch (n.type()) {
  case toml::node_type::table: return "a table";
  case toml::node_type::array: return "an array";
  case toml::node_type::string: return "a string";
  case toml::node_type::integer: return "an integer";
  case toml::node_type::floating_point: return "a float";
  case toml::node_type::boolean: return "a boolean";
  default: return "a date or time";
  }
}

std::string no_models_message(std::string_view detail) {
  return fmt::format("no LLM configured{}: add [llm] models to kforge.toml or pass --llm provider:model "
                     "(e.g. --llm anthropic:claude-sonnet-4-5)",
                     detail);
}

// Reads the [llm] table of one file; every failure names the file, the key and the reason.
class reader {
public:
  explicit reader(std::string file) : m_file(std::move(file)) {}

  [[noreturn]] void fail(const toml::source_region& where, const std::string& key, std::string_view reason) const {
    if (where.begin.line > 0)
      KFORGE_THROW(usage, "{}:{}:{}: key '{}': {}", m_file, where.begin.line, where.begin.column, key, reason);
    KFORGE_THROW(usage, "{}: key '{}': {}", m_file, key, reason);
  }

  void check_keys(const toml::table& t, const std::string& prefix, keys known) const {
    for (auto&& [k, v] : t) {
      if (std::find(known.begin(), known.end(), k.str()) != known.end()) continue;
      const std::string hint = did_you_mean(k.str(), known);
      fail(k.source().begin.line > 0 ? k.source() : v.source(), sub(prefix, k.str()),
           hint.empty() ? "unknown key (known keys: " + join(known) + ")" : "unknown key" + hint);
    }
  }

  const toml::table& table(const toml::node& n, const std::string& key, std::string_view example) const {
    if (!n.is_table()) fail(n.source(), key, fmt::format("must be a table ({}), got {}", example, type_name(n)));
    return *n.as_table();
  }

  std::optional<double> number(const toml::table& t, const std::string& prefix, std::string_view key) const {
    const toml::node* n = t.get(key);
    if (!n) return std::nullopt;
    double v = 0;
    if (n->is_integer()) v = static_cast<double>(n->as_integer()->get());
    else if (n->is_floating_point()) v = n->as_floating_point()->get();
    else fail(n->source(), sub(prefix, key), fmt::format("must be a number, got {}", type_name(*n)));
    if (!std::isfinite(v)) fail(n->source(), sub(prefix, key), "must be a finite number");
    return v;
  }

  /// A number > lo (strict) or >= lo, and <= hi.
  std::optional<double> number_in(const toml::table& t, const std::string& prefix, std::string_view key, double lo,
                                  bool strict, double hi = INFINITY) const {
    const auto v = number(t, prefix, key);
    if (v && (strict ? !(*v > lo) : !(*v >= lo)))
      fail(t.get(key)->source(), sub(prefix, key), fmt::format("must be {} {}, got {}", strict ? ">" : ">=", lo, *v));
    if (v && *v > hi) fail(t.get(key)->source(), sub(prefix, key), fmt::format("must be <= {}, got {}", hi, *v));
    return v;
  }

  std::optional<int64_t> integer(const toml::table& t, const std::string& prefix, std::string_view key, int64_t lo,
                                 int64_t hi) const {
    const toml::node* n = t.get(key);
    if (!n) return std::nullopt;
    if (!n->is_integer()) fail(n->source(), sub(prefix, key), fmt::format("must be an integer, got {}", type_name(*n)));
    const int64_t v = n->as_integer()->get();
    if (v < lo) fail(n->source(), sub(prefix, key), fmt::format("must be >= {}, got {}", lo, v));
    if (v > hi) fail(n->source(), sub(prefix, key), fmt::format("must be <= {}, got {}", hi, v));
    return v;
  }

  std::optional<std::string> string(const toml::table& t, const std::string& prefix, std::string_view key) const {
    const toml::node* n = t.get(key);
    if (!n) return std::nullopt;
    if (!n->is_string()) fail(n->source(), sub(prefix, key), fmt::format("must be a string, got {}", type_name(*n)));
    return n->as_string()->get();
  }

  std::optional<bool> boolean(const toml::table& t, const std::string& prefix, std::string_view key) const {
    const toml::node* n = t.get(key);
    if (!n) return std::nullopt;
    if (!n->is_boolean()) fail(n->source(), sub(prefix, key), fmt::format("must be true or false, got {}", type_name(*n)));
    return n->as_boolean()->get();
  }

  model_entry model(const toml::node& n, const std::string& key) const {
    const toml::table& t = table(n, key, "{ spec = \"anthropic:claude-sonnet-4-5\", weight = 1 }");
    check_keys(t, key,
               {"spec", "weight", "base_url", "key_env", "max_tokens", "temperature", "max_concurrency", "timeout_s",
                "idle_timeout_s"});
    model_entry e;
    const auto spec = string(t, key, "spec");
    if (!spec) fail(t.source(), sub(key, "spec"), "required key is missing (e.g. spec = \"openai:gpt-5-mini\")");
    if (auto why = spec_problem(*spec); !why.empty()) fail(t.get("spec")->source(), sub(key, "spec"), why);
    e.spec = *spec;
    if (auto w = number_in(t, key, "weight", 0, true)) e.weight = *w;
    if (auto u = string(t, key, "base_url")) {
      if (!is_http_url(*u))
        fail(t.get("base_url")->source(), sub(key, "base_url"),
             fmt::format("must be an http:// or https:// URL, got '{}'", *u));
      e.base_url = *u;
    }
    if (auto k = string(t, key, "key_env")) {
      // Never echo the value: a user may have pasted the key itself here.
      if (!valid_env_name(*k))
        fail(t.get("key_env")->source(), sub(key, "key_env"),
             "must name an environment variable (letters, digits and _), e.g. \"VLLM_API_KEY\"; put the API "
             "key itself in that variable, never in kforge.toml");
      e.key_env = *k;
    }
    if (auto m = integer(t, key, "max_tokens", 1, INT32_MAX)) e.max_tokens = static_cast<int>(*m);
    e.temperature = number_in(t, key, "temperature", 0, false, 2);
    if (auto v = integer(t, key, "max_concurrency", 1, 4096)) e.max_concurrency = static_cast<int>(*v);
    e.timeout_s = number_in(t, key, "timeout_s", 0, true);
    e.idle_timeout_s = number_in(t, key, "idle_timeout_s", 0, true);
    return e;
  }

  std::vector<model_entry> models(const toml::node& n, const std::string& key) const {
    if (!n.is_array())
      fail(n.source(), key,
           fmt::format("must be an array of models, e.g. [ {{ spec = \"anthropic:claude-sonnet-4-5\" }} ], got {}",
                       type_name(n)));
    std::vector<model_entry> out;
    const toml::array& a = *n.as_array();
    for (std::size_t i = 0; i < a.size(); ++i) out.push_back(model(*a.get(i), fmt::format("{}[{}]", key, i)));
    return out;
  }

  price read_price(const toml::node& n, const std::string& key) const {
    const toml::table& t = table(n, key, "input = ..., output = ... in USD per million tokens");
    check_keys(t, key, {"input", "output", "cached_input", "cache_write"});
    price p;
    for (std::string_view k : {"input", "output"})
      if (!t.get(k)) fail(t.source(), sub(key, k), "required key is missing (USD per million tokens)");
    p.input = *number_in(t, key, "input", 0, false);
    p.output = *number_in(t, key, "output", 0, false);
    if (auto c = number_in(t, key, "cached_input", 0, false)) p.cached_input = *c;
    if (auto c = number_in(t, key, "cache_write", 0, false)) p.cache_write = *c;
    return p;
  }

  llm_config read(const toml::table& doc) const {
    llm_config cfg;
    cfg.source = m_file;
    const toml::node* llm_node = doc.get("llm");
    if (!llm_node) return cfg;
    const std::string key = "llm";
    const toml::table& t = table(*llm_node, key, "[llm]");
    check_keys(t, key,
               {"max_tokens", "temperature", "stream", "max_concurrency", "timeout_s", "idle_timeout_s", "models",
                "roles", "prices", "budget"});
    if (auto v = integer(t, key, "max_tokens", 1, INT32_MAX)) cfg.max_tokens = static_cast<int>(*v);
    cfg.temperature = number_in(t, key, "temperature", 0, false, 2);
    if (auto v = boolean(t, key, "stream")) cfg.stream = *v;
    if (auto v = integer(t, key, "max_concurrency", 1, 4096)) cfg.max_concurrency = static_cast<int>(*v);
    cfg.timeout_s = number_in(t, key, "timeout_s", 0, true);
    if (auto v = number_in(t, key, "idle_timeout_s", 0, true)) cfg.idle_timeout_s = *v;
    if (const toml::node* m = t.get("models")) cfg.models = models(*m, sub(key, "models"));

    if (const toml::node* r = t.get("roles")) {
      const std::string rkey = sub(key, "roles");
      const toml::table& roles = table(*r, rkey, "[llm.roles] with ideas = [...], code = [...], fix = [...]");
      for (auto&& [k, v] : roles) {
        const std::string name(k.str());
        if (std::find(k_llm_roles.begin(), k_llm_roles.end(), name) == k_llm_roles.end())
          fail(k.source().begin.line > 0 ? k.source() : v.source(), sub(rkey, name),
               fmt::format("unknown role (known roles: {}){}", join(k_llm_roles), did_you_mean(name, k_llm_roles)));
        auto list = models(v, sub(rkey, name));
        if (list.empty())
          fail(v.source(), sub(rkey, name), "lists no model; remove the key to use the default [llm] models");
        cfg.roles.emplace(name, std::move(list));
      }
    }

    if (const toml::node* p = t.get("prices")) {
      const std::string pkey = sub(key, "prices");
      const toml::table& prices = table(*p, pkey, "[llm.prices.\"openai:gpt-5-mini\"] with input and output");
      for (auto&& [k, v] : prices) {
        const std::string spec(k.str());
        if (auto why = spec_problem(spec); !why.empty())
          fail(k.source().begin.line > 0 ? k.source() : v.source(), sub(pkey, spec),
               why + " (prices are keyed by model spec)");
        cfg.prices.emplace(spec, read_price(v, sub(pkey, spec)));
      }
    }

    if (const toml::node* b = t.get("budget")) {
      const std::string bkey = sub(key, "budget");
      const toml::table& budget = table(*b, bkey, "[llm.budget] with max_tokens and/or max_cost_usd");
      check_keys(budget, bkey, {"max_tokens", "max_cost_usd"});
      cfg.budget.max_tokens = integer(budget, bkey, "max_tokens", 1, INT64_MAX);
      cfg.budget.max_cost_usd = number_in(budget, bkey, "max_cost_usd", 0, true);
    }
    return cfg;
  }

private:
  std::string m_file;
};

/// The configured entry for `spec`, default ensemble first, then the roles; nullptr if none.
const model_entry* find_entry(const llm_config& cfg, std::string_view spec) {
  for (const auto& e : cfg.models)
    if (e.spec == spec) return &e;
  for (const auto& [role, list] : cfg.roles)
    for (const auto& e : list)
      if (e.spec == spec) return &e;
  return nullptr;
}

} // namespace

llm_config parse_llm_config(const toml::table& doc, const std::string& file) { return reader(file).read(doc); }

llm_config load_llm_config(const std::filesystem::path& path) {
  const std::string file = path.string();
  std::string text;
  {
    std::error_code ec;
    std::ifstream in(path, std::ios::binary);
    if (!in || fs::is_directory(path, ec))
      KFORGE_THROW(usage, "{}: cannot read the configuration ({})", file,
                   fs::exists(path, ec) ? "permission denied or not a file" : "no such file");
    std::ostringstream ss;
    ss << in.rdbuf();
    text = ss.str();
  }
#if TOML_EXCEPTIONS
  toml::table doc;
  try {
    doc = toml::parse(text, file);
  } catch (const toml::parse_error& e) {
    KFORGE_THROW(usage, "{}:{}:{}: {}", file, e.source().begin.line, e.source().begin.column, e.description());
  }
#else
  toml::parse_result r = toml::parse(text, file);
  if (!r) {
    const auto& e = r.error();
    KFORGE_THROW(usage, "{}:{}:{}: {}", file, e.source().begin.line, e.source().begin.column, e.description());
  }
  toml::table doc = std::move(r).table();
#endif
  return parse_llm_config(doc, file);
}

void apply_cli_models(llm_config& cfg, const std::vector<std::string>& specs) {
  if (specs.empty()) return;
  std::vector<model_entry> out;
  for (const std::string& arg : specs) {
    std::string_view spec = arg;
    double weight = 1;
    if (const auto star = spec.rfind('*'); star != std::string_view::npos) {
      const std::string_view w = spec.substr(star + 1);
      const auto [end, ec] = std::from_chars(w.data(), w.data() + w.size(), weight);
      if (w.empty() || ec != std::errc() || end != w.data() + w.size() || !std::isfinite(weight) || !(weight > 0))
        KFORGE_THROW(usage,
                     "--llm '{}': the weight after '*' must be a number > 0, e.g. --llm "
                     "'anthropic:claude-sonnet-4-5*3'",
                     arg);
      spec = spec.substr(0, star);
    }
    if (auto why = spec_problem(spec); !why.empty()) KFORGE_THROW(usage, "--llm '{}': {}", arg, why);
    model_entry e;
    if (const model_entry* known = find_entry(cfg, spec)) e = *known;
    e.spec = std::string(spec);
    e.weight = weight;
    out.push_back(std::move(e));
  }
  cfg.models = std::move(out);
  cfg.roles.clear();
}

void require_models(const llm_config& cfg) {
  if (!cfg.models.empty()) return;
  std::vector<std::string_view> bare;
  for (std::string_view role : k_llm_roles)
    if (!cfg.roles.contains(std::string(role))) bare.push_back(role);
  if (bare.empty()) return;
  if (cfg.roles.empty()) KFORGE_THROW(usage, "{}", no_models_message(""));
  std::vector<std::string_view> covered;
  for (const auto& [role, list] : cfg.roles) covered.push_back(role);
  KFORGE_THROW(usage,
               "no LLM configured for role{} {}: [llm.roles] lists models only for {} and there are no default "
               "[llm] models; add [llm] models to kforge.toml, give {} a list of {} own in [llm.roles], or pass "
               "--llm provider:model",
               bare.size() == 1 ? "" : "s", join(bare), join(covered), bare.size() == 1 ? "it" : "them",
               bare.size() == 1 ? "its" : "their");
}

std::string checked_base_url(const std::string& url, std::string_view where) {
  if (!is_http_url(url))
    KFORGE_THROW(usage, "{}: must be an http:// or https:// URL, e.g. http://127.0.0.1:8080/v1, got '{}'", where, url);
  return url;
}

std::string base_url_for(const model_entry& e, const llm_config& cfg) {
  if (!cfg.base_url.empty()) return cfg.base_url;
  if (!e.base_url.empty()) return e.base_url;
  const char* var = e.spec.starts_with("openai:")      ? "OPENAI_BASE_URL"
                    : e.spec.starts_with("anthropic:") ? "ANTHROPIC_BASE_URL"
                                                       : nullptr;
  if (const char* v = var ? std::getenv(var) : nullptr; v && *v) return v;
  return "";
}

bool is_loopback_url(std::string_view url) {
  const auto scheme = url.find("://");
  if (scheme == std::string_view::npos) return false;
  std::string_view host = url.substr(scheme + 3);
  host = host.substr(0, host.find('/'));
  if (const auto at = host.rfind('@'); at != std::string_view::npos) host = host.substr(at + 1);
  if (host.starts_with("[")) host = host.substr(1, host.find(']') - 1);
  else host = host.substr(0, host.find(':'));
  return host == "localhost" || host.starts_with("127.") || host == "::1" || host == "0.0.0.0";
}

namespace {
std::chrono::milliseconds ms_of(double seconds) {
  return std::chrono::milliseconds(static_cast<int64_t>(std::llround(seconds * 1000)));
}
} // namespace

provider_options options_for(const model_entry& e, const llm_config& cfg) {
  provider_options o;
  o.base_url = base_url_for(e, cfg);
  o.key_env = e.key_env;
  const bool local = is_loopback_url(o.base_url);
  o.max_concurrency = e.max_concurrency.value_or(
      cfg.max_concurrency.value_or(local ? k_max_concurrency_local : k_max_concurrency_hosted));
  // Streamed calls end on silence, not on length: a slow local model may stream for many
  // minutes, and a total limit would throw away an answer that was still arriving.
  const std::optional<double> total = e.timeout_s ? e.timeout_s : cfg.timeout_s;
  o.total_timeout = total ? ms_of(*total) : cfg.stream ? std::chrono::milliseconds(0) : ms_of(k_timeout_s_unstreamed);
  o.stream_idle_timeout = ms_of(e.idle_timeout_s.value_or(cfg.idle_timeout_s));
  return o;
}

request with_defaults(request r, const model_entry& e, const llm_config& cfg) {
  r.max_tokens = e.max_tokens.value_or(
      cfg.max_tokens.value_or(is_loopback_url(base_url_for(e, cfg)) ? k_max_tokens_local : k_max_tokens_hosted));
  if (e.temperature) r.temperature = e.temperature;
  else if (cfg.temperature) r.temperature = cfg.temperature;
  r.stream = cfg.stream;
  return r;
}

ensemble::ensemble(std::vector<model_entry> entries, std::vector<std::shared_ptr<provider>> providers)
    : m_entries(std::move(entries)), m_providers(std::move(providers)) {
  KFORGE_ASSERT(m_entries.size() == m_providers.size());
  double sum = 0;
  for (std::size_t i = 0; i < m_entries.size(); ++i) {
    KFORGE_ASSERT(m_providers[i] != nullptr);
    KFORGE_ASSERT(m_entries[i].weight > 0 && std::isfinite(m_entries[i].weight));
    sum += m_entries[i].weight;
    m_cumulative.push_back(sum);
  }
}

std::size_t ensemble::pick_index(std::mt19937_64& rng) const {
  if (m_entries.empty()) KFORGE_THROW(usage, "{}", no_models_message(""));
  // 53 random bits -> u in [0, 1); the first model whose running weight exceeds u * total.
  const double u = static_cast<double>(rng() >> 11) * 0x1.0p-53;
  const double x = u * m_cumulative.back();
  const auto it = std::upper_bound(m_cumulative.begin(), m_cumulative.end(), x);
  return std::min<std::size_t>(static_cast<std::size_t>(it - m_cumulative.begin()), m_entries.size() - 1);
}

ensemble make_ensemble(const std::vector<model_entry>& entries, const llm_config& cfg,
                       const provider_factory& factory) {
  if (entries.empty()) KFORGE_THROW(usage, "{}", no_models_message(""));
  std::vector<std::shared_ptr<provider>> providers;
  for (const auto& e : entries) {
    std::shared_ptr<provider> p = factory ? factory(e) : make_provider(e.spec, options_for(e, cfg));
    if (!p) KFORGE_THROW(internal, "llm: the provider factory returned no provider for {}", e.spec);
    providers.push_back(std::move(p));
  }
  return ensemble(entries, std::move(providers));
}

router::router(const llm_config& cfg, ledger* book, const provider_factory& factory) : m_cfg(cfg) {
  require_models(m_cfg);
  std::map<std::string, std::shared_ptr<provider>> made; // spec, base_url, key_env -> provider
  for (std::string_view role : k_llm_roles) {
    const auto own = m_cfg.roles.find(std::string(role));
    const std::vector<model_entry>& entries = own != m_cfg.roles.end() ? own->second : m_cfg.models;
    std::vector<std::shared_ptr<provider>> providers;
    for (const auto& e : entries) {
      std::shared_ptr<provider>& p = made[e.spec + '\n' + e.base_url + '\n' + e.key_env];
      if (!p) {
        p = factory ? factory(e) : make_provider(e.spec, options_for(e, m_cfg));
        if (!p) KFORGE_THROW(internal, "llm: the provider factory returned no provider for {}", e.spec);
        m_pool.push_back(p);
      }
      providers.push_back(book ? std::make_shared<metered>(*p, std::string(role), price_for(m_cfg, e.spec), *book) : p);
    }
    m_roles.emplace(std::string(role), ensemble(entries, std::move(providers)));
  }
}

ensemble& router::for_role(std::string_view role) {
  const auto it = m_roles.find(role);
  if (it == m_roles.end())
    KFORGE_THROW(internal, "llm: unknown role '{}' (known roles: {})", role, join(k_llm_roles));
  return it->second;
}

std::optional<llm_config> find_llm_config(const std::string& config_flag, const std::vector<std::string>& cli_models) {
  std::optional<std::filesystem::path> file;
  if (!config_flag.empty()) {
    if (!std::filesystem::exists(config_flag)) KFORGE_THROW(usage, "{}: configuration file not found", config_flag);
    file = config_flag;
  } else if (const char* v = std::getenv("KFORGE_CONFIG"); v && *v) {
    file = v;
  } else if (std::filesystem::exists("kforge.toml")) {
    file = "kforge.toml";
  }
  std::optional<llm_config> cfg;
  if (file) cfg = load_llm_config(*file);
  if (!cli_models.empty()) {
    if (!cfg) cfg = llm_config{};
    apply_cli_models(*cfg, cli_models);
  }
  if (cfg && cfg->models.empty()) cfg.reset();
  return cfg;
}

} // namespace kforge::llm
