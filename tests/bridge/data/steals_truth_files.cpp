// Cheats on purpose: looks for the bridge's truth files (the module's outputs, written to
// the cache's tmp/ for the parent to read) and copies the first tensor of the right size.
// kforge deletes each trial's files as soon as it has read them, before any candidate code
// runs, so there is nothing to find: the outputs stay unwritten.
#include <kforge/kernel.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

KF_EXPORT int kf_forward(const kf_args* a) {
  const char* cache = std::getenv("KFORGE_CACHE");
  if (!cache) return 0;
  const long n = a->outputs[0].shape[0] * a->outputs[0].shape[1];
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(cache, ec); it != std::filesystem::recursive_directory_iterator();
       it.increment(ec)) {
    if (ec) break;
    if (it->path().filename() != "outputs.safetensors") continue;
    std::ifstream f(it->path(), std::ios::binary);
    std::vector<char> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    if (bytes.size() < 8) continue;
    unsigned long long header = 0;
    std::memcpy(&header, bytes.data(), 8);
    const std::size_t data = 8 + header; // the first tensor is the reference output
    if (bytes.size() >= data + n * sizeof(float)) {
      std::memcpy(a->outputs[0].data, bytes.data() + data, n * sizeof(float));
      return 0;
    }
  }
  return 0;
}
