// The [llm] table, --llm, weighted ensembles and the role router.
#include "core/error.hpp"
#include "llm/config.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <unistd.h>

using namespace kforge::llm;

namespace {

llm_config parse(std::string_view text) {
  return parse_llm_config(toml::parse(text, std::string_view("kforge.toml")), "kforge.toml");
}

/// The message of the kforge::error that parsing `text` throws ("" when none is thrown).
std::string parse_error(std::string_view text) {
  try {
    (void)parse(text);
  } catch (const kforge::error& e) {
    EXPECT_EQ(e.kind(), kforge::error_kind::usage);
    return e.what();
  }
  return "";
}

bool contains(const std::string& s, std::string_view part) { return s.find(part) != std::string::npos; }

class fake_provider final : public provider {
public:
  explicit fake_provider(std::string spec) : m_spec(std::move(spec)) {}
  response complete(const request&, const text_callback& on_text_delta) override {
    response r{.text = "from " + m_spec, .stop_reason = "stop", .usage = {10, 2, 0, 0}, .model = "m", .id = "id"};
    if (on_text_delta) on_text_delta(r.text);
    return r;
  }
  std::string spec() const override { return m_spec; }

private:
  std::string m_spec;
};

constexpr std::string_view k_full = R"(
[llm]
max_tokens = 8192
temperature = 0.8
stream = false
max_concurrency = 4
timeout_s = 300
models = [
  { spec = "anthropic:claude-sonnet-4-5", weight = 3 },
  { spec = "openai:gpt-5-mini", weight = 1, base_url = "http://localhost:8000/v1", key_env = "VLLM_API_KEY", max_tokens = 4096 },
]
[llm.roles]
ideas = [ { spec = "anthropic:claude-opus-4-1", temperature = 1.0 } ]
fix   = [ { spec = "openai:gpt-5-mini", weight = 0.5 } ]
[llm.prices."anthropic:claude-sonnet-4-5"]
input = 3.0
output = 15.0
cached_input = 0.30
cache_write = 3.75
[llm.prices."openai:gpt-5-mini"]
input = 0.25
output = 2
[llm.budget]
max_tokens = 5_000_000
max_cost_usd = 20.0

[problem_defaults]   # another module's table: not ours to check
anything = 1
)";

} // namespace

TEST(llm_config, parses_a_full_table) {
  const llm_config c = parse(k_full);
  EXPECT_EQ(c.source, "kforge.toml");
  EXPECT_EQ(c.max_tokens, 8192);
  ASSERT_TRUE(c.temperature);
  EXPECT_DOUBLE_EQ(*c.temperature, 0.8);
  EXPECT_FALSE(c.stream);
  EXPECT_EQ(c.max_concurrency, 4);
  EXPECT_EQ(c.timeout_s, 300.0);

  ASSERT_EQ(c.models.size(), 2u);
  EXPECT_EQ(c.models[0].spec, "anthropic:claude-sonnet-4-5");
  EXPECT_DOUBLE_EQ(c.models[0].weight, 3);
  EXPECT_TRUE(c.models[0].base_url.empty());
  EXPECT_FALSE(c.models[0].max_tokens);
  EXPECT_EQ(c.models[1].spec, "openai:gpt-5-mini");
  EXPECT_DOUBLE_EQ(c.models[1].weight, 1);
  EXPECT_EQ(c.models[1].base_url, "http://localhost:8000/v1");
  EXPECT_EQ(c.models[1].key_env, "VLLM_API_KEY");
  EXPECT_EQ(c.models[1].max_tokens, 4096);

  ASSERT_EQ(c.roles.size(), 2u);
  ASSERT_EQ(c.roles.at("ideas").size(), 1u);
  EXPECT_EQ(c.roles.at("ideas")[0].spec, "anthropic:claude-opus-4-1");
  EXPECT_EQ(c.roles.at("ideas")[0].temperature, 1.0);
  EXPECT_DOUBLE_EQ(c.roles.at("fix")[0].weight, 0.5);
  EXPECT_FALSE(c.roles.contains("code"));

  ASSERT_EQ(c.prices.size(), 2u);
  const price& p = c.prices.at("anthropic:claude-sonnet-4-5");
  EXPECT_DOUBLE_EQ(p.input, 3.0);
  EXPECT_DOUBLE_EQ(p.output, 15.0);
  EXPECT_DOUBLE_EQ(p.cached_input, 0.30);
  EXPECT_DOUBLE_EQ(p.cache_write, 3.75);
  const price& q = c.prices.at("openai:gpt-5-mini");
  EXPECT_DOUBLE_EQ(q.output, 2);
  EXPECT_LT(q.cached_input, 0); // unset: same as input
  EXPECT_LT(q.cache_write, 0);

  EXPECT_EQ(c.budget.max_tokens, 5'000'000);
  EXPECT_EQ(c.budget.max_cost_usd, 20.0);
}

