// A throwaway PostgreSQL server for tests: Debian's postgresql package (installed by
// scripts/deps.sh), initdb'd in a temporary directory, listening on 127.0.0.1 at a free port,
// run as `nobody` when the tests run as root (PostgreSQL refuses to run as root), stopped and
// removed when the test process exits. Each test asks for a database of its own.
//
// When PostgreSQL is not installed the cluster reports why (ok() false) and the tests that need
// it skip, unless SCALECAST_REQUIRE_POSTGRES=1 (CI sets it), which turns that into a failure.
#ifndef SCALECAST_TESTS_PG_HARNESS_H_
#define SCALECAST_TESTS_PG_HARNESS_H_

#include <arpa/inet.h>
#include <fcntl.h>
#include <glob.h>
#include <grp.h>
#include <libpq-fe.h>
#include <netinet/in.h>
#include <pwd.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

namespace scalecast::testing {

class PgCluster {
 public:
  // The process's cluster, started on first use.
  static PgCluster& Get() {
    static PgCluster* cluster = new PgCluster();  // stopped by the atexit hook below
    return *cluster;
  }

  bool ok() const { return error_.empty(); }
  const std::string& error() const { return error_; }
  static bool Required() {
    const char* v = std::getenv("SCALECAST_REQUIRE_POSTGRES");
    return v != nullptr && std::string(v) == "1";
  }

  // A fresh, empty database; its URI ("postgresql://scalecast@127.0.0.1:PORT/tN").
  std::string NewDatabase() {
    static std::atomic<int> n{0};
    const std::string name = "t" + std::to_string(getpid()) + "_" + std::to_string(++n);
    PGconn* c = PQconnectdb(Uri("postgres").c_str());
    if (PQstatus(c) == CONNECTION_OK) {
      PGresult* r = PQexec(c, ("CREATE DATABASE " + name).c_str());
      if (PQresultStatus(r) != PGRES_COMMAND_OK) error_ = PQresultErrorMessage(r);
      PQclear(r);
    } else {
      error_ = PQerrorMessage(c);
    }
    PQfinish(c);
    return Uri(name);
  }

  // Runs one SQL statement on database `uri` as the superuser; "" or an error message.
  static std::string Exec(const std::string& uri, const std::string& sql) {
    PGconn* c = PQconnectdb(uri.c_str());
    std::string err;
    if (PQstatus(c) != CONNECTION_OK) {
      err = PQerrorMessage(c);
    } else {
      PGresult* r = PQexec(c, sql.c_str());
      if (PQresultStatus(r) != PGRES_COMMAND_OK && PQresultStatus(r) != PGRES_TUPLES_OK) {
        err = PQresultErrorMessage(r);
      }
      PQclear(r);
    }
    PQfinish(c);
    return err;
  }

  std::string Uri(const std::string& db) const {
    return "postgresql://scalecast@127.0.0.1:" + std::to_string(port_) + "/" + db;
  }
  int port() const { return port_; }

 private:
  PgCluster() {
    owner_ = getpid();
    const std::string bin = FindBin();
    if (bin.empty()) {
      error_ =
          "PostgreSQL server binaries not found (/usr/lib/postgresql/*/bin/initdb): run "
          "scripts/deps.sh";
      return;
    }
    char tmpl[] = "/tmp/scalecast_pg_XXXXXX";
    if (mkdtemp(tmpl) == nullptr) {
      error_ = "mkdtemp failed";
      return;
    }
    dir_ = tmpl;
    chmod(dir_.c_str(), 0755);
    if (getuid() == 0) {
      const passwd* pw = getpwnam("nobody");
      if (pw == nullptr) {
        error_ = "running as root and there is no user 'nobody' to run PostgreSQL as";
        return;
      }
      uid_ = pw->pw_uid;
      gid_ = pw->pw_gid;
      if (chown(dir_.c_str(), uid_, gid_) != 0) {
        error_ = "chown of " + dir_ + " failed";
        return;
      }
    }
    const std::string data = dir_ + "/data";
    if (Run({bin + "/initdb", "-D", data, "-A", "trust", "-U", "scalecast", "-E", "UTF8",
             "--no-sync", "--locale=C"},
            dir_ + "/initdb.log", /*wait=*/true) != 0) {
      error_ = "initdb failed; see " + dir_ + "/initdb.log";
      return;
    }
    for (int attempt = 0; attempt < 5 && pid_ <= 0; ++attempt) {
      port_ = FreePort();
      pid_ = Run({bin + "/postgres", "-D", data, "-p", std::to_string(port_), "-k", dir_, "-c",
                  "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c", "full_page_writes=off",
                  "-c", "max_connections=300", "-c", "shared_buffers=64MB"},
                 dir_ + "/postgres.log", /*wait=*/false);
      if (!WaitReady()) {
        kill(pid_, SIGKILL);
        waitpid(pid_, nullptr, 0);
        pid_ = -1;
      }
    }
    if (pid_ <= 0) {
      error_ = "postgres did not start; see " + dir_ + "/postgres.log";
      return;
    }
    std::atexit([] { PgCluster::Get().Stop(); });
  }

