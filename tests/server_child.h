// A scalecast-server child process for tests: started with flags, its port read from the
// start-up line, its stderr kept, optionally run as `nobody` (when the tests run as root),
// killed with SIGKILL when the test is done. Run as `nobody`, it runs a copy of the binary in a
// directory anyone may enter: the checkout may lie where only root can (a clone under /root).
#ifndef SCALECAST_TESTS_SERVER_CHILD_H_
#define SCALECAST_TESTS_SERVER_CHILD_H_

#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace scalecast::testing {

// A copy of the server binary that `nobody` can reach and run (a 0755 directory under /tmp, the
// file 0755), made once per test process and removed when it exits; "" when it cannot be made.
inline const std::string& ServerBinaryForAnyone() {
  struct Copy {
    std::string dir, path;
    Copy() {
      std::string tmpl = "/tmp/scalecast_bin_XXXXXX";
      if (mkdtemp(tmpl.data()) == nullptr) return;
      dir = tmpl;
      std::error_code ec;
      const std::string to = dir + "/scalecast-server";
      std::filesystem::copy_file(SCALECAST_SERVER_BIN, to, ec);
      if (ec || chmod(dir.c_str(), 0755) != 0 || chmod(to.c_str(), 0755) != 0) return;
      path = to;
    }
    ~Copy() {
      std::error_code ec;
      if (!dir.empty()) std::filesystem::remove_all(dir, ec);
    }
  };
  static const Copy copy;
  return copy.path;
}

class ServerChild {
 public:
  // Starts the server (as `nobody` when as_nobody and running as root); ok() when it printed
  // its start-up line.
  // With `cgroup_procs` (a cgroup's cgroup.procs file), the child joins that cgroup before it
  // runs the server, so the cgroup's limits hold for every byte the server allocates.
  explicit ServerChild(const std::vector<std::string>& flags, bool as_nobody = false,
                       const std::string& cgroup_procs = "") {
    static int n = 0;
    stderr_path_ = "/tmp/scalecast-child-" + std::to_string(getpid()) + "-" + std::to_string(++n);
    int out[2];
    if (pipe(out) != 0) return;
    const bool drop_root = as_nobody && getuid() == 0;
    std::string bin = SCALECAST_SERVER_BIN;
    if (drop_root) bin = ServerBinaryForAnyone();  // "" fails the exec: the test sees no server
    std::vector<std::string> args = {bin, "--listen", "127.0.0.1:0", "--metrics-address", ""};
    args.insert(args.end(), flags.begin(), flags.end());
    pid_ = fork();
    if (pid_ == 0) {
      dup2(out[1], 1);
      close(out[0]);
      const int err = open(stderr_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0666);
      if (err >= 0) dup2(err, 2);
      if (!cgroup_procs.empty()) {
        const int procs = open(cgroup_procs.c_str(), O_WRONLY);
        const std::string self = std::to_string(getpid());
        if (procs < 0 || write(procs, self.data(), self.size()) < 0) _exit(125);
        close(procs);
      }
      if (drop_root) {
        const passwd* pw = getpwnam("nobody");
        if (pw == nullptr || setgroups(0, nullptr) != 0 || setgid(pw->pw_gid) != 0 ||
            setuid(pw->pw_uid) != 0) {
          _exit(126);
        }
      }
      std::vector<char*> argv;
      for (std::string& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      execv(argv[0], argv.data());
      _exit(127);
    }
    close(out[1]);
    std::string line;
    char c;
    while (line.size() < 4096 && read(out[0], &c, 1) == 1 && c != '\n') line += c;
    close(out[0]);
    line_ = line;
    std::smatch m;
    const std::regex re("listening on ([0-9.]+):([0-9]+)");
    if (std::regex_search(line, m, re)) {
      address_ = m[1].str() + ":" + m[2].str();
      port_ = std::stoi(m[2].str());
    }
  }
  ~ServerChild() {
    Kill();
    std::remove(stderr_path_.c_str());
  }

  bool ok() const { return !address_.empty(); }
  const std::string& address() const { return address_; }
  int port() const { return port_; }
  pid_t pid() const { return pid_; }
  const std::string& startup_line() const { return line_; }

  void Kill() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
      pid_ = -1;
    }
  }
  // Waits up to `seconds` for the process to exit; its exit code, or -1.
  int WaitExit(int seconds) {
    for (int i = 0; i < seconds * 20 && pid_ > 0; ++i) {
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return -1;
  }
  std::string Stderr() const {
    std::ifstream in(stderr_path_);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  // Resident memory, bytes (VmRSS).
  int64_t RssBytes() const { return StatusBytes("VmRSS:"); }
  // The most resident memory the process has held since it started, bytes (VmHWM).
  int64_t PeakRssBytes() const { return StatusBytes("VmHWM:"); }
  // Whether the process is still running (not exited, not killed).
  bool Alive() {
    if (pid_ <= 0) return false;
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) != pid_) return true;
    pid_ = -1;  // reaped
    return false;
  }
  // A /proc/PID/status field given in kB, in bytes; -1 when absent.
  int64_t StatusBytes(const std::string& field) const {
    std::ifstream in("/proc/" + std::to_string(pid_) + "/status");
    std::string key;
    while (in >> key) {
      if (key == field) {
        int64_t kb = 0;
        in >> kb;
        return kb * 1024;
      }
    }
    return -1;
  }
  // CPU time used so far (user + system), seconds.
  double CpuSeconds() const {
    std::ifstream in("/proc/" + std::to_string(pid_) + "/stat");
    std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const size_t close = stat.rfind(')');
    if (close == std::string::npos) return -1;
    std::istringstream rest(stat.substr(close + 2));
    std::string field;
    double utime = 0, stime = 0;
    for (int i = 3; i <= 15 && rest >> field; ++i) {  // fields 14 and 15: utime, stime
      if (i == 14) utime = std::stod(field);
      if (i == 15) stime = std::stod(field);
    }
    return (utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
  }

 private:
  pid_t pid_ = -1;
  std::string address_;
  int port_ = 0;
  std::string line_;
  std::string stderr_path_;
};

}  // namespace scalecast::testing

#endif  // SCALECAST_TESTS_SERVER_CHILD_H_
