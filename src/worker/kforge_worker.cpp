// kforge-worker: the isolated process that runs kernels (see worker_process.hpp).
#include "worker/worker_process.hpp"

int main() { return kforge::worker::worker_process_main(); }
