#pragma once
// Small file helpers whose errors name the file.
#include <filesystem>
#include <string_view>
#include <vector>
#include <string>

namespace kforge {

/// @throws kforge::error naming `p` when it cannot be read.
[[nodiscard]] std::string read_file(const std::filesystem::path& p);
/// Writes atomically: a temporary beside `p`, then rename.
void write_file_atomic(const std::filesystem::path& p, const std::string& data);
/// The same for data in pieces, written one after another (no joined copy: safetensors
/// files of the PyTorch bridge run to gigabytes).
void write_file_atomic(const std::filesystem::path& p, const std::vector<std::string_view>& parts);
/// @return the per-user cache root: $KFORGE_CACHE, else $XDG_CACHE_HOME/kforge, else ~/.cache/kforge.
[[nodiscard]] std::filesystem::path cache_root();
/// @return the path of the running executable (/proc/self/exe).
[[nodiscard]] std::filesystem::path self_exe();
/// Where one of kforge's data files or folders is (prompts/, controls/, include/, python/,
/// html/, third_party/...), so that a kforge copied or installed elsewhere finds its own:
///   1. <exe dir>/../share/kforge/<rel>   (cmake --install's layout: bin/kforge)
///   2. <exe dir>/../<rel>                (a checkout: build/kforge or dist/kforge)
///   3. <the source tree it was built from>/<rel>, only for a program in its build tree
/// @return the first that exists, else the last tried (so that a message names a place).
[[nodiscard]] std::filesystem::path data_path(const std::filesystem::path& rel);
/// The first regular file `name` in a $PATH directory; empty when none.
[[nodiscard]] std::filesystem::path find_on_path(const std::string& name);

} // namespace kforge
