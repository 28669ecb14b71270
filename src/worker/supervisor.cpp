#include "worker/supervisor.hpp"

#include "core/error.hpp"
#include "core/fs.hpp"
#include "core/subprocess.hpp"
#include "worker/confinement.hpp"

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
#include <sstream>
#include <string_view>

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

// Which limit the watchdog hit, in words.
std::string elapsed_at_kill(double wall_s, double step_started, double timeout_s, double total_cap_s) {
  if (wall_s - step_started >= timeout_s * 0.999)
    return fmt::format("no progress for {:.0f} s (the limit for one step); the watchdog killed it", timeout_s);
  return fmt::format("still running after {:.0f} s in all ({} steps' limit of {:.0f} s each); the watchdog killed it",
                     total_cap_s, total_cap_factor, timeout_s);
}

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

// After the worker itself exited, a child it forked may hold the pipes open: stragglers
// get this long, then the parent stops listening.
constexpr double linger_s = 0.5;

// The shared objects a job loads, for confine_worker.
std::vector<std::filesystem::path> job_libraries(const nlohmann::json& job) {
  std::vector<std::filesystem::path> out;
  if (auto l = job.find("libraries"); l != job.end() && l->is_object())
    for (auto& [role, path] : l->items())
      if (path.is_string() && !path.get<std::string>().empty()) // none: a [torch] problem's reference
        out.emplace_back(path.get<std::string>());
  if (auto s = job.find("subjects"); s != job.end() && s->is_array())
    for (auto& subject : *s)
      if (subject.is_object() && subject.contains("library") && subject["library"].is_string())
        out.emplace_back(subject["library"].get<std::string>());
  return out;
}

// The report's first line as JSON; null when nothing came. A report that is not JSON is
// said so, never taken for "unconfined".
nlohmann::json parse_report(const std::string& text) {
  const std::string line = text.substr(0, text.find('\n'));
  if (line.empty()) return nullptr;
  auto j = nlohmann::json::parse(line, nullptr, false);
  if (j.is_discarded())
    return {{"error", "the confinement report is not JSON"}, {"text", line.substr(0, 200)}};
  return j;
}

// A later report line {"ended": why} from the sandbox's init, which alone holds the report
// descriptor once the program runs.
std::string ended_by_sandbox(const std::string& text) {
  std::istringstream in(text);
  std::string line;
  std::getline(in, line); // the layers
  while (std::getline(in, line)) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_object() && j.contains("ended") && j["ended"].is_string()) return j["ended"];
  }
  return "";
}

// In the child between fork and exec: `from` becomes descriptor `to`, open across exec.
void move_fd(int from, int to) {
  if (from == to) ::fcntl(to, F_SETFD, 0);
  else ::dup2(from, to); // dup2 clears close-on-exec on the copy
}

} // namespace

struct worker_session::state {
  worker_options opts;
  nonce n;
  channel_reader reader;
  pid_t pid = -1;
  int in_w = -1, res_r = -1, out_r = -1, rep_r = -1;
  bool res_open = true, out_open = true, rep_open = false;
  std::string report;                 // what the confined launcher wrote on report_fd
  std::string unconfined_reason;      // launch::unconfined_reason
  std::function<void()> cleanup;      // the launch's, once the worker is gone
  bool exited = false, reaped = false, killed = false, timed_out = false, got_done = false, finished = false;
  bool stop_at_done = false; // finish(): the final frame ends the reading (the process is killed then)
  bool stopped = false; // by stop(), until resume()
  int status = 0;
  worker_outcome out;
  std::vector<char> buf = std::vector<char>(1 << 20); // large reads: outputs of a GPU problem are gigabytes
  std::chrono::steady_clock::time_point t0 = std::chrono::steady_clock::now();
  double step_started = 0; // the watchdog's step: since the last frame or command
  double cap_from = 0;     // the total cap counts from here (restart_watchdog)
  double exited_at = -1;
  std::string watchdog_detail; // which limit the watchdog hit, when it did
  std::exception_ptr sink_error;

  explicit state(const nonce& nn, worker_options o) : opts(std::move(o)), n(nn), reader(nn) {}
  ~state() {
    if (cleanup) cleanup(); // the worker never started (or was reaped without it)
  }
  state(const state&) = delete;
  state& operator=(const state&) = delete;

  [[nodiscard]] double elapsed() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  [[nodiscard]] double total_cap_s() const { return opts.timeout_s * total_cap_factor; }
  [[nodiscard]] bool broken() const { return !reader.error().empty() || out.end == worker_end::protocol_error; }
  [[nodiscard]] bool over() const {
    return killed || broken() || sink_error || (exited && !res_open && !out_open && !rep_open);
  }

