#include "worker/supervisor.hpp"

#include "core/error.hpp"
#include "core/fs.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <exception>

namespace kforge::worker {

const char* worker_end_name(worker_end e) {
  switch (e) {
  case worker_end::done: return "done";
  case worker_end::crashed: return "crashed";
  case worker_end::timeout: return "timeout";
  case worker_end::exited_early: return "exited_early";
  case worker_end::protocol_error: return "protocol_error";
  }
  return "?";
}

std::filesystem::path default_worker_exe() {
  if (const char* v = std::getenv("KFORGE_WORKER"); v && *v) return v;
  return self_exe().parent_path() / "kforge-worker";
}

namespace {

void write_all_nointr(int fd, const std::string& s) {
  std::size_t off = 0;
  while (off < s.size()) {
    ssize_t w = ::write(fd, s.data() + off, s.size() - off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return; // the worker died before reading its job: its exit status tells why
    off += static_cast<std::size_t>(w);
  }
}

// Which limit the watchdog hit, in words.
std::string elapsed_at_kill(double wall_s, double last_frame_at, double timeout_s, double total_cap_s) {
  if (wall_s - last_frame_at >= timeout_s * 0.999)
    return fmt::format("no progress for {:.0f} s (the limit for one step); the watchdog killed it", timeout_s);
  return fmt::format("still running after {:.0f} s in all ({} steps' limit of {:.0f} s each); the watchdog killed it",
                     total_cap_s, total_cap_factor, timeout_s);
}

} // namespace

worker_outcome run_worker(const std::filesystem::path& exe, nlohmann::json job, double timeout_s,
                          std::size_t max_output, const std::vector<std::string>& wrapper,
                          const message_sink& sink) {
  if (!std::filesystem::exists(exe))
    KFORGE_THROW(worker, "worker executable {} not found (set KFORGE_WORKER, or keep kforge-worker beside kforge)",
                 exe.string());
  const nonce n = make_nonce();
  job["nonce"] = nonce_hex(n);
  const std::string job_text = job.dump();

  int in_p[2], res_p[2], out_p[2];
  if (::pipe2(in_p, O_CLOEXEC) || ::pipe2(res_p, O_CLOEXEC) || ::pipe2(out_p, O_CLOEXEC))
    KFORGE_THROW(worker, "pipe: {}", std::strerror(errno));
  // Keep SIGPIPE from killing the parent if the worker dies before reading its job.
  ::signal(SIGPIPE, SIG_IGN);

  // The argv is built before fork: the child of a threaded parent must not allocate.
  const std::string path = exe.string();
  std::vector<char*> argv;
  for (auto& a : wrapper) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(const_cast<char*>(wrapper.empty() ? "kforge-worker" : path.c_str()));
  argv.push_back(nullptr);

  const auto t0 = std::chrono::steady_clock::now();
  const pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) KFORGE_THROW(worker, "fork: {}", std::strerror(errno));
  if (pid == 0) {
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL); // never outlive the harness
    if (::getppid() != parent) ::_exit(127);
    ::dup2(in_p[0], 0);
    ::dup2(out_p[1], 1);
    ::dup2(out_p[1], 2);
    ::dup2(res_p[1], result_fd); // dup2 clears close-on-exec on the copy
    ::syscall(SYS_close_range, result_fd + 1, ~0U, 0);
    ::execv(wrapper.empty() ? path.c_str() : wrapper[0].c_str(), argv.data());
    ::_exit(127);
  }
  ::setpgid(pid, pid); // also from the parent, so the group exists before any kill below
  ::close(in_p[0]);
  ::close(res_p[1]);
  ::close(out_p[1]);
  write_all_nointr(in_p[1], job_text);
  ::close(in_p[1]);

