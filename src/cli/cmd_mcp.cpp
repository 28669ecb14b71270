// kforge mcp: serve kforge's tools (describe_problem, evaluate, profile, tune, history,
// best, export) to a coding agent over MCP's stdio transport, one JSON-RPC message per
// line, until stdin ends. docs/mcp.md says how to register it with Claude Code, Cursor
// and Codex:  claude mcp add kforge -- /path/to/kforge --db /path/to/kforge.db mcp
// stdout carries protocol messages only: before serving, file descriptor 1 is moved aside
// and pointed at stderr, so nothing else (a library's print, a child process's output)
// can corrupt the stream. Logs go to stderr.
// Each tools/call runs in a child process (`kforge mcp --call TOOL`, arguments on its stdin,
// progress and the answer as JSON lines on its stdout), so that a cancelled call, or one whose
// client went away, ends at once: its process group is killed (the workers it started die
// with it: they hold PR_SET_PDEATHSIG) and its evaluation or run is recorded "cancelled".
#include "agent/mcp.hpp"
#include "agent/tools.hpp"
#include "cli/commands.hpp"
#include "core/error.hpp"
#include "core/fs.hpp"
#include "core/process_owner.hpp"
#include "core/subprocess.hpp"
#include "store/store.hpp"

#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <iostream>
#include <iterator>
#include <streambuf>
#include <mutex>
#include <thread>

namespace kforge::cli {

namespace {

/// An output streambuf over a file descriptor, unbuffered (serve() writes whole lines).
class fd_streambuf final : public std::streambuf {
public:
  explicit fd_streambuf(int fd) : m_fd(fd) {}

protected:
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    std::streamsize done = 0;
    while (done < n) {
      const auto w = ::write(m_fd, s + done, static_cast<std::size_t>(n - done));
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) return done; // the client went away: the stream goes bad, serve() ends at EOF
      done += w;
    }
    return done;
  }
  int_type overflow(int_type c) override {
    if (traits_type::eq_int_type(c, traits_type::eof())) return traits_type::not_eof(c);
    const char ch = traits_type::to_char_type(c);
    return xsputn(&ch, 1) == 1 ? c : traits_type::eof();
  }

private:
  int m_fd;
};

using json = nlohmann::json;

/// Moves stdout aside for protocol lines only; fd 1 then points at stderr.
int take_protocol_fd() {
  const int fd = ::fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
  if (fd < 0) KFORGE_THROW(internal, "kforge mcp: cannot duplicate stdout: {}", std::strerror(errno));
  std::cout.flush();
  if (::dup2(STDERR_FILENO, STDOUT_FILENO) < 0)
    KFORGE_THROW(internal, "kforge mcp: cannot point stdout at stderr: {}", std::strerror(errno));
  return fd;
}

/// `kforge mcp --call TOOL`: one call, its arguments on stdin; progress lines
/// {"progress": "..."} and then {"result": {...}} on stdout.
int serve_one_call(const agent::tool_registry& tools, const std::string& name) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL); // never outlive the server that asked
  sigset_t all; // the server blocks its stop signals and ignores SIGPIPE; this process need not
  sigfillset(&all);
  ::pthread_sigmask(SIG_UNBLOCK, &all, nullptr);
  ::signal(SIGPIPE, SIG_DFL);
  const int fd = take_protocol_fd();
  fd_streambuf buf(fd);
  std::ostream out(&buf);
  std::mutex out_mutex;
  auto line = [&](const json& j) {
    std::lock_guard lock(out_mutex);
    out << j.dump(-1, ' ', false, json::error_handler_t::replace) << '\n';
    out.flush();
  };
  const agent::tool* t = tools.find(name);
  if (!t) KFORGE_THROW(usage, "kforge mcp --call: no tool '{}'", name);
  const std::string text((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
  const json args = json::parse(text, nullptr, false);
  agent::tool_result r;
  if (args.is_discarded()) {
    r = {.text = "kforge mcp --call: the arguments on stdin are not JSON", .is_error = true};
  } else {
    agent::call_context ctx;
    ctx.progress = [&](const std::string& m) { line({{"progress", m}}); };
    r = agent::call_tool(*t, args, ctx);
  }
  line({{"result", {{"structured", r.structured}, {"text", r.text}, {"is_error", r.is_error}}}});
  ::close(fd);
  return exit_ok;
}

/// A tools/call in a child kforge: killed, and its record marked "cancelled", when the call is.
agent::tool_result run_in_child(const std::filesystem::path& db, const agent::tool& t, const json& args,
                                const agent::call_context& ctx) {
  int in[2], out[2];
  if (::pipe2(in, O_CLOEXEC) != 0 || ::pipe2(out, O_CLOEXEC) != 0)
    KFORGE_THROW(internal, "kforge mcp: pipe: {}", std::strerror(errno));
  pid_t pid = -1;
  try {
    pid = spawn_in_own_group({self_exe().string(), "--db", db.string(), "mcp", "--call", t.name}, {{in[0], 0}, {out[1], 1}});
  } catch (...) {
    for (int fd : {in[0], in[1], out[0], out[1]}) ::close(fd);
    throw; // the server answers it as an isError result naming why
  }
  ::close(in[0]);
  ::close(out[1]);
  process_owner owner = current_process_owner(); // the child's: same host, boot and PID namespace
  owner.pid = pid;
  owner.start_ticks = process_start_ticks(pid).value_or(0);
  (void)write_all(in[1], args.dump()); // the child reads all of it before it starts; if it died, its status says
  ::close(in[1]);

  std::string pending;
  json result;
  bool killed = false;
  for (;;) {
    if (ctx.is_cancelled() && !killed) {
      ::kill(-pid, SIGKILL);
      killed = true;
    }
    pollfd p{out[0], POLLIN, 0};
    const int n = ::poll(&p, 1, 100);
    if (n < 0 && errno == EINTR) continue;
    if (n == 0) continue;
    char buf[65536];
    const auto r = ::read(out[0], buf, sizeof buf);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    pending.append(buf, static_cast<std::size_t>(r));
    for (std::size_t nl; (nl = pending.find('\n')) != std::string::npos;) {
      const auto j = json::parse(pending.substr(0, nl), nullptr, false);
      pending.erase(0, nl + 1);
      if (!j.is_object()) continue;
      if (j.contains("progress") && j["progress"].is_string()) ctx.report(j["progress"].get<std::string>());
      if (j.contains("result")) result = j["result"];
    }
  }
  ::close(out[0]);
  ::kill(-pid, SIGKILL); // whatever it left in its group
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (killed || ctx.is_cancelled()) {
    std::error_code ec;
    if (std::filesystem::exists(db, ec)) {
      store::store s(db);
      const std::string why = ctx.why_cancelled ? ctx.why_cancelled() : std::string();
      const int rows = s.mark_cancelled(owner, why.empty() ? "its MCP client cancelled the call" : why);
      std::cerr << fmt::format("kforge mcp: {} ended (pid {}); {} record(s) marked cancelled\n", t.name, pid, rows);
    }
    return {.text = fmt::format("{} was cancelled", t.name), .is_error = true};
  }
  if (!result.is_object())
    return {.text = fmt::format("{} ended without an answer ({}): a kforge bug; the server is still up", t.name,
                                WIFSIGNALED(status) ? fmt::format("signal {}", WTERMSIG(status))
                                                    : fmt::format("exit code {}", WEXITSTATUS(status))),
            .is_error = true};
  return {.structured = result.value("structured", json::object()),
          .text = result.value("text", std::string()),
          .is_error = result.value("is_error", false)};
}

} // namespace