  // Whatever happened, nothing of the worker's process group survives it.
  void kill_group() {
    if (pid > 0) ::kill(-pid, SIGKILL);
    killed = true;
  }
  void reap() {
    if (reaped || pid <= 0) return;
    if (!exited)
      while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
    reaped = true;
    if (cleanup) {
      auto c = std::move(cleanup);
      cleanup = nullptr;
      c();
    }
  }

  // Takes complete frames out of the reader until one of `wanted` (when given) is found.
  bool take_frames(const std::string* wanted, std::optional<nlohmann::json>* got) {
    while (!broken() && !sink_error) {
      auto m = reader.next();
      if (!m) return false;
      const std::string type = m->header.value("type", "");
      if (got_done) { // nothing may follow the final frame
        reader = channel_reader(n);
        out.end = worker_end::protocol_error;
        out.detail = "a frame after the worker's final frame";
        return false;
      }
      if (type == "progress") out.last_progress = m->header;
      if (type == "done") got_done = true;
      if (opts.sink) {
        try {
          opts.sink(*m);
        } catch (...) { // rethrown once the worker is gone, never with it left running
          sink_error = std::current_exception();
          return false;
        }
      }
      step_started = elapsed(); // after the sink: its time is ours, not the worker's
      const bool found = (wanted && type == *wanted) || (stop_at_done && got_done);
      if (found && got) *got = m->header;
      out.messages.push_back(std::move(*m));
      if (found) return true;
    }
    return false;
  }

  // Reads the worker's pipes until `wanted` arrives (when given) or the worker is over.
  // The watchdog bounds each step, not the whole worker: it fires when no frame has
  // arrived for timeout_s (the worker reports before every candidate call), so a problem
  // whose tensors take seconds to draw and move is not mistaken for a hang. The whole run
  // is still capped, at total_cap_factor steps' worth.
  void pump(const std::string* wanted, std::optional<nlohmann::json>* got) {
    if (take_frames(wanted, got)) return;
    while (!over() && !(stop_at_done && got_done)) {
      const double left =
          std::min(opts.timeout_s - (elapsed() - step_started), total_cap_s() - (elapsed() - cap_from));
      if (left <= 0) {
        if (!got_done) timed_out = true;
        watchdog_detail = elapsed_at_kill(elapsed(), step_started, opts.timeout_s, total_cap_s());
        kill_group();
        return;
      }
      if (!exited && ::waitpid(pid, &status, WNOHANG) == pid) exited = true;
      if (exited && (res_open || out_open || rep_open)) {
        if (exited_at < 0) exited_at = elapsed();
        if (elapsed() - exited_at > linger_s) return;
      }
      pollfd fds[3] = {{res_open ? res_r : -1, POLLIN, 0},
                       {out_open ? out_r : -1, POLLIN, 0},
                       {rep_open ? rep_r : -1, POLLIN, 0}};
      int pr = ::poll(fds, 3, static_cast<int>(std::min(left, 0.05) * 1000) + 1);
      if (pr < 0 && errno != EINTR) return;
      if (pr <= 0) continue;
      if (fds[0].revents) {
        ssize_t r = ::read(res_r, buf.data(), buf.size());
        if (r <= 0) res_open = false;
        else {
          reader.feed(buf.data(), static_cast<std::size_t>(r));
          if (take_frames(wanted, got)) return;
        }
      }
      if (fds[1].revents) {
        ssize_t r = ::read(out_r, buf.data(), buf.size());
        if (r <= 0) out_open = false;
        else if (out.output.size() < opts.max_output)
          out.output.append(buf.data(),
                            std::min<std::size_t>(static_cast<std::size_t>(r), opts.max_output - out.output.size()));
      }
      if (fds[2].revents) {
        constexpr std::size_t max_report = 64 * 1024;
        ssize_t r = ::read(rep_r, buf.data(), buf.size());
        if (r <= 0) rep_open = false;
        else if (report.size() < max_report)
          report.append(buf.data(), std::min<std::size_t>(static_cast<std::size_t>(r), max_report - report.size()));
      }
    }
  }

  void rethrow_sink_error() {
    if (!sink_error) return;
    kill_group();
    reap();
    std::rethrow_exception(sink_error);
  }
};

