#pragma once
// Tensors across the process boundary to the PyTorch bridge (issue 9), in the
// safetensors format (https://huggingface.co/docs/safetensors): an 8-byte little-endian
// header length N, N bytes of JSON {"NAME": {"dtype": "F32", "shape": [..], "data_offsets":
// [begin, end]}, "__metadata__": {..}}, then the data, little-endian, row-major, each
// tensor's bytes contiguous. torch's `safetensors.torch.load_file` reads what this writes
// and the reverse.
//   bridge::write_safetensors("in.safetensors", {{"x", KF_F32, {4, 8}, bytes}});
//   auto ts = bridge::read_safetensors("out.safetensors");   // throws naming file and reason
#include <kforge/kernel.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace kforge::bridge {

struct named_tensor {
  std::string name;
  kf_dtype dtype = KF_F32;
  std::vector<int64_t> shape;
  std::vector<std::uint8_t> bytes; // numel * dtype_size bytes
};

/// safetensors' dtype names: F16, BF16, F32, F64, I8, I32, I64, U8, BOOL.
[[nodiscard]] std::string safetensors_dtype(kf_dtype t);

/// Writes the tensors in the order given (offsets ascending), with `metadata` as
/// "__metadata__" (string values only, as the format requires).
/// @throws kforge::error (usage) when a tensor's byte count disagrees with its shape and
///         dtype, or a name repeats; (internal) when the file cannot be written.
void write_safetensors(const std::filesystem::path& file, const std::vector<named_tensor>& tensors,
                       const std::map<std::string, std::string>& metadata = {});

/// @return the tensors in file-offset order. @throws kforge::error (usage) naming the file
///         and what is wrong: truncated, a header that is not JSON, an unknown dtype,
///         offsets outside the data or overlapping, bytes that disagree with the shape.
[[nodiscard]] std::vector<named_tensor> read_safetensors(const std::filesystem::path& file,
                                                         std::map<std::string, std::string>* metadata = nullptr);

} // namespace kforge::bridge