TEST(llm_config, no_llm_table_gives_defaults_and_no_models) {
  const llm_config c = parse("[other]\nx = 1\n");
  EXPECT_FALSE(c.max_tokens) << "the endpoint's default (local_server.cpp tests them)";
  EXPECT_TRUE(c.stream);
  EXPECT_FALSE(c.max_concurrency);
  EXPECT_FALSE(c.timeout_s);
  EXPECT_EQ(c.idle_timeout_s, k_idle_timeout_s);
  EXPECT_TRUE(c.models.empty());
  EXPECT_FALSE(c.budget.max_tokens || c.budget.max_cost_usd);
  try {
    require_models(c);
    FAIL() << "expected 'no LLM configured'";
  } catch (const kforge::error& e) {
    EXPECT_EQ(e.kind(), kforge::error_kind::usage);
    EXPECT_TRUE(contains(e.what(), "no LLM configured: add [llm] models to kforge.toml or pass --llm provider:model"))
        << e.what();
  }
}

TEST(llm_config, roles_without_default_models_must_cover_every_role) {
  const llm_config c = parse("[llm.roles]\nideas = [ { spec = \"openai:a\" } ]\n");
  try {
    require_models(c);
    FAIL() << "expected an error naming code and fix";
  } catch (const kforge::error& e) {
    EXPECT_TRUE(contains(e.what(), "roles code, fix")) << e.what();
    EXPECT_TRUE(contains(e.what(), "--llm")) << e.what();
  }
  EXPECT_NO_THROW(require_models(parse(R"(
[llm.roles]
ideas = [ { spec = "openai:a" } ]
code = [ { spec = "openai:a" } ]
fix = [ { spec = "openai:a" } ]
)")));
}

TEST(llm_config, every_error_names_the_file_the_key_and_the_reason) {
  struct bad {
    std::string toml, key, reason;
  };
  const std::vector<bad> cases{
      {"[llm]\nmodels = [ { spec = \"openai:a\" }, { spec = \"openai:b\", weight = 0 } ]", "llm.models[1].weight",
       "must be > 0, got 0"},
      {"[llm]\nmodels = [ { spec = \"openai:a\", weight = -2.5 } ]", "llm.models[0].weight", "must be > 0"},
      {"[llm]\nmodels = [ { spec = \"antropic:claude\" } ]", "llm.models[0].spec",
       "unknown provider 'antropic' in 'antropic:claude' (known: openai, anthropic, replay); did you mean 'anthropic'?"},
      {"[llm]\nmodels = [ { spec = \"gpt-5\" } ]", "llm.models[0].spec",
       "'gpt-5' is not a model spec; write openai:MODEL, anthropic:MODEL or replay:PATH"},
      {"[llm]\nmodels = [ { spec = \"openai:\" } ]", "llm.models[0].spec", "is not a model spec"},
      {"[llm]\nmodels = [ { weight = 2 } ]", "llm.models[0].spec", "required key is missing"},
      {"[llm]\nmodels = [ { spec = \"openai:a\", wieght = 2 } ]", "llm.models[0].wieght",
       "unknown key; did you mean 'weight'?"},
      {"[llm]\nmax_token = 100", "llm.max_token", "unknown key; did you mean 'max_tokens'?"},
      {"[llm]\nflavour = 1", "llm.flavour", "unknown key (known keys: max_tokens, temperature"},
      {"[llm]\ntemperature = \"hot\"", "llm.temperature", "must be a number, got a string"},
      {"[llm]\ntemperature = 3", "llm.temperature", "must be <= 2, got 3"},
      {"[llm]\nmax_tokens = 1.5", "llm.max_tokens", "must be an integer, got a float"},
      {"[llm]\nmax_tokens = 0", "llm.max_tokens", "must be >= 1, got 0"},
      {"[llm]\nstream = \"yes\"", "llm.stream", "must be true or false, got a string"},
      {"[llm]\ntimeout_s = 0", "llm.timeout_s", "must be > 0"},
      {"[llm]\nmax_concurrency = 0", "llm.max_concurrency", "must be >= 1"},
      {"[llm]\nmodels = { spec = \"openai:a\" }", "llm.models", "must be an array of models"},
      {"[llm]\nmodels = [ \"openai:a\" ]", "llm.models[0]", "must be a table ({ spec = "},
      {"[llm]\nmodels = [ { spec = \"openai:a\", base_url = \"localhost:8000\" } ]", "llm.models[0].base_url",
       "must be an http:// or https:// URL"},
      {"[llm]\nmodels = [ { spec = \"openai:a\", max_tokens = 0 } ]", "llm.models[0].max_tokens", "must be >= 1"},
      {"[llm.roles]\nidea = [ { spec = \"openai:a\" } ]", "llm.roles.idea",
       "unknown role (known roles: ideas, code, fix); did you mean 'ideas'?"},
      {"[llm.roles]\nreview = [ { spec = \"openai:a\" } ]", "llm.roles.review", "unknown role"},
      {"[llm.roles]\nfix = []", "llm.roles.fix", "lists no model"},
      {"[llm.roles]\nfix = [ { spec = \"anthropic:x\", weight = 0 } ]", "llm.roles.fix[0].weight", "must be > 0"},
      {"[llm.prices.\"openai:a\"]\ninput = 1", "llm.prices.\"openai:a\".output", "required key is missing"},
      {"[llm.prices.\"openai:a\"]\ninput = 1\noutput = -1", "llm.prices.\"openai:a\".output", "must be >= 0"},
      {"[llm.prices.\"openai:a\"]\ninput = 1\noutput = 2\ncached = 0.1", "llm.prices.\"openai:a\".cached",
       "unknown key; did you mean 'cached_input'?"},
      {"[llm.prices.\"gpt-5\"]\ninput = 1\noutput = 2", "llm.prices.gpt-5", "prices are keyed by model spec"},
      {"[llm.budget]\nmax_cost_usd = 0", "llm.budget.max_cost_usd", "must be > 0"},
      {"[llm.budget]\nmax_cost = 10", "llm.budget.max_cost", "unknown key; did you mean 'max_cost_usd'?"},
      {"llm = 3", "llm", "must be a table"},
  };
  for (const auto& c : cases) {
    const std::string msg = parse_error(c.toml);
    EXPECT_TRUE(msg.starts_with("kforge.toml:")) << c.toml << "\n-> " << msg;
    EXPECT_TRUE(contains(msg, "key '" + c.key + "'")) << c.toml << "\n-> " << msg;
    EXPECT_TRUE(contains(msg, c.reason)) << c.toml << "\n-> " << msg;
  }
}

TEST(llm_config, errors_carry_the_line_and_column) {
  const std::string msg = parse_error("[llm]\nmax_tokens = 8\nmodels = [\n  { spec = \"openai:a\", weight = 0 },\n]\n");
  EXPECT_TRUE(msg.starts_with("kforge.toml:4:")) << msg;
}

TEST(llm_config, a_key_pasted_into_key_env_is_refused_and_not_echoed) {
  const std::string msg = parse_error("[llm]\nmodels = [ { spec = \"openai:a\", key_env = \"sk-live-abc123XYZ\" } ]");
  EXPECT_TRUE(contains(msg, "llm.models[0].key_env")) << msg;
  EXPECT_TRUE(contains(msg, "must name an environment variable")) << msg;
  EXPECT_FALSE(contains(msg, "abc123XYZ")) << msg;
}

TEST(llm_config, load_reads_a_file_and_reports_syntax_errors_with_position) {
  const auto dir = std::filesystem::temp_directory_path() / ("kforge_llmcfg_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const auto good = dir / "kforge.toml";
  std::ofstream(good) << k_full;
  const llm_config c = load_llm_config(good);
  EXPECT_EQ(c.source, good);
  EXPECT_EQ(c.models.size(), 2u);

  const auto broken = dir / "broken.toml";
  std::ofstream(broken) << "[llm]\nmax_tokens = = 3\n";
  try {
    (void)load_llm_config(broken);
    FAIL() << "expected a parse error";
  } catch (const kforge::error& e) {
    EXPECT_EQ(e.kind(), kforge::error_kind::usage);
    EXPECT_TRUE(std::string(e.what()).starts_with(broken.string() + ":2:")) << e.what();
  }
  try {
    (void)load_llm_config(dir / "missing.toml");
    FAIL() << "expected a read error";
  } catch (const kforge::error& e) {
    EXPECT_TRUE(contains(e.what(), "missing.toml: cannot read the configuration (no such file)")) << e.what();
  }
  std::filesystem::remove_all(dir);
}

TEST(llm_config, cli_models_replace_the_default_and_every_role_ensemble) {
  llm_config c = parse(k_full);
  apply_cli_models(c, {"anthropic:claude-haiku-4-5*3", "openai:gpt-5-mini", "replay:run*2.jsonl*0.5"});
  EXPECT_TRUE(c.roles.empty());
  ASSERT_EQ(c.models.size(), 3u);
  EXPECT_EQ(c.models[0].spec, "anthropic:claude-haiku-4-5");
  EXPECT_DOUBLE_EQ(c.models[0].weight, 3);
  EXPECT_TRUE(c.models[0].base_url.empty());
  // A spec configured in kforge.toml keeps where it lives and its limits; the weight is the CLI's.
  EXPECT_EQ(c.models[1].spec, "openai:gpt-5-mini");
  EXPECT_DOUBLE_EQ(c.models[1].weight, 1);
  EXPECT_EQ(c.models[1].base_url, "http://localhost:8000/v1");
  EXPECT_EQ(c.models[1].key_env, "VLLM_API_KEY");
  EXPECT_EQ(c.models[1].max_tokens, 4096);
  // Only the last '*' starts a weight.
  EXPECT_EQ(c.models[2].spec, "replay:run*2.jsonl");
  EXPECT_DOUBLE_EQ(c.models[2].weight, 0.5);
  EXPECT_EQ(c.prices.size(), 2u); // prices and budget are untouched
  EXPECT_EQ(c.budget.max_cost_usd, 20.0);
}

TEST(llm_config, cli_models_with_no_arguments_change_nothing) {
  llm_config c = parse(k_full);
  apply_cli_models(c, {});
  EXPECT_EQ(c.models.size(), 2u);
  EXPECT_EQ(c.roles.size(), 2u);
}

TEST(llm_config, bad_cli_models_name_the_argument) {
  for (const auto& [arg, reason] : std::vector<std::pair<std::string, std::string>>{
           {"anthropic:claude*0", "the weight after '*' must be a number > 0"},
           {"anthropic:claude*x", "the weight after '*' must be a number > 0"},
           {"anthropic:claude*", "the weight after '*' must be a number > 0"},
           {"anthropic:claude*-1", "the weight after '*' must be a number > 0"},
           {"claude", "'claude' is not a model spec"},
           {"openia:gpt-5", "unknown provider 'openia'"},
       }) {
    llm_config c;
    try {
      apply_cli_models(c, {arg});
      ADD_FAILURE() << arg << " was accepted";
    } catch (const kforge::error& e) {
      EXPECT_EQ(e.kind(), kforge::error_kind::usage);
      EXPECT_TRUE(contains(e.what(), "--llm '" + arg + "'")) << e.what();
      EXPECT_TRUE(contains(e.what(), reason)) << e.what();
    }
  }
}

TEST(llm_config, request_defaults_come_from_the_entry_then_the_config) {
  llm_config c = parse(k_full);
  const request base{.messages = {{role::user, "hi"}}, .max_tokens = 1, .temperature = 0.1, .stream = true};
  const request a = with_defaults(base, c.models[1], c); // max_tokens 4096 of its own
  EXPECT_EQ(a.max_tokens, 4096);
  EXPECT_EQ(a.temperature, 0.8);
  EXPECT_FALSE(a.stream);
  EXPECT_EQ(a.messages.size(), 1u);
  const request b = with_defaults(base, c.roles.at("ideas")[0], c);
  EXPECT_EQ(b.max_tokens, 8192);
  EXPECT_EQ(b.temperature, 1.0);
  c.temperature.reset();
  EXPECT_EQ(with_defaults(base, c.models[0], c).temperature, 0.1); // nothing configured: the caller's

  const provider_options o = options_for(c.models[1], c);
  EXPECT_EQ(o.base_url, "http://localhost:8000/v1");
  EXPECT_EQ(o.key_env, "VLLM_API_KEY");
  EXPECT_EQ(o.max_concurrency, 4);
  EXPECT_EQ(o.total_timeout, std::chrono::seconds(300));
}

TEST(ensemble, weighted_pick_is_deterministic_per_seed_and_proportional) {
  llm_config c;
  const std::vector<model_entry> entries{{.spec = "openai:heavy", .weight = 3}, {.spec = "openai:light", .weight = 1}};
  ensemble e = make_ensemble(entries, c, [](const model_entry& m) { return std::make_unique<fake_provider>(m.spec); });
  ASSERT_EQ(e.size(), 2u);
  EXPECT_EQ(e.entry(0).spec, "openai:heavy");
  EXPECT_EQ(e.at(1).spec(), "openai:light");

  auto draw = [&](uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::vector<std::size_t> v;
    for (int i = 0; i < 4000; ++i) v.push_back(e.pick_index(rng));
    return v;
  };
  const auto a = draw(42), b = draw(42), other = draw(43);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, other);
  const auto heavy = std::count(a.begin(), a.end(), 0u);
  EXPECT_GT(heavy, 2800); // expected 3000; sd ~27
  EXPECT_LT(heavy, 3200);

  // Pinned: std::mt19937_64's output is fixed by the standard and pick uses no
  // std::*_distribution, so seed 7 gives this sequence with every compiler and library.
  std::mt19937_64 rng(7);
  std::string seq;
  for (int i = 0; i < 16; ++i) seq += e.pick(rng).spec() == "openai:heavy" ? 'H' : 'l';
  EXPECT_EQ(seq, "llHlHHllHHlHHHlH");
}

TEST(ensemble, an_ensemble_of_one_always_picks_it_and_an_empty_one_says_what_to_do) {
  llm_config c;
  ensemble one = make_ensemble({{.spec = "openai:only", .weight = 0.01}}, c,
                               [](const model_entry& m) { return std::make_unique<fake_provider>(m.spec); });
  std::mt19937_64 rng(1);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(one.pick_index(rng), 0u);

  ensemble none;
  try {
    (void)none.pick_index(rng);
    FAIL();
  } catch (const kforge::error& e) {
    EXPECT_TRUE(contains(e.what(), "no LLM configured")) << e.what();
  }
  EXPECT_THROW((void)make_ensemble({}, c), kforge::error);
}

TEST(router, roles_use_their_own_models_else_the_default_and_share_providers) {
  const llm_config c = parse(k_full);
  std::map<std::string, int> made;
  router r(c, nullptr, [&](const model_entry& m) {
    ++made[m.spec + "@" + m.base_url];
    return std::make_unique<fake_provider>(m.spec);
  });
  EXPECT_EQ(r.for_role("ideas").size(), 1u);
  EXPECT_EQ(r.for_role("ideas").entry(0).spec, "anthropic:claude-opus-4-1");
  EXPECT_EQ(r.for_role("code").size(), 2u); // no list of its own: the default ensemble
  EXPECT_EQ(r.for_role("code").entry(0).spec, "anthropic:claude-sonnet-4-5");
  EXPECT_EQ(r.for_role("fix").entry(0).spec, "openai:gpt-5-mini");
  // fix's openai:gpt-5-mini has no base_url: another endpoint than the default ensemble's.
  EXPECT_EQ(made, (std::map<std::string, int>{{"anthropic:claude-opus-4-1@", 1},
                                              {"anthropic:claude-sonnet-4-5@", 1},
                                              {"openai:gpt-5-mini@http://localhost:8000/v1", 1},
                                              {"openai:gpt-5-mini@", 1}}));
  EXPECT_THROW((void)r.for_role("review"), kforge::error);
}

TEST(router, one_model_for_all_roles_is_made_once) {
  llm_config c;
  apply_cli_models(c, {"openai:m"});
  int made = 0;
  router r(c, nullptr, [&](const model_entry& m) {
    ++made;
    return std::make_unique<fake_provider>(m.spec);
  });
  EXPECT_EQ(made, 1);
  EXPECT_EQ(&r.for_role("ideas").at(0), &r.for_role("fix").at(0));
}

TEST(router, metered_router_records_each_call_under_its_role) {
  llm_config c = parse(k_full);
  ledger book;
  std::vector<call_record> seen;
  book.set_sink([&](const call_record& rec) { seen.push_back(rec); });
  router r(c, &book, [](const model_entry& m) { return std::make_unique<fake_provider>(m.spec); });
  std::mt19937_64 rng(3);
  ensemble& team = r.for_role("code");
  const std::size_t i = team.pick_index(rng);
  const response got = team.at(i).complete(with_defaults({.messages = {{role::user, "q"}}}, team.entry(i), c));
  EXPECT_EQ(got.text, "from " + team.entry(i).spec);
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].role, "code");
  EXPECT_EQ(seen[0].provider_spec, team.entry(i).spec);
  EXPECT_TRUE(seen[0].cost_usd.has_value()); // both default models are priced
  EXPECT_EQ(book.totals().calls, 1);
}

TEST(router, the_default_factory_makes_real_providers) {
  llm_config c;
  apply_cli_models(c, {"openai:local-model"});
  c.models[0].base_url = "http://127.0.0.1:9/v1"; // a local server needs no key; nothing is contacted
  router r(c);
  EXPECT_EQ(r.for_role("ideas").at(0).spec(), "openai:local-model");
  llm_config none;
  EXPECT_THROW(router{none}, kforge::error);
}