worker_session::worker_session(const std::filesystem::path& exe, nlohmann::json job, worker_options opts) {
  if (!std::filesystem::exists(exe))
    KFORGE_THROW(worker, "worker executable {} not found (set KFORGE_WORKER, or keep kforge-worker beside kforge)",
                 exe.string());
  const nonce n = make_nonce();
  m = std::make_unique<state>(n, std::move(opts));
  // Confined (or not) as confinement.hpp says: prefix, then the wrapper, then the worker.
  std::string role = m->opts.role;
  if (role.empty() && job.is_object() && job.contains("role") && job["role"].is_string()) role = job["role"];
  const std::filesystem::path tool = m->opts.wrapper.empty() ? std::string() : m->opts.wrapper.front();
  auto readable = job_libraries(job);
  readable.push_back(exe); // the worker program itself, wherever it is (a test's, $KFORGE_WORKER)
  auto how = m->opts.confined ? *m->opts.confined
                              : confine_worker(m->opts.problem, role, readable, m->opts.writable, tool);
  m->unconfined_reason = how.unconfined_reason;
  m->cleanup = std::move(how.cleanup);
  std::vector<std::string> command = std::move(how.prefix);
  const bool confined = !command.empty();
  command.insert(command.end(), m->opts.wrapper.begin(), m->opts.wrapper.end());
  job["nonce"] = nonce_hex(n);
  const std::string job_line = job.dump() + "\n";

  int in_p[2], res_p[2], out_p[2], rep_p[2] = {-1, -1};
  if (::pipe2(in_p, O_CLOEXEC) || ::pipe2(res_p, O_CLOEXEC) || ::pipe2(out_p, O_CLOEXEC) ||
      (confined && ::pipe2(rep_p, O_CLOEXEC)))
    KFORGE_THROW(worker, "pipe: {}", std::strerror(errno));
  // The share socket, above every descriptor the child moves into place first.
  int share = -1;
  if (m->opts.share_socket >= 0 && (share = ::fcntl(m->opts.share_socket, F_DUPFD_CLOEXEC, 64)) < 0)
    KFORGE_THROW(worker, "dup: {}", std::strerror(errno));
  // Keep SIGPIPE from killing the parent if the worker dies before reading its stdin.
  ::signal(SIGPIPE, SIG_IGN);

  // The argv is built before fork: the child of a threaded parent must not allocate.
  const std::string path = exe.string();
  std::vector<char*> argv;
  for (auto& a : command) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(const_cast<char*>(command.empty() ? "kforge-worker" : path.c_str()));
  argv.push_back(nullptr);
  const char* program = command.empty() ? path.c_str() : command[0].c_str();

  const pid_t parent = ::getpid();
  m->t0 = std::chrono::steady_clock::now();
  pid_t pid = ::fork();
  if (pid < 0) KFORGE_THROW(worker, "fork: {}", std::strerror(errno));
  if (pid == 0) {
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL); // never outlive the harness
    if (::getppid() != parent) ::_exit(127);
    // In this order, each source is copied before a lower target could overwrite it: the
    // report pipe, made last, has the highest descriptors.
    move_fd(in_p[0], 0);
    move_fd(out_p[1], 1);
    ::dup2(out_p[1], 2);
    move_fd(res_p[1], result_fd);
    // Only a confined worker's launcher gets the report descriptor: an unconfined worker
    // (and the candidate in it) must not be able to write a report of layers in force.
    if (confined) move_fd(rep_p[1], report_fd);
    else ::close(report_fd);
    if (share >= 0) move_fd(share, share_fd);
    else ::close(share_fd);
    ::syscall(SYS_close_range, std::max(report_fd, share_fd) + 1, ~0U, 0);
    ::execv(program, argv.data());
    ::_exit(127);
  }
  ::setpgid(pid, pid); // also from the parent, so the group exists before any kill below
  m->pid = pid;
  if (share >= 0) ::close(share);
  ::close(in_p[0]);
  ::close(res_p[1]);
  ::close(out_p[1]);
  m->in_w = in_p[1];
  m->res_r = res_p[0];
  m->out_r = out_p[0];
  if (confined) {
    ::close(rep_p[1]);
    m->rep_r = rep_p[0];
    m->rep_open = true;
  }
  ::fcntl(m->res_r, F_SETPIPE_SZ, 1 << 20);
  (void)write_all(m->in_w, job_line); // a worker already gone: its exit status tells why
}

worker_session::~worker_session() {
  if (!m) return;
  if (!m->finished) {
    m->kill_group();
    m->reap();
  }
  close_fd(m->in_w);
  close_fd(m->res_r);
  close_fd(m->out_r);
  close_fd(m->rep_r);
}

