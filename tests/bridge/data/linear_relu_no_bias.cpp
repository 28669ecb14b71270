// Wrong on purpose: forgets the bias (a param input). Must fail with a tolerance error.
#include <kforge/kernel.h>

KF_EXPORT int kf_forward(const kf_args* a) {
  const float* x = (const float*)a->inputs[0].data;
  const float* w = (const float*)a->inputs[1].data;
  float* y = (float*)a->outputs[0].data;
  const long n = a->inputs[0].shape[0], k = a->inputs[0].shape[1], m = a->inputs[1].shape[0];
  for (long i = 0; i < n; ++i)
    for (long j = 0; j < m; ++j) {
      float acc = 0;
      for (long t = 0; t < k; ++t) acc += x[i * k + t] * w[j * k + t];
      y[i * m + j] = (acc > 0 ? acc : 0.0f) * 0.5f;
    }
  return 0;
}
