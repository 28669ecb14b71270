// Control 'other_seed': the reference's correct answer, for other inputs. A problem this
// passes has an answer that does not depend on its inputs' values.
//
// kforge check builds this file with KF_REFERENCE_SOURCE naming the problem's reference,
// which is compiled in here under another name. Each input is replaced by a private device
// copy resampled with replacement (element i takes the value of a hashed element j): the
// values come from the same distribution, but both their order and their multiset change.
// A permutation such as reversing the order would not do: a problem whose answer is a
// sum, a maximum or a sort would look input-independent.
#include "control.cuh"

#include <vector>

#ifndef KF_REFERENCE_SOURCE
#error "other_seed.cu is built by kforge check, which defines KF_REFERENCE_SOURCE as the problem's reference"
#endif

// The reference's optional kf_workspace_bytes, renamed like kf_forward, is an exact match
// for a const kf_args*; when it has none, overload resolution falls back to this one.
[[maybe_unused]] static size_t kf_reference_workspace_bytes(const void*) { return 0; }

#define kf_forward kf_reference_forward
#define kf_workspace_bytes kf_reference_workspace_bytes
#include KF_REFERENCE_SOURCE
#undef kf_forward
#undef kf_workspace_bytes

KF_EXPORT size_t kf_workspace_bytes(const kf_args* a) { return kf_reference_workspace_bytes(a); }

KF_EXPORT int kf_forward(const kf_args* a) {
  const cudaStream_t stream = kf_control::stream_of(a);
  std::vector<kf_tensor> inputs(a->inputs, a->inputs + a->num_inputs);
  std::vector<void*> owned;
  int rc = 0;
  for (int k = 0; k < a->num_inputs && rc == 0; ++k) {
    const kf_tensor& x = a->inputs[k];
    const size_t bytes = static_cast<size_t>(kf_control::span(x)) * kf_control::element_size(x.dtype);
    void* copy = nullptr;
    if (bytes == 0 || cudaMalloc(&copy, bytes) != cudaSuccess) {
      rc = 1;
      break;
    }
    owned.push_back(copy);
    // The whole span first (gaps between strided elements too), then the resampled elements.
    if (cudaMemcpyAsync(copy, x.data, bytes, cudaMemcpyDeviceToDevice, stream) != cudaSuccess) rc = 2;
    inputs[k].data = copy;
    kf_control::resample<<<kf_control::blocks_for(kf_control::numel(x)), kf_control::threads, 0, stream>>>(
        inputs[k], x, kf_control::mix(static_cast<uint64_t>(k) + 1));
    if (cudaGetLastError() != cudaSuccess) rc = 2;
  }
  if (rc == 0) {
    kf_args other = *a;
    other.inputs = inputs.data();
    rc = kf_reference_forward(&other);
  }
  // The reference's kernels read the copies: they must finish before the copies are freed.
  if (cudaStreamSynchronize(stream) != cudaSuccess && rc == 0) rc = 2;
  for (void* p : owned) cudaFree(p);
  return rc;
}
