// kforge mcp: serve kforge's tools (describe_problem, evaluate, profile, tune, history,
// best, export) to a coding agent over MCP's stdio transport, one JSON-RPC message per
// line, until stdin ends. docs/mcp.md says how to register it with Claude Code, Cursor
// and Codex:  claude mcp add kforge -- /path/to/kforge --db /path/to/kforge.db mcp
// stdout carries protocol messages only: before serving, file descriptor 1 is moved aside
// and pointed at stderr, so nothing else (a library's print, a child process's output)
// can corrupt the stream. Logs go to stderr.
#include "agent/mcp.hpp"
#include "agent/tools.hpp"
#include "cli/commands.hpp"
#include "core/error.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>
#include <streambuf>

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

} // namespace

command_fn add_mcp_command(CLI::App& app, global_options& g) {
  app.add_subcommand("mcp", "Serve kforge's tools to a coding agent over MCP (stdio)")
      ->footer("Reads JSON-RPC messages, one per line, from stdin and answers on stdout; logs go to stderr.\n"
               "Register it with an agent, e.g.: claude mcp add kforge -- /path/to/kforge --db /path/to/kforge.db mcp\n"
               "(docs/mcp.md: the tools, and Cursor and Codex configuration).");
  return [&g]() {
    const auto db_path = std::filesystem::absolute(g.db_path());
    const int protocol_fd = ::fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
    if (protocol_fd < 0) KFORGE_THROW(internal, "kforge mcp: cannot duplicate stdout: {}", std::strerror(errno));
    std::cout.flush();
    if (::dup2(STDERR_FILENO, STDOUT_FILENO) < 0)
      KFORGE_THROW(internal, "kforge mcp: cannot point stdout at stderr: {}", std::strerror(errno));
    fd_streambuf buf(protocol_fd);
    std::ostream out(&buf);
    auto tools = agent::make_kforge_tools(db_path);
    agent::mcp_server server(tools);
    std::cerr << "kforge mcp: serving " << tools.all().size() << " tools over stdio, database " << db_path.string()
              << "\n";
    server.serve(std::cin, out);
    ::close(protocol_fd);
    return exit_ok;
  };
}

} // namespace kforge::cli