  worker_outcome out;
  channel_reader reader(n);
  bool got_done = false, res_open = true, out_open = true, timed_out = false, exited = false;
  int status = 0;
  // Large reads and a large pipe: outputs of a GPU problem are gigabytes.
  std::vector<char> big(1 << 20);
  char* buf = big.data();
  const std::size_t buf_bytes = big.size();
  ::fcntl(res_p[0], F_SETPIPE_SZ, 1 << 20);
  constexpr double linger_s = 0.5;
  double exited_at = -1;
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };

  // The watchdog bounds each step, not the whole worker: it fires when no frame has arrived
  // for timeout_s (the worker reports before every candidate call), so a problem whose
  // tensors take seconds to draw and move is not mistaken for a hang. The whole run is
  // still capped, at total_cap_factor steps' worth.
  const double total_cap_s = timeout_s * total_cap_factor;
  double last_frame_at = 0;
  std::exception_ptr sink_error;
  while (!exited || res_open || out_open) {
    const double left = std::min(timeout_s - (elapsed() - last_frame_at), total_cap_s - elapsed());
    if (left <= 0) {
      timed_out = true;
      break;
    }
    if (!exited) {
      pid_t w = ::waitpid(pid, &status, WNOHANG);
      if (w == pid) exited = true;
    }
    // After the worker itself exited, a child it forked may hold the pipes open: give
    // stragglers a moment, then stop listening.
    if (exited && (res_open || out_open)) {
      if (exited_at < 0) exited_at = elapsed();
      if (elapsed() - exited_at > linger_s) break;
    }
    pollfd fds[2] = {{res_open ? res_p[0] : -1, POLLIN, 0}, {out_open ? out_p[0] : -1, POLLIN, 0}};
    int pr = ::poll(fds, 2, static_cast<int>(std::min(left, 0.05) * 1000) + 1);
    if (pr < 0 && errno != EINTR) break;
    if (pr <= 0) continue;
    if (fds[0].revents) {
      ssize_t r = ::read(res_p[0], buf, buf_bytes);
      if (r <= 0) res_open = false;
      else {
        reader.feed(buf, static_cast<std::size_t>(r));
        while (auto m = reader.next()) {
          const std::string type = m->header.value("type", "");
          if (got_done) { // nothing may follow the final frame
            reader = channel_reader(n);
            out.end = worker_end::protocol_error;
            out.detail = "a frame after the worker's final frame";
            break;
          }
          if (type == "progress") out.last_progress = m->header;
          if (type == "done") got_done = true;
          if (sink) {
            try {
              sink(*m);
            } catch (...) { // rethrown once the worker is gone, never with it left running
              sink_error = std::current_exception();
              break;
            }
          }
          last_frame_at = elapsed(); // after the sink: its time is ours, not the worker's
          out.messages.push_back(std::move(*m));
        }
        if (!reader.error().empty() || sink_error) break;
      }
    }
    if (fds[1].revents) {
      ssize_t r = ::read(out_p[0], buf, buf_bytes);
      if (r <= 0) out_open = false;
      else if (out.output.size() < max_output)
        out.output.append(buf, std::min<std::size_t>(static_cast<std::size_t>(r), max_output - out.output.size()));
    }
  }

  // Whatever happened, nothing of the worker's process group survives it.
  ::kill(-pid, SIGKILL);
  if (!exited) {
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
  }
  ::close(res_p[0]);
  ::close(out_p[0]);
  out.wall_s = elapsed();
  if (sink_error) std::rethrow_exception(sink_error);

  const bool killed_by_us = !exited;
  if (WIFSIGNALED(status)) out.signal = WTERMSIG(status);
  else out.exit_code = WEXITSTATUS(status);

  if (!reader.error().empty()) {
    out.end = worker_end::protocol_error;
    out.detail = reader.error();
  } else if (out.end == worker_end::protocol_error) {
    // set above: a frame after "done"
  } else if (timed_out && !got_done) {
    out.end = worker_end::timeout;
    out.detail = elapsed_at_kill(out.wall_s, last_frame_at, timeout_s, total_cap_s);
  } else if (got_done) {
    out.end = worker_end::done;
    out.detail = "done";
  } else if (!killed_by_us && WIFSIGNALED(status)) {
    out.end = worker_end::crashed;
    out.detail = fmt::format("{} (signal {})", sigabbrev_np(out.signal) ? std::string("SIG") + sigabbrev_np(out.signal)
                                                                         : std::string("signal"),
                             out.signal);
  } else if (reader.partial()) {
    // Our writer only ever writes whole frames before it exits: a fragment is someone else's.
    out.end = worker_end::protocol_error;
    out.detail = fmt::format("an incomplete frame on the result channel, then exit code {}", out.exit_code);
  } else {
    out.end = worker_end::exited_early;
    out.detail = fmt::format("exit code {} before reporting a result", out.exit_code);
  }
  return out;
}

} // namespace kforge::worker