command_fn add_mcp_command(CLI::App& app, global_options& g) {
  auto* sub = app.add_subcommand("mcp", "Serve kforge's tools to a coding agent over MCP (stdio)");
  sub->footer("Reads JSON-RPC messages, one per line, from stdin and answers on stdout; logs go to stderr.\n"
              "Register it with an agent, e.g.: claude mcp add kforge -- /path/to/kforge --db /path/to/kforge.db mcp\n"
              "(docs/mcp.md: the tools, and Cursor and Codex configuration).");
  auto call = std::make_shared<std::string>();
  auto in_order = std::make_shared<bool>(false);
  sub->add_flag("--in-order", *in_order,
                "For piped scripts: answer each request before reading the next, and finish every call at end of "
                "input (an agent's server cancels what is in flight when its input ends)");
  sub->add_option("--call", *call, "Internal: run one tool call (arguments on stdin) for a serving kforge mcp")
      ->group(""); // hidden
  return [&g, call, in_order]() {
    const auto db_path = std::filesystem::absolute(g.db_path());
    auto tools = agent::make_kforge_tools(db_path);
    if (!call->empty()) return serve_one_call(tools, *call);

    // SIGTERM / SIGINT / SIGHUP (a client shutting the server down): every call in flight is
    // cancelled and recorded so before kforge exits. Blocked here, so every thread started
    // below inherits the mask and one thread takes them.
    sigset_t stop;
    sigemptyset(&stop);
    for (int sig : {SIGTERM, SIGINT, SIGHUP}) sigaddset(&stop, sig);
    ::pthread_sigmask(SIG_BLOCK, &stop, nullptr);
    ::signal(SIGPIPE, SIG_IGN); // a client that went away: writes fail, reading ends at EOF

    const int protocol_fd = take_protocol_fd();
    fd_streambuf buf(protocol_fd);
    std::ostream out(&buf);
    agent::mcp_server server(tools);
    server.set_runner([db_path](const agent::tool& t, const json& args, const agent::call_context& ctx) {
      return run_in_child(db_path, t, args, ctx);
    });
    std::thread([&server, stop] {
      int sig = 0;
      if (::sigwait(&stop, &sig) != 0) return;
      std::cerr << fmt::format("kforge mcp: {}: cancelling the calls in flight\n", ::strsignal(sig));
      server.cancel_all(fmt::format("kforge mcp got {}", ::strsignal(sig)));
      std::_Exit(128 + sig);
    }).detach();
    std::cerr << "kforge mcp: serving " << tools.all().size() << " tools over stdio, database " << db_path.string()
              << "\n";
    if (*in_order) server.serve_in_order(std::cin, out);
    else server.serve(std::cin, out);
    ::close(protocol_fd);
    return exit_ok;
  };
}

} // namespace kforge::cli
