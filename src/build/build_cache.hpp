#pragma once
// The on-disk build cache: <cache_root>/build/<key>/{kernel.so or kernel.cubin (+ its side files),
// diagnostics.txt, command.txt, status}.
// An entry is built in a private temporary folder and renamed into place, so concurrent
// kforge processes never see half an entry; failed builds are cached too (a compile
// error is as deterministic as a success).
#include <filesystem>
#include <optional>
#include <string>

namespace kforge::build {

struct cache_entry {
  bool ok = false;
  std::filesystem::path library; // the artifact inside the entry (kernel.so, kernel.cubin)
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
/// @param artifact the file name the compiler wrote into the entry ("kernel.so", "kernel.cubin").
[[nodiscard]] std::optional<cache_entry> cache_lookup(const std::string& key, const std::string& artifact);
[[nodiscard]] cache_work cache_begin(const std::string& key);
/// Moves the work folder into place. @return the final path of `artifact`.
std::filesystem::path cache_commit(const cache_work& w, const cache_result& r, const std::string& artifact);

} // namespace kforge::build
