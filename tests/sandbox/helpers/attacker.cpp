// A hostile program for the sandbox tests: each sub-command tries one attack and says how it
// went on stdout. Exit 0: the attempt succeeded (the attack worked); exit 1: it was refused
// (the message names the error); exit 2: bad usage. Some sub-commands end otherwise on purpose
// (exit N, a signal, a resource limit).
//   kforge_attacker read /etc/shadow       kforge_attacker tcp 40000
#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

extern char** environ;

namespace {

int refused(const char* what) {
  std::printf("refused: %s: %s\n", what, std::strerror(errno));
  return 1;
}

int read_file(const char* path) {
  const int fd = ::open(path, O_RDONLY);
  if (fd < 0) return refused("open");
  char buf[4096];
  const ssize_t n = ::read(fd, buf, sizeof buf);
  if (n < 0) return refused("read");
  std::printf("ok: read %zd bytes\n", n);
  return 0;
}

int write_file(const char* path) {
  const int fd = ::open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return refused("open");
  if (::write(fd, "pwned\n", 6) != 6) return refused("write");
  ::close(fd);
  std::printf("ok: wrote %s\n", path);
  return 0;
}

// What compute-sanitizer's injected library does in the target its tool starts: a child
// names its thread through /proc/self/task/<tid>/comm (pthread_setname_np's fallback path).
int child_names_thread() {
  const pid_t pid = ::fork();
  if (pid < 0) return refused("fork");
  if (pid == 0) {
    char path[64];
    std::snprintf(path, sizeof path, "/proc/self/task/%d/comm", static_cast<int>(::gettid()));
    const int fd = ::open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (fd < 0) _exit(refused("open"));
    _exit(::write(fd, "kf-child", 8) == 8 ? 0 : refused("write"));
  }
  int st = 0;
  ::waitpid(pid, &st, 0);
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) return 1;
  std::printf("ok: a child named its thread\n");
  return 0;
}

int tcp_connect(int port) {
  const int s = ::socket(AF_INET, SOCK_STREAM, 0);
  if (s < 0) return refused("socket");
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(s, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) return refused("connect");
  std::printf("ok: connected to 127.0.0.1:%d\n", port);
  return 0;
}

int unix_connect(const std::string& path, bool abstract) {
  const int s = ::socket(AF_UNIX, SOCK_STREAM, 0);
  if (s < 0) return refused("socket");
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  socklen_t len = sizeof a;
  if (abstract) {  // "\0name"
    std::memcpy(a.sun_path + 1, path.data(), path.size());
    len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + path.size());
  } else {
    std::snprintf(a.sun_path, sizeof a.sun_path, "%s", path.c_str());
  }
  if (::connect(s, reinterpret_cast<sockaddr*>(&a), len) != 0) return refused("connect");
  std::printf("ok: connected to %s\n", path.c_str());
  return 0;
}

// A listener and a client of its own on 127.0.0.1: what a profiler does with its target.
int tcp_self() {
  const int l = ::socket(AF_INET, SOCK_STREAM, 0);
  if (l < 0) return refused("socket");
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (::bind(l, reinterpret_cast<sockaddr*>(&a), len) != 0 || ::listen(l, 1) != 0) return refused("bind");
  ::getsockname(l, reinterpret_cast<sockaddr*>(&a), &len);
  const int c = ::socket(AF_INET, SOCK_STREAM, 0);
  if (c < 0) return refused("socket");
  if (::connect(c, reinterpret_cast<sockaddr*>(&a), len) != 0) return refused("connect");
  std::printf("ok: talked to itself on 127.0.0.1:%d\n", ntohs(a.sin_port));
  return 0;
}

