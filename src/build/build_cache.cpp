#include "build/build_cache.hpp"

#include "core/error.hpp"
#include "core/fs.hpp"
#include "core/hash.hpp"
#include "core/process_owner.hpp"
#include "core/text.hpp"

#include <unistd.h>

#include <mutex>
#include <random>

namespace kforge::build {
namespace {

constexpr const char* tmp_prefix = ".tmp-";

std::filesystem::path private_dir(const std::string& key, const char* what) {
  return cache_dir() / fmt::format("{}{}-{}-{}-{}", tmp_prefix, key.substr(0, 16), what, ::getpid(),
                                   std::random_device{}());
}

/// Takes an untrusted entry out of the way: renamed first (others stop seeing it at once),
/// then deleted; a removal cut short is finished by a later sweep.
void discard(const std::filesystem::path& dir, const std::string& key) {
  std::error_code ec;
  const auto aside = private_dir(key, "discard");
  std::filesystem::rename(dir, aside, ec);
  std::filesystem::remove_all(ec ? dir : aside, ec);
}

std::string recorded_sha256(const std::filesystem::path& dir) {
  const auto f = dir / "sha256";
  std::error_code ec;
  if (!std::filesystem::is_regular_file(f, ec)) return {};
  const std::string line = read_file(f);
  return std::string(trim(line.substr(0, line.find(' '))));
}

} // namespace

std::filesystem::path cache_dir() { return cache_root() / "build"; }

namespace {

std::optional<cache_entry> lookup(const std::string& key, const std::string& artifact, std::string* note) {
  const auto dir = cache_dir() / key;
  if (!std::filesystem::exists(dir / "status")) return std::nullopt;
  cache_entry e;
  e.ok = read_file(dir / "status") == "ok";
  e.library = dir / artifact;
  if (e.ok) {
    std::string why;
    if (!std::filesystem::is_regular_file(e.library)) {
      why = fmt::format("cached {} was missing", artifact);
    } else {
      e.sha256 = sha256_file(e.library);
      const auto recorded = recorded_sha256(dir);
      if (recorded.empty())
        why = fmt::format("cached {} had no recorded sha256 (an entry from an older kforge, or the cache was modified)",
                          artifact);
      else if (recorded != e.sha256)
        why = fmt::format("cached {} did not match its recorded sha256 (the cache was modified)", artifact);
    }
    if (!why.empty()) {
      discard(dir, key);
      if (note) *note = why + "; rebuilt";
      return std::nullopt;
    }
  }
  if (std::filesystem::exists(dir / "diagnostics.txt")) e.diagnostics = read_file(dir / "diagnostics.txt");
  if (std::filesystem::exists(dir / "command.txt")) e.command = read_file(dir / "command.txt");
  return e;
}

} // namespace

std::optional<cache_entry> cache_lookup(const std::string& key, const std::string& artifact, std::string* note) {
  try {
    return lookup(key, artifact, note);
  } catch (const kforge::error&) {
    return std::nullopt; // an entry another process is removing right now: a miss, built again
  } catch (const std::filesystem::filesystem_error&) {
    return std::nullopt;
  }
}

cache_work cache_begin(const std::string& key) {
  // Once per process, before its first build: what killed builders left behind.
  static std::once_flag swept;
  std::call_once(swept, [] { cache_sweep_stale(); });
  cache_work w{key, private_dir(key, "build")};
  std::filesystem::create_directories(w.dir);
  write_file_atomic(w.dir / "owner", to_string(current_process_owner()) + "\n");
  return w;
}

cache_entry cache_commit(const cache_work& w, const cache_result& r, const std::string& artifact) {
  cache_entry mine{.ok = r.ok, .diagnostics = r.diagnostics, .command = r.command};
  if (r.ok) {
    mine.sha256 = sha256_file(w.dir / artifact);
    write_file_atomic(w.dir / "sha256", mine.sha256 + "  " + artifact + "\n");
  }
  write_file_atomic(w.dir / "diagnostics.txt", r.diagnostics);
  write_file_atomic(w.dir / "command.txt", r.command);
  write_file_atomic(w.dir / "status", r.ok ? "ok" : "failed");
  const auto final_dir = cache_dir() / w.key;
  mine.library = final_dir / artifact;
  std::error_code ec;
  std::filesystem::rename(w.dir, final_dir, ec);
  if (!ec) return mine;
  // Another process finished the same key first, or a stale entry is in the way.
  if (auto theirs = cache_lookup(w.key, artifact)) {
    std::filesystem::remove_all(w.dir, ec);
    return *theirs;
  }
  std::filesystem::remove_all(final_dir, ec);
  std::filesystem::rename(w.dir, final_dir, ec);
  if (ec) KFORGE_THROW(build, "{}: cannot store build in cache: {}", final_dir.string(), ec.message());
  return mine;
}

int cache_sweep_stale(std::chrono::seconds max_age) {
  std::error_code ec;
  const auto dir = cache_dir();
  if (!std::filesystem::is_directory(dir, ec)) return 0;
  const auto now = std::filesystem::file_time_type::clock::now();
  int removed = 0;
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const auto& p = it->path();
    if (!p.filename().string().starts_with(tmp_prefix)) continue;
    std::error_code e2;
    if (!it->is_directory(e2)) continue;
    bool stale = false;
    const auto owner_file = p / "owner";
    std::optional<process_owner> owner;
    if (std::filesystem::is_regular_file(owner_file, e2)) {
      try {
        owner = parse_process_owner(std::string(trim(read_file(owner_file))));
      } catch (const kforge::error&) {
      }
    }
    const auto liveness = owner ? owner_state(*owner) : owner_liveness::unknown;
    if (liveness == owner_liveness::gone) {
      stale = true;
    } else if (liveness == owner_liveness::unknown) {
      const auto mtime = std::filesystem::last_write_time(p, e2);
      stale = !e2 && now - mtime > max_age;
    }
    if (!stale) continue;
    std::filesystem::remove_all(p, e2);
    removed += !e2;
  }
  return removed;
}

} // namespace kforge::build
