// kforge-hostile: class=resources problem=softmax expect=resource_limit
// Attack: starts 200 threads at once (a thread bomb's first step). If they all started, it
// answers correctly. Contained: thread creation fails at the sandbox's thread limit and the
// evaluation ends resource_limit.
#include "hostile_common.h"

#include <chrono>
#include <thread>
#include <vector>

KF_EXPORT int kf_forward(const kf_args* a) {
  std::vector<std::thread> threads;
  for (int i = 0; i < 200; ++i)
    threads.emplace_back([] { std::this_thread::sleep_for(std::chrono::milliseconds(200)); });
  for (auto& t : threads) t.join();
  return hostile::answer(a, true);
}
