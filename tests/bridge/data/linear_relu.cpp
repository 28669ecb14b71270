// A correct CPU candidate for kb_linear_relu.py imported with --backend cpu:
// y = relu(x @ W^T + b) * 0.5, inputs in ABI order x, linear_weight, linear_bias.
#include <kforge/kernel.h>

KF_EXPORT int kf_forward(const kf_args* a) {
  const float* x = (const float*)a->inputs[0].data;
  const float* w = (const float*)a->inputs[1].data;
  const float* b = (const float*)a->inputs[2].data;
  float* y = (float*)a->outputs[0].data;
  const long n = a->inputs[0].shape[0], k = a->inputs[0].shape[1], m = a->inputs[1].shape[0];
  for (long i = 0; i < n; ++i)
    for (long j = 0; j < m; ++j) {
      double acc = 0; // double accumulation: closer to the oracle than torch's own fp32
      for (long t = 0; t < k; ++t) acc += (double)x[i * k + t] * w[j * k + t];
      float v = (float)acc + b[j];
      y[i * m + j] = (v > 0 ? v : 0.0f) * 0.5f;
    }
  return 0;
}
