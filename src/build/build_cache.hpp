#pragma once
// The on-disk build cache: <cache_root>/build/<key>/{kernel.so or kernel.cubin (+ its side files),
// sha256, diagnostics.txt, command.txt, status, owner}.
// An entry is built in a private temporary folder (.tmp-*, holding an `owner` file that
// names the building process) and renamed into place, so concurrent kforge processes
// never see half an entry; failed builds are cached too (a compile error is as
// deterministic as a success). Temporary folders a killed kforge left behind are removed
// (cache_sweep_stale) the first time a process builds.
//
// The cache is trusted by content: the artifact's sha256 is recorded in the entry when it
// is built, and cache_lookup hashes the artifact again before handing it out. An entry
// whose artifact does not match (the cache was modified: a candidate once overwrote the
// cached reference so that an all-zeros kernel passed), or that records none, is removed
// and reported through `note`, and the caller builds it afresh.
#include <chrono>
#include <filesystem>
#include <optional>
#include <string>

namespace kforge::build {

struct cache_entry {
  bool ok = false;
  std::filesystem::path library; // the artifact inside the entry (kernel.so, kernel.cubin)
  std::string diagnostics;
  std::string command;
  std::string sha256;            // of `library`, checked against the entry's record; empty when !ok
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
/// @param note when the entry existed but could not be trusted (its artifact is missing,
///        records no sha256 or does not match it), set to why, ending "; rebuilt"; the
///        entry is removed and nullopt returned.
/// @post a returned ok entry's library hashes to its sha256.
[[nodiscard]] std::optional<cache_entry> cache_lookup(const std::string& key, const std::string& artifact,
                                                      std::string* note = nullptr);
[[nodiscard]] cache_work cache_begin(const std::string& key);
/// Records the artifact's sha256 and moves the work folder into place (or, when another
/// process published the key first, uses that entry). @return the entry now in place.
cache_entry cache_commit(const cache_work& w, const cache_result& r, const std::string& artifact);

/// Removes temporary folders (.tmp-*) under cache_dir() whose builder is gone (its owner
/// file names a process that ended, core/process_owner.hpp), or, when that cannot be
/// told (no owner file, another host), that are older than `max_age`.
/// @return how many it removed.
int cache_sweep_stale(std::chrono::seconds max_age = std::chrono::hours(24));

} // namespace kforge::build
