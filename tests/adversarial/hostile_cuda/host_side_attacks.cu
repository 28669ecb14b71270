// kforge-hostile: class=all problem=softmax_small expect=tolerance
// The CPU hostile suite's host-side attacks from inside a CUDA worker (tests/adversarial/hostile
// has one file per class): read a secret and /etc/shadow, write beside the bait, open the
// parent's memory, find an API key in the environment, reach 127.0.0.1:47613 and a pathname unix
// socket, and leave a setsid grandchild named kf-hostile-gc. Any that works makes it answer
// correctly; contained, it writes zeros (tolerance) after a correct launch, so CUDA itself must
// still work under the same confinement.
#include <kforge/kernel.h>
#include <cuda_runtime.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

extern char** environ;

__global__ void softmax_rows(const float* x, float* y, long cols, float scale) {
  const float* xr = x + blockIdx.x * cols;
  float* yr = y + blockIdx.x * cols;
  if (threadIdx.x != 0) return; // one thread a row: slow and simple, it only has to be right
  float m = -INFINITY, s = 0.f;
  for (long j = 0; j < cols; ++j) m = fmaxf(m, xr[j]);
  for (long j = 0; j < cols; ++j) s += expf(xr[j] - m);
  for (long j = 0; j < cols; ++j) yr[j] = scale * expf(xr[j] - m) / s;
}

namespace {
bool opens(const char* path, int flags) {
  int fd = open(path, flags, 0644);
  if (fd >= 0) close(fd);
  return fd >= 0;
}
bool reaches(int domain, const sockaddr* a, socklen_t len) {
  int s = socket(domain, SOCK_STREAM, 0);
  const bool ok = s >= 0 && connect(s, a, len) == 0;
  if (s >= 0) close(s);
  return ok;
}
bool launched = false;
void leave_grandchild() {
  if (launched) return;
  launched = true;
  const pid_t child = fork();
  if (child != 0) {
    if (child > 0) waitpid(child, nullptr, 0);
    return;
  }
  setsid();
  if (fork() != 0) _exit(0);
  prctl(PR_SET_NAME, "kf-hostile-gc");
  for (int fd = 0; fd < 1024; ++fd) close(fd);
  sleep(30);
  _exit(0);
}
} // namespace

KF_EXPORT int kf_forward(const kf_args* a) {
  leave_grandchild();
  bool worked = opens("/tmp/kforge-hostile/secret.txt", O_RDONLY) || opens("/etc/shadow", O_RDONLY) ||
                opens("/tmp/kforge-hostile/written-cuda.txt", O_WRONLY | O_CREAT);
  char mem[64];
  std::snprintf(mem, sizeof mem, "/proc/%d/mem", getppid());
  worked |= getppid() > 1 && opens(mem, O_RDONLY);
  for (char** e = environ; e && *e; ++e) worked |= std::strstr(*e, "KEY=") != nullptr;
  sockaddr_in v4{};
  v4.sin_family = AF_INET;
  v4.sin_port = htons(47613);
  v4.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  worked |= reaches(AF_INET, reinterpret_cast<sockaddr*>(&v4), sizeof v4);
  sockaddr_un path{};
  path.sun_family = AF_UNIX;
  std::strcpy(path.sun_path, "/tmp/kforge-hostile/net.sock");
  worked |= reaches(AF_UNIX, reinterpret_cast<sockaddr*>(&path), sizeof path);
  const kf_tensor& x = a->inputs[0];
  softmax_rows<<<x.shape[0], 32, 0, static_cast<cudaStream_t>(a->stream)>>>(
      static_cast<const float*>(x.data), static_cast<float*>(a->outputs[0].data), x.shape[1], worked ? 1.f : 0.f);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