// The same through a socket file in `dir`.
int unix_self(const std::string& dir) {
  const int l = ::socket(AF_UNIX, SOCK_STREAM, 0);
  if (l < 0) return refused("socket");
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::snprintf(a.sun_path, sizeof a.sun_path, "%s/kf-self.sock", dir.c_str());
  if (::bind(l, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(l, 1) != 0) return refused("bind");
  const int c = ::socket(AF_UNIX, SOCK_STREAM, 0);
  if (::connect(c, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) return refused("connect");
  std::printf("ok: talked to itself through %s\n", a.sun_path);
  return 0;
}

int unix_dgram() {
  const int s = ::socket(AF_UNIX, SOCK_DGRAM, 0);
  if (s < 0) return refused("socket");
  std::printf("ok: AF_UNIX datagram socket\n");
  return 0;
}

int unix_seqpacket() {
  // What CUDA does (seen on the H200): must stay allowed.
  const int s = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  if (s < 0) return refused("socket");
  int sp[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM, 0, sp) != 0) return refused("socketpair");
  std::printf("ok: AF_UNIX seqpacket socket and a socketpair\n");
  return 0;
}

int proc_mem(const char* pid) {
  const std::string p = std::string("/proc/") + pid + "/mem";
  const int fd = ::open(p.c_str(), O_RDONLY);
  if (fd < 0) return refused("open");
  std::printf("ok: opened %s\n", p.c_str());
  return 0;
}

int proc_environ(const char* pid) {
  const std::string p = std::string("/proc/") + pid + "/environ";
  const int fd = ::open(p.c_str(), O_RDONLY);
  if (fd < 0) return refused("open");
  char buf[4096];
  const ssize_t n = ::read(fd, buf, sizeof buf);
  if (n <= 0) return refused("read");
  std::printf("ok: read %zd bytes of %s\n", n, p.c_str());
  return 0;
}

int send_signal(int pid, int sig) {
  if (::kill(pid, sig) != 0) return refused("kill");
  std::printf("ok: signal %d sent to %d\n", sig, pid);
  return 0;
}

int trace(int pid) {
  if (::ptrace(PTRACE_ATTACH, pid, nullptr, nullptr) != 0) return refused("ptrace");
  std::printf("ok: attached to %d\n", pid);
  return 0;
}

int print_env() {
  for (char** e = environ; *e; ++e) std::printf("%s\n", *e);
  return 0;
}

int list_processes() {
  DIR* d = ::opendir("/proc");
  if (!d) return refused("opendir /proc");
  while (dirent* e = ::readdir(d))
    if (e->d_name[0] >= '0' && e->d_name[0] <= '9') std::printf("%s\n", e->d_name);
  return 0;
}

int allocate(unsigned long long bytes) {
  char* p = static_cast<char*>(std::malloc(bytes));
  if (!p) return refused("malloc");
  for (unsigned long long i = 0; i < bytes; i += 4096) p[i] = 1;
  std::printf("ok: allocated and touched %llu bytes\n", bytes);
  return 0;
}

void* park(void*) {
  ::pause();
  return nullptr;
}

int threads(int n) {
  for (int i = 0; i < n; ++i) {
    pthread_t t;
    if (const int e = ::pthread_create(&t, nullptr, park, nullptr); e != 0) {
      errno = e;
      std::printf("created %d threads\n", i);
      return refused("pthread_create");
    }
  }
  std::printf("ok: created %d threads\n", n);
  std::fflush(stdout);
  return 0;
}

int big_file(unsigned long long bytes) {
  const int fd = ::open("big", O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return refused("open");
  std::vector<char> buf(1 << 16, 'x');
  for (unsigned long long done = 0; done < bytes;) {
    const ssize_t w = ::write(fd, buf.data(), std::min<unsigned long long>(buf.size(), bytes - done));
    if (w <= 0) return refused("write");  // only with SIGXFSZ ignored
    done += static_cast<unsigned long long>(w);
  }
  std::printf("ok: wrote %llu bytes\n", bytes);
  return 0;
}

// A grandchild in a session of its own that outlives the program, then writes `file`.
// wait: the program waits until the grandchild has written (the positive control).
int orphan(const char* file, int delay_ms, bool wait) {
  const pid_t c = ::fork();
  if (c < 0) return refused("fork");
  if (c == 0) {
    ::setsid();
    if (::fork() == 0) {
      ::usleep(static_cast<useconds_t>(delay_ms) * 1000);
      const int fd = ::open(file, O_WRONLY | O_CREAT, 0644);
      if (fd >= 0) ::write(fd, "late\n", 5);
      ::_exit(0);
    }
    ::_exit(0);
  }
  ::waitpid(c, nullptr, 0);
  if (wait) {
    struct stat st {};
    for (int i = 0; i < 2000 && ::stat(file, &st) != 0; ++i) ::usleep(5000);
    if (::stat(file, &st) != 0) return refused("the grandchild never wrote");
  }
  std::printf("ok: grandchild left behind\n");
  return 0;
}

// socket(AF_INET, SOCK_STREAM) through the 32-bit system call table (int 0x80), where a
// filter written for x86-64 numbers would not look.
int i386_socket() {
#if defined(__x86_64__)
  long ret;
  asm volatile("int $0x80" : "=a"(ret) : "a"(359L /* i386 socket */), "b"(long{AF_INET}), "c"(long{SOCK_STREAM}), "d"(0L)
               : "memory");
  if (ret < 0) {
    errno = static_cast<int>(-ret);
    return refused("int 0x80 socket");
  }
  std::printf("ok: 32-bit socket %ld\n", ret);
  return 0;
#else
  std::printf("not x86-64\n");
  return 3;
#endif
}

int exec_program(char** argv) {
  ::execv(argv[0], argv);
  return refused("execv");
}

} // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IONBF, 0);
  if (argc < 2) return 2;
  const std::string cmd = argv[1];
  const char* a = argc > 2 ? argv[2] : "";
  const char* b = argc > 3 ? argv[3] : "";
  if (cmd == "read" && argc == 3) return read_file(a);
  if (cmd == "write" && argc == 3) return write_file(a);
  if (cmd == "tcp" && argc == 3) return tcp_connect(std::atoi(a));
  if (cmd == "unix" && argc == 3) return unix_connect(a, false);
  if (cmd == "abstract" && argc == 3) return unix_connect(a, true);
  if (cmd == "unix-dgram") return unix_dgram();
  if (cmd == "tcp-self") return tcp_self();
  if (cmd == "child-comm") return child_names_thread();
  if (cmd == "unix-self" && argc == 3) return unix_self(a);
  if (cmd == "unix-seqpacket") return unix_seqpacket();
  if (cmd == "mem" && argc == 3) return proc_mem(a);
  if (cmd == "environ" && argc == 3) return proc_environ(a);
  if (cmd == "kill" && argc == 4) return send_signal(std::atoi(a), std::atoi(b));
  if (cmd == "ptrace" && argc == 3) return trace(std::atoi(a));
  if (cmd == "env") return print_env();
  if (cmd == "cwd") {
    char buf[4096];
    std::printf("%s\n", ::getcwd(buf, sizeof buf) ? buf : "?");
    return 0;
  }
  if (cmd == "procs") return list_processes();
  if (cmd == "exit" && argc == 3) return std::atoi(a);
  if (cmd == "segv") {
    ::raise(SIGSEGV);
    return 0;
  }
  if (cmd == "alloc" && argc == 3) return allocate(std::strtoull(a, nullptr, 10));
  if (cmd == "threads" && argc == 3) return threads(std::atoi(a));
  if (cmd == "hold_threads" && argc == 3) { // creates them, then keeps them for a second
    if (const int rc = threads(std::atoi(a)); rc != 0) return rc;
    ::sleep(1);
    return 0;
  }
  if (cmd == "fsize" && argc == 3) return big_file(std::strtoull(a, nullptr, 10));
  if (cmd == "spin") {
    volatile unsigned long i = 0;
    for (;;) i = i + 1;
  }
  if (cmd == "sleep" && argc >= 3) {  // extra arguments: a marker to find the process by
    ::usleep(static_cast<useconds_t>(std::atoi(a)) * 1000);
    return 0;
  }
  if (cmd == "orphan" && argc >= 4) return orphan(a, std::atoi(b), false);
  if (cmd == "orphan-wait" && argc >= 4) return orphan(a, std::atoi(b), true);
  if (cmd == "exec" && argc >= 3) return exec_program(argv + 2);
  if (cmd == "i386-socket") return i386_socket();
  if (cmd == "unshare-user") {  // a user namespace of its own: every capability again, inside it
    if (::unshare(CLONE_NEWUSER) != 0) return refused("unshare");
    std::printf("ok: in a new user namespace\n");
    return 0;
  }
  std::fprintf(stderr, "kforge_attacker: unknown or malformed sub-command '%s'\n", cmd.c_str());
  return 2;
}
