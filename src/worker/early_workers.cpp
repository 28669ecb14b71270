#include "worker/early_workers.hpp"

#include "core/error.hpp"
#include "core/fd_passing.hpp"
#include "core/fs.hpp"
#include "worker/python_library.hpp"

#include <unistd.h>

namespace kforge::worker {
namespace fs = std::filesystem;

deferred_worker::deferred_worker(const fs::path& exe, nlohmann::json job, worker_options opts)
    : m_sink(std::make_shared<message_sink>()) {
  int sv[2];
  make_fd_socket(sv);
  job["deferred"] = true;
  opts.share_socket = sv[1];
  opts.sink = [s = m_sink](message& m) {
    if (*s) (*s)(m);
  };
  try {
    m_session = std::make_unique<worker_session>(exe, std::move(job), std::move(opts));
  } catch (...) {
    ::close(sv[0]);
    ::close(sv[1]);
    throw;
  }
  ::close(sv[1]);
  m_socket = sv[0];
}

deferred_worker::~deferred_worker() {
  if (m_socket >= 0) ::close(m_socket);
}

std::unique_ptr<worker_session> deferred_worker::complete(const nlohmann::json& rest, const std::vector<int>& fds,
                                                          message_sink sink) {
  *m_sink = std::move(sink);
  try {
    send_fds(m_socket, rest.dump(), fds);
  } catch (const error&) {
    // The worker is gone already: its outcome says how.
  }
  ::close(m_socket);
  m_socket = -1;
  m_session->restart_watchdog(); // its wait for the build was not its own time
  return std::move(m_session);
}

early_python_workers::~early_python_workers() {
  m_call.reset(); // killed before their stage goes
  m_time.reset();
}

bool early_python_workers::stage(const build::artifact& candidate) {
  if (!candidate.ok || candidate.toolchain != "python" || candidate.library.empty()) return false;
  try {
    // The build's own record must be the one the workers started on (same interpreter, same
    // JIT folder); anything else, and they are not used.
    auto built = nlohmann::json::parse(read_file(python_info_path(candidate.library)));
    if (built != m_plan.record) return false;
    fs::copy_file(candidate.library, library(), fs::copy_options::overwrite_existing);
  } catch (const std::exception&) {
    return false;
  }
  m_staged = true;
  return true;
}

std::unique_ptr<deferred_worker> early_python_workers::take_call() {
  return m_staged ? std::move(m_call) : nullptr;
}
std::unique_ptr<deferred_worker> early_python_workers::take_time() {
  return m_staged ? std::move(m_time) : nullptr;
}

std::unique_ptr<early_python_workers> stage_python_workers(build::python_plan plan) {
  sandbox::scratch_dir dir;
  auto record = plan.record;
  record["stage"] = dir.path().string();
  write_file_atomic(python_info_path(dir.path() / "candidate.py"), record.dump(1));
  fs::create_directories(plan.jit_dir);
  return std::make_unique<early_python_workers>(std::move(plan), std::move(dir));
}

std::vector<std::string> warm_modules(const std::string& source_text) {
  std::vector<std::string> out;
  if (source_text.find("triton") != std::string::npos) out.push_back("triton");
  if (source_text.find("load_inline") != std::string::npos || source_text.find("cpp_extension") != std::string::npos)
    out.push_back("torch.utils.cpp_extension");
  return out;
}

} // namespace kforge::worker