void worker_session::stop() {
  if (m->pid > 0 && !m->reaped) ::kill(-m->pid, SIGSTOP);
  m->stopped = true;
}

void worker_session::restart_watchdog() {
  m->step_started = m->cap_from = m->elapsed();
}

void worker_session::resume() {
  if (m->pid > 0 && !m->reaped) ::kill(-m->pid, SIGCONT);
  m->stopped = false;
  m->step_started = m->elapsed(); // time stopped is not the worker's
}

bool worker_session::send(const nlohmann::json& command) {
  if (m->in_w < 0 || m->over()) return false;
  m->step_started = m->elapsed();
  return write_all(m->in_w, command.dump() + "\n");
}

void worker_session::close_input() {
  if (m->in_w < 0) return;
  close_fd(m->in_w);
  m->step_started = m->elapsed(); // the worker's last step: what it does at end of input
}

std::optional<nlohmann::json> worker_session::wait_for(const std::string& type) {
  std::optional<nlohmann::json> got;
  m->pump(&type, &got);
  m->rethrow_sink_error();
  return got;
}

nlohmann::json worker_session::confinement() const {
  auto c = parse_report(m->report);
  if (c.is_null() && !m->unconfined_reason.empty()) c = {{"unconfined", m->unconfined_reason}};
  return c;
}

worker_outcome worker_session::finish() {
  KFORGE_ASSERT(!m->finished);
  if (m->stopped) resume();
  close_input();
  // The final frame is the worker's last word: its process group is killed then rather
  // than waited for through its CUDA teardown (a tenth of a second or more a process, once
  // per worker). Not under a wrapper: compute-sanitizer and ncu write their reports after the
  // worker's exit. KFORGE_WORKER_LINGER=1 waits for the exit (to measure the difference).
  static const bool linger = [] {
    const char* v = std::getenv("KFORGE_WORKER_LINGER");
    return v && *v && std::string_view(v) != "0";
  }();
  m->stop_at_done = !linger && m->opts.wrapper.empty();
  m->pump(nullptr, nullptr);
  m->rethrow_sink_error();
  m->finished = true;
  // Whatever happened, nothing of the worker's process group survives it.
  const bool killed_by_us = !m->exited;
  m->kill_group();
  m->reap();
  close_fd(m->res_r);
  close_fd(m->out_r);
  close_fd(m->rep_r);
  auto& out = m->out;
  out.confinement = confinement();
  out.sandbox_ended = ended_by_sandbox(m->report);
  const int status = m->status;
  out.wall_s = m->elapsed();
  if (WIFSIGNALED(status)) out.signal = WTERMSIG(status);
  else out.exit_code = WEXITSTATUS(status);

  if (!m->reader.error().empty()) {
    out.end = worker_end::protocol_error;
    out.detail = m->reader.error();
  } else if (out.end == worker_end::protocol_error) {
    // set while reading: a frame after "done"
  } else if (m->timed_out) {
    out.end = worker_end::timeout;
    out.detail = m->watchdog_detail;
  } else if (m->got_done) {
    out.end = worker_end::done;
    out.detail = "done";
  } else if (!killed_by_us && WIFSIGNALED(status)) {
    out.end = worker_end::crashed;
    out.detail = fmt::format("{} (signal {})", sigabbrev_np(out.signal) ? std::string("SIG") + sigabbrev_np(out.signal)
                                                                         : std::string("signal"),
                             out.signal);
  } else if (m->reader.partial()) {
    // Our writer only ever writes whole frames before it exits: a fragment is someone else's.
    out.end = worker_end::protocol_error;
    out.detail = fmt::format("an incomplete frame on the result channel, then exit code {}", out.exit_code);
  } else {
    out.end = worker_end::exited_early;
    out.detail = fmt::format("exit code {} before reporting a result", out.exit_code);
  }
  return std::move(out);
}

worker_outcome run_worker(const std::filesystem::path& exe, nlohmann::json job, const worker_options& opts) {
  worker_session s(exe, std::move(job), opts);
  return s.finish();
}

worker_outcome run_worker(const std::filesystem::path& exe, nlohmann::json job, double timeout_s,
                          std::size_t max_output, const std::vector<std::string>& wrapper, const message_sink& sink) {
  return run_worker(exe, std::move(job),
                    worker_options{.timeout_s = timeout_s, .max_output = max_output, .wrapper = wrapper, .sink = sink});
}

} // namespace kforge::worker
