// What every job below gRPC takes from its caller: a way to ask whether it should stop, and a
// place to say how far it got. Jobs (sweep, plan, calibration, CSV import) are plain C++: a
// server handler adapts them to a call, a tool or a test calls them directly.
#ifndef SCALECAST_JOBS_JOB_H_
#define SCALECAST_JOBS_JOB_H_

#include <cstdint>
#include <functional>

namespace scalecast {

struct JobControl {
  // Polled between units of work; true = stop and return the status `stop_status` gives.
  std::function<bool()> cancelled = [] { return false; };
  // Called from the job's thread as work completes: (done, total). May be empty.
  std::function<void(int64_t, int64_t)> progress;

  bool Cancelled() const { return cancelled && cancelled(); }
  void Progress(int64_t done, int64_t total) const {
    if (progress) progress(done, total);
  }
};

}  // namespace scalecast

#endif  // SCALECAST_JOBS_JOB_H_
