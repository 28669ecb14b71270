// A correct CPU candidate for kb_scalar_multiply.py imported with --backend cpu: y = A * s,
// s a one-element input (forward() takes it as a Python float).
#include <kforge/kernel.h>

KF_EXPORT int kf_forward(const kf_args* a) {
  const float* x = (const float*)a->inputs[0].data;
  const float s = *(const float*)a->inputs[1].data;
  float* y = (float*)a->outputs[0].data;
  const long n = a->inputs[0].shape[0] * a->inputs[0].shape[1];
  for (long i = 0; i < n; ++i) y[i] = x[i] * s;
  return 0;
}
