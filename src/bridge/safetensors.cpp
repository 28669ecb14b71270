#include "bridge/safetensors.hpp"

#include "core/dtype.hpp"
#include "core/error.hpp"
#include "core/fs.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <set>

namespace kforge::bridge {

namespace {

constexpr std::pair<kf_dtype, const char*> dtype_names[] = {
    {KF_F16, "F16"}, {KF_BF16, "BF16"}, {KF_F32, "F32"}, {KF_F64, "F64"}, {KF_I8, "I8"},
    {KF_I32, "I32"}, {KF_I64, "I64"},   {KF_U8, "U8"},   {KF_BOOL, "BOOL"}};

std::size_t numel(const std::vector<int64_t>& shape) {
  std::size_t n = 1;
  for (auto d : shape) n *= static_cast<std::size_t>(d);
  return n;
}

} // namespace

std::string safetensors_dtype(kf_dtype t) {
  for (auto& [d, name] : dtype_names)
    if (d == t) return name;
  KFORGE_THROW(internal, "no safetensors name for dtype {}", static_cast<int>(t));
}

void write_safetensors(const std::filesystem::path& file, const std::vector<named_tensor>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  nlohmann::json header = nlohmann::json::object();
  std::set<std::string> names;
  std::uint64_t offset = 0;
  for (auto& t : tensors) {
    if (!names.insert(t.name).second || t.name == "__metadata__")
      KFORGE_THROW(usage, "{}: tensor name '{}' repeats (or is reserved)", file.string(), t.name);
    for (auto d : t.shape)
      if (d < 0) KFORGE_THROW(usage, "{}: tensor '{}' has a negative dimension", file.string(), t.name);
    const std::size_t want = numel(t.shape) * dtype_size(t.dtype);
    if (t.bytes.size() != want)
      KFORGE_THROW(usage, "{}: tensor '{}' holds {} bytes, its shape and dtype need {}", file.string(), t.name,
                   t.bytes.size(), want);
    header[t.name] = {{"dtype", safetensors_dtype(t.dtype)}, {"shape", t.shape}, {"data_offsets", {offset, offset + want}}};
    offset += want;
  }
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::string h = header.dump();
  h.append((8 - h.size() % 8) % 8, ' '); // the format allows trailing spaces: keeps the data 8-byte aligned
  std::string head;
  const std::uint64_t n = h.size();
  for (int i = 0; i < 8; ++i) head.push_back(static_cast<char>((n >> (8 * i)) & 0xff));
  head += h;
  std::vector<std::string_view> parts{head}; // the tensors' bytes are written where they lie
  for (auto& t : tensors) parts.emplace_back(reinterpret_cast<const char*>(t.bytes.data()), t.bytes.size());
  write_file_atomic(file, parts);
}

std::vector<named_tensor> read_safetensors(const std::filesystem::path& file, std::map<std::string, std::string>* metadata) {
  // The header first, then each tensor read straight into its buffer: a float64 truth file
  // runs to gigabytes, and reading the file into one string first held it twice, slowly.
  std::ifstream in(file, std::ios::binary);
  if (!in) KFORGE_THROW(usage, "{}: cannot read", file.string());
  std::error_code ec;
  const std::uint64_t file_size = std::filesystem::file_size(file, ec);
  if (ec || file_size < 8)
    KFORGE_THROW(usage, "{}: {} bytes: too short for a safetensors file", file.string(), ec ? 0 : file_size);
  unsigned char len[8];
  in.read(reinterpret_cast<char*>(len), 8);
  std::uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= std::uint64_t(len[i]) << (8 * i);
  if (n > file_size - 8)
    KFORGE_THROW(usage, "{}: header of {} bytes runs past the end of the file ({} bytes): truncated?", file.string(), n,
                 file_size);
  std::string header_text(n, '\0');
  in.read(header_text.data(), static_cast<std::streamsize>(n));
  const auto header = nlohmann::json::parse(header_text, nullptr, false);
  if (!in || header.is_discarded() || !header.is_object())
    KFORGE_THROW(usage, "{}: the header is not a JSON object", file.string());
  const std::uint64_t base = 8 + n, size = file_size - base;
  std::vector<named_tensor> out;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> spans;
  for (auto& [name, v] : header.items()) {
    if (name == "__metadata__") {
      if (metadata && v.is_object())
        for (auto& [k, x] : v.items())
          if (x.is_string()) (*metadata)[k] = x.get<std::string>();
      continue;
    }
    named_tensor t{.name = name};
    const std::string dt = v.value("dtype", "");
    bool known = false;
    for (auto& [d, dn] : dtype_names)
      if (dt == dn) t.dtype = d, known = true;
    if (!known) KFORGE_THROW(usage, "{}: tensor '{}' has dtype '{}', which kforge cannot take", file.string(), name, dt);
    if (!v.contains("shape") || !v["shape"].is_array() || !v.contains("data_offsets") || v["data_offsets"].size() != 2)
      KFORGE_THROW(usage, "{}: tensor '{}' lacks shape or data_offsets", file.string(), name);
    t.shape = v["shape"].get<std::vector<int64_t>>();
    const auto begin = v["data_offsets"][0].get<std::uint64_t>(), end = v["data_offsets"][1].get<std::uint64_t>();
    if (begin > end || end > size)
      KFORGE_THROW(usage, "{}: tensor '{}' spans bytes [{}, {}) of a {}-byte data section", file.string(), name, begin,
                   end, size);
    const std::size_t want = numel(t.shape) * dtype_size(t.dtype);
    if (end - begin != want)
      KFORGE_THROW(usage, "{}: tensor '{}' has {} bytes, its shape and dtype need {}", file.string(), name, end - begin,
                   want);
    t.bytes.resize(want);
    in.seekg(static_cast<std::streamoff>(base + begin));
    in.read(reinterpret_cast<char*>(t.bytes.data()), static_cast<std::streamsize>(want));
    if (!in) KFORGE_THROW(usage, "{}: tensor '{}' could not be read whole", file.string(), name);
    spans.emplace_back(begin, end);
    out.push_back(std::move(t));
  }
  // Order by offset (JSON objects are unordered), and refuse overlapping tensors.
  std::vector<std::size_t> idx(out.size());
  for (std::size_t i = 0; i < idx.size(); ++i) idx[i] = i;
  std::sort(idx.begin(), idx.end(), [&](auto a, auto b) { return spans[a] < spans[b]; });
  std::vector<named_tensor> sorted;
  for (std::size_t k = 0; k < idx.size(); ++k) {
    if (k && spans[idx[k]].first < spans[idx[k - 1]].second && spans[idx[k]].first != spans[idx[k]].second)
      KFORGE_THROW(usage, "{}: tensors '{}' and '{}' overlap", file.string(), out[idx[k - 1]].name, out[idx[k]].name);
    sorted.push_back(std::move(out[idx[k]]));
  }
  return sorted;
}

} // namespace kforge::bridge
