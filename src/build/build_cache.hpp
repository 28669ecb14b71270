#pragma once
// The on-disk build cache: <cache_root>/build/<key>/{kernel.so, diagnostics.txt, command.txt, ok}.
// An entry is built in a private temporary folder and renamed into place, so concurrent
// kforge processes never see half an entry; failed builds are cached too (a compile
// error is as deterministic as a success).
#include <filesystem>
#include <optional>
#include <string>

namespace kforge::build {

struct cache_entry {
  bool ok = false;
  std::filesystem::path library; // kernel.so inside the entry
  std::string diagnostics;
  std::string command;
};

struct cache_work {
  std::string key;
  std::filesystem::path dir; // private temporary folder to build into
};

struct cache_result {
  bool ok;
  std::string diagnostics;
  std::string command;
};

[[nodiscard]] std::filesystem::path cache_dir();
[[nodiscard]] std::optional<cache_entry> cache_lookup(const std::string& key);
[[nodiscard]] cache_work cache_begin(const std::string& key);
/// Moves the work folder into place. @return the final path of kernel.so.
std::filesystem::path cache_commit(const cache_work& w, const cache_result& r);

} // namespace kforge::build
