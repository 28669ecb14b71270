#include "build/build_cache.hpp"

#include "core/error.hpp"
#include "core/fs.hpp"

#include <unistd.h>

#include <random>

namespace kforge::build {

std::filesystem::path cache_dir() { return cache_root() / "build"; }

std::optional<cache_entry> cache_lookup(const std::string& key, const std::string& artifact) {
  const auto dir = cache_dir() / key;
  if (!std::filesystem::exists(dir / "status")) return std::nullopt;
  cache_entry e;
  e.ok = read_file(dir / "status") == "ok";
  e.library = dir / artifact;
  if (e.ok && !std::filesystem::exists(e.library)) return std::nullopt; // damaged entry: rebuild
  if (std::filesystem::exists(dir / "diagnostics.txt")) e.diagnostics = read_file(dir / "diagnostics.txt");
  if (std::filesystem::exists(dir / "command.txt")) e.command = read_file(dir / "command.txt");
  return e;
}

cache_work cache_begin(const std::string& key) {
  cache_work w{key, cache_dir() / fmt::format(".tmp-{}-{}-{}", key.substr(0, 16), ::getpid(),
                                               std::random_device{}())};
  std::filesystem::create_directories(w.dir);
  return w;
}

std::filesystem::path cache_commit(const cache_work& w, const cache_result& r, const std::string& artifact) {
  write_file_atomic(w.dir / "diagnostics.txt", r.diagnostics);
  write_file_atomic(w.dir / "command.txt", r.command);
  write_file_atomic(w.dir / "status", r.ok ? "ok" : "failed");
  const auto final_dir = cache_dir() / w.key;
  std::error_code ec;
  std::filesystem::rename(w.dir, final_dir, ec);
  if (ec) {
    // Another process finished the same key first, or a stale entry is in the way.
    if (!cache_lookup(w.key, artifact)) {
      std::filesystem::remove_all(final_dir, ec);
      std::filesystem::rename(w.dir, final_dir, ec);
      if (ec) KFORGE_THROW(build, "{}: cannot store build in cache: {}", final_dir.string(), ec.message());
    } else {
      std::filesystem::remove_all(w.dir, ec);
    }
  }
  return final_dir / artifact;
}

} // namespace kforge::build