  void Stop() {
    if (getpid() != owner_) return;  // a forked child exiting
    if (pid_ > 0) {
      kill(pid_, SIGINT);  // fast shutdown
      for (int i = 0; i < 200; ++i) {
        if (waitpid(pid_, nullptr, WNOHANG) == pid_) {
          pid_ = -1;
          break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
      if (pid_ > 0) {
        kill(pid_, SIGKILL);
        waitpid(pid_, nullptr, 0);
      }
    }
    if (!dir_.empty()) {
      std::error_code ec;
      std::filesystem::remove_all(dir_, ec);
    }
  }

  static std::string FindBin() {
    glob_t g;
    std::string out;
    if (glob("/usr/lib/postgresql/*/bin/initdb", 0, nullptr, &g) == 0 && g.gl_pathc > 0) {
      out = std::filesystem::path(g.gl_pathv[g.gl_pathc - 1]).parent_path().string();
    }
    globfree(&g);
    return out;
  }

  static int FreePort() {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(a);
    int port = 0;
    if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 &&
        getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
      port = ntohs(a.sin_port);
    }
    close(fd);
    return port;
  }

  // Runs argv as the cluster's user with output to `log`; waits and returns the exit code, or
  // returns the pid.
  int Run(const std::vector<std::string>& args, const std::string& log, bool wait) {
    const pid_t parent = getpid();
    const pid_t pid = fork();
    if (pid == 0) {
      const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (fd >= 0) {
        if (uid_ != 0 && fchown(fd, uid_, gid_) != 0) _exit(126);
        dup2(fd, 1);
        dup2(fd, 2);
      }
      if (uid_ != 0 && (setgroups(0, nullptr) != 0 || setgid(gid_) != 0 || setuid(uid_) != 0)) {
        _exit(126);
      }
      // A test process killed outright (a ctest timeout) takes its server with it: SIGQUIT,
      // PostgreSQL's immediate shutdown. Set after the uid change, which clears it.
      prctl(PR_SET_PDEATHSIG, SIGQUIT);
      if (getppid() != parent) _exit(125);  // the parent is already gone
      std::vector<char*> argv;
      for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
      argv.push_back(nullptr);
      setsid();  // Ctrl-C on the test does not reach it; Stop() does
      execv(argv[0], argv.data());
      _exit(127);
    }
    if (!wait) return pid;
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

  bool WaitReady() {
    const std::string uri = Uri("postgres");
    for (int i = 0; i < 600; ++i) {
      if (PQping(uri.c_str()) == PQPING_OK) return true;
      if (waitpid(pid_, nullptr, WNOHANG) == pid_) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
  }

  pid_t owner_ = 0;
  std::string error_;
  std::string dir_;
  uid_t uid_ = 0;
  gid_t gid_ = 0;
  int port_ = 0;
  pid_t pid_ = -1;
};

// A connection of the test's own that holds what `sql` takes (BEGIN and its locks) until Release
// or its destruction.
class PgLockHolder {
 public:
  PgLockHolder(const std::string& uri, const std::string& sql) : conn_(PQconnectdb(uri.c_str())) {
    if (PQstatus(conn_) != CONNECTION_OK) {
      error_ = PQerrorMessage(conn_);
      return;
    }
    PGresult* r = PQexec(conn_, sql.c_str());
    if (PQresultStatus(r) != PGRES_COMMAND_OK && PQresultStatus(r) != PGRES_TUPLES_OK) {
      error_ = PQresultErrorMessage(r);
    }
    PQclear(r);
  }
  PgLockHolder(const PgLockHolder&) = delete;
  PgLockHolder& operator=(const PgLockHolder&) = delete;
  ~PgLockHolder() { Release(); }
  const std::string& error() const { return error_; }
  void Release() {
    if (conn_ != nullptr) PQfinish(conn_);  // ends the transaction and every session lock
    conn_ = nullptr;
  }

 private:
  PGconn* conn_;
  std::string error_;
};

// One integer a query returns, run on a fresh connection; -1 on any error.
inline int64_t PgQueryInt(const std::string& uri, const std::string& sql) {
  PGconn* c = PQconnectdb(uri.c_str());
  int64_t out = -1;
  if (PQstatus(c) == CONNECTION_OK) {
    PGresult* r = PQexec(c, sql.c_str());
    if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1) {
      out = std::atoll(PQgetvalue(r, 0, 0));
    }
    PQclear(r);
  }
  PQfinish(c);
  return out;
}

}  // namespace scalecast::testing

// In a test: skips (or fails, when required) without PostgreSQL.
#define SCALECAST_NEED_POSTGRES()                                                     \
  do {                                                                                \
    auto& pg_cluster_ = ::scalecast::testing::PgCluster::Get();                       \
    if (!pg_cluster_.ok()) {                                                          \
      if (::scalecast::testing::PgCluster::Required()) FAIL() << pg_cluster_.error(); \
      GTEST_SKIP() << "no PostgreSQL: " << pg_cluster_.error();                       \
    }                                                                                 \
  } while (0)

#endif  // SCALECAST_TESTS_PG_HARNESS_H_
