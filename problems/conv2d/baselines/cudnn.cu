// Baseline: cuDNN convolution forward plus bias, in plain fp32 arithmetic
// (CUDNN_FMA_MATH: no TF32, which an fp32 problem would reject as a precision downgrade).
#include <kforge/kernel.h>
#include <cudnn.h>

namespace {
struct plan {
  cudnnHandle_t h = nullptr;
  cudnnTensorDescriptor_t xd, yd, bd;
  cudnnFilterDescriptor_t wd;
  cudnnConvolutionDescriptor_t cd;
  cudnnConvolutionFwdAlgo_t algo;
  size_t ws = 0;
  bool ok = false;
};

plan& get(const kf_args* a) {
  static plan p;
  if (p.h) return p;
  const kf_tensor &x = a->inputs[0], &w = a->inputs[1], &y = a->outputs[0];
  if (cudnnCreate(&p.h) != CUDNN_STATUS_SUCCESS) return p;
  cudnnCreateTensorDescriptor(&p.xd);
  cudnnCreateTensorDescriptor(&p.yd);
  cudnnCreateTensorDescriptor(&p.bd);
  cudnnCreateFilterDescriptor(&p.wd);
  cudnnCreateConvolutionDescriptor(&p.cd);
  cudnnSetTensor4dDescriptor(p.xd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, x.shape[0], x.shape[1], x.shape[2], x.shape[3]);
  cudnnSetTensor4dDescriptor(p.yd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, y.shape[0], y.shape[1], y.shape[2], y.shape[3]);
  cudnnSetTensor4dDescriptor(p.bd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, y.shape[1], 1, 1);
  cudnnSetFilter4dDescriptor(p.wd, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, w.shape[0], w.shape[1], w.shape[2], w.shape[3]);
  cudnnSetConvolution2dDescriptor(p.cd, 2, 2, 4, 4, 1, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT);
  cudnnSetConvolutionMathType(p.cd, CUDNN_FMA_MATH);
  cudnnConvolutionFwdAlgoPerf_t perf[8];
  int found = 0;
  if (cudnnGetConvolutionForwardAlgorithm_v7(p.h, p.xd, p.wd, p.cd, p.yd, 8, &found, perf) != CUDNN_STATUS_SUCCESS)
    return p;
  for (int i = 0; i < found; ++i)
    if (perf[i].status == CUDNN_STATUS_SUCCESS && perf[i].mathType == CUDNN_FMA_MATH) {
      p.algo = perf[i].algo;
      p.ws = perf[i].memory;
      p.ok = true;
      break;
    }
  return p;
}
} // namespace

KF_EXPORT size_t kf_workspace_bytes(const kf_args* a) { return get(a).ws; }

KF_EXPORT int kf_forward(const kf_args* a) {
  plan& p = get(a);
  if (!p.ok || a->workspace_bytes < p.ws) return 3;
  cudnnSetStream(p.h, static_cast<cudaStream_t>(a->stream));
  const float one = 1.f, zero = 0.f;
  if (cudnnConvolutionForward(p.h, &one, p.xd, a->inputs[0].data, p.wd, a->inputs[1].data, p.cd, p.algo, a->workspace,
                              a->workspace_bytes, &zero, p.yd, a->outputs[0].data) != CUDNN_STATUS_SUCCESS)
    return 4;
  return cudnnAddTensor(p.h, &one, p.bd, a->inputs[2].data, &one, p.yd, a->outputs[0].data) == CUDNN_STATUS_SUCCESS ? 0 : 5;
}
