// The scalecast.v1.Scalecast service on gRPC's callback API. Handlers are thin: validate and
// convert, call the model or the store, convert back, map the status. Anything slower than a
// single prediction (planner searches, sweeps, validation, calibration) runs on the Boost.Asio
// pool, never on gRPC's threads.
#ifndef SCALECAST_SERVER_SERVICE_H_
#define SCALECAST_SERVER_SERVICE_H_

#include <atomic>
#include <boost/asio/thread_pool.hpp>
#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "jobs/import_job.h"
#include "model/catalog.h"
#include "model/predictor.h"
#include "model/profile.h"
#include "proto/scalecast_grpc.h"
#include "server/options.h"
#include "storage/store.h"

namespace scalecast {

// Hooks the metrics layer implements (server/metrics.h); the service calls them when set.
class ServiceObserver {
 public:
  virtual ~ServiceObserver() = default;
  virtual void OnPredictions(int64_t /*count*/) {}
  virtual void OnLayoutsEvaluated(int64_t /*count*/) {}
  virtual void OnSweepCache(bool /*hit*/) {}
  virtual void OnSweepDuration(double /*seconds*/) {}
  virtual void OnMeasurementsStored(int64_t /*count*/) {}
  virtual void OnModelError(const std::string& /*accelerator*/, const std::string& /*framework*/,
                            double /*mape*/) {}
  // The model's error on the runs of one measurement source (from Validate).
  virtual void OnModelErrorBySource(const std::string& /*source*/, double /*mape*/) {}
  virtual void OnProfiles(int64_t /*count*/) {}
  // A stored profile's drift: the median measured / predicted of the runs of its filter stored
  // since it was fitted (jobs/calibration_job.h DriftOf).
  virtual void OnProfileDrift(const std::string& /*profile*/, double /*ratio*/) {}
};

// What a write holds while it runs, for write admission (--max-write-bytes). Its request, as
// gRPC holds it: an ImportMeasurements CSV twice (the bytes received and the parsed string), a
// RecordMeasurements batch 7 times its wire size (the parsed messages: measured 5.9 to 6.1). Per
// run, its id in the outcome and in the response; per write, the one chunk of runs being stored
// (Store::kRecordChunk runs as model structs, scenario texts and statement parameters). Measured
// by tests/server_memory_test (scripts/write_memory.sh): a 100k-row import of 28 MB peaks at +62
// MB (this estimate: 77 MB), a 100k-run batch of 29 MB at +172 to +179 MB (estimate: 224 MB).
inline constexpr int64_t kImportBytesPerRequestByte = 2;
inline constexpr int64_t kRecordBytesPerRequestByte = 7;
inline constexpr int64_t kWriteBytesPerRun = 128;
inline constexpr int64_t kWriteBytesPerChunk = int64_t{8} << 20;
inline int64_t WriteHoldsBytes(int64_t request_bytes, int64_t per_request_byte, int64_t runs) {
  return request_bytes * per_request_byte + runs * kWriteBytesPerRun + kWriteBytesPerChunk;
}

// Predict's response as gRPC sends it: a PredictResponse's wire bytes, written from the model's
// structs (server/predict_codec.h), in a buffer that gRPC's serialization (below) takes as it is
// (a raw method's ByteBuffer response would be copied once more on its way out). Taken, not
// copied: the bytes are freed with the buffer gRPC sent (callgrind: a slice freed here, after the
// call, cost 190 instructions more).
struct PredictResponseBytes {
  mutable grpc::ByteBuffer buffer;  // moved out by the one Serialize of a sent response
};

}  // namespace scalecast

template <>
class grpc::SerializationTraits<scalecast::PredictResponseBytes, void> {
 public:
  static grpc::Status Serialize(const scalecast::PredictResponseBytes& r, grpc::ByteBuffer* bb,
                                bool* own_buffer) {
    *own_buffer = true;
    bb->Swap(&r.buffer);
    return grpc::Status::OK;
  }
  static grpc::Status Deserialize(grpc::ByteBuffer*, scalecast::PredictResponseBytes*) {
    return grpc::Status(grpc::StatusCode::INTERNAL, "a PredictResponseBytes is only sent");
  }
};

namespace scalecast {

// Predict is served raw: its request's bytes read into the model's Scenario and its response
// written from the model's structs (server/predict_codec.h), with no protobuf message between
// (the constructor registers PredictBytes for it); every other method takes gRPC's protobuf
// messages.
class ScalecastService final : public v1::Scalecast::CallbackService {
 public:
  // `store` and the pools must outlive the service. `pool` runs computation (sweeps, planner
  // searches, validation, calibration); `io_pool` runs writes and short store reads, so that a
  // write never waits behind a computation and no store call blocks a gRPC thread; `read_pool`
  // runs long store reads (pages of runs and profiles), so that a write never waits behind
  // them either. `token` empty = writes open.
  ScalecastService(const Catalog* catalog, Store* store, boost::asio::thread_pool* pool,
                   int pool_threads, boost::asio::thread_pool* io_pool,
                   boost::asio::thread_pool* read_pool, const ServerOptions& options,
                   std::string token, ServiceObserver* observer);

  // Predict: `req` a PredictRequest's wire bytes, `resp` the PredictResponse's.
  grpc::ServerUnaryReactor* PredictBytes(grpc::CallbackServerContext* ctx,
                                         const grpc::ByteBuffer* req, PredictResponseBytes* resp);
  grpc::ServerUnaryReactor* Compare(grpc::CallbackServerContext* ctx, const v1::CompareRequest* req,
                                    v1::CompareResponse* resp) override;
  grpc::ServerWriteReactor<v1::SweepResponse>* Sweep(grpc::CallbackServerContext* ctx,
                                                     const v1::SweepRequest* req) override;
  // server/plan.cc: jobs/plan_job streamed (progress, then the options).
  grpc::ServerWriteReactor<v1::PlanResponse>* Plan(grpc::CallbackServerContext* ctx,
                                                   const v1::PlanRequest* req) override;
  grpc::ServerUnaryReactor* RecordMeasurements(grpc::CallbackServerContext* ctx,
                                               const v1::RecordMeasurementsRequest* req,
                                               v1::RecordMeasurementsResponse* resp) override;
  grpc::ServerUnaryReactor* ImportMeasurements(grpc::CallbackServerContext* ctx,
                                               const v1::ImportMeasurementsRequest* req,
                                               v1::RecordMeasurementsResponse* resp) override;
  grpc::ServerUnaryReactor* ListMeasurements(grpc::CallbackServerContext* ctx,
                                             const v1::ListMeasurementsRequest* req,
                                             v1::ListMeasurementsResponse* resp) override;
  grpc::ServerUnaryReactor* DeleteMeasurement(grpc::CallbackServerContext* ctx,
                                              const v1::DeleteMeasurementRequest* req,
                                              v1::DeleteMeasurementResponse* resp) override;
  grpc::ServerUnaryReactor* Validate(grpc::CallbackServerContext* ctx,
                                     const v1::ValidateRequest* req,
                                     v1::ValidateResponse* resp) override;
  grpc::ServerUnaryReactor* Calibrate(grpc::CallbackServerContext* ctx,
                                      const v1::CalibrateRequest* req,
                                      v1::CalibrateResponse* resp) override;
  grpc::ServerUnaryReactor* ListProfiles(grpc::CallbackServerContext* ctx,
                                         const v1::ListProfilesRequest* req,
                                         v1::ListProfilesResponse* resp) override;
  grpc::ServerUnaryReactor* DeleteProfile(grpc::CallbackServerContext* ctx,
                                          const v1::DeleteProfileRequest* req,
                                          v1::DeleteProfileResponse* resp) override;
  grpc::ServerUnaryReactor* ListAccelerators(grpc::CallbackServerContext* ctx,
                                             const v1::ListAcceleratorsRequest* req,
                                             v1::ListAcceleratorsResponse* resp) override;
  grpc::ServerUnaryReactor* ListModels(grpc::CallbackServerContext* ctx,
                                       const v1::ListModelsRequest* req,
                                       v1::ListModelsResponse* resp) override;
  grpc::ServerUnaryReactor* RegisterAccelerator(grpc::CallbackServerContext* ctx,
                                                const v1::RegisterAcceleratorRequest* req,
                                                v1::RegisterAcceleratorResponse* resp) override;
  grpc::ServerUnaryReactor* DeleteAccelerator(grpc::CallbackServerContext* ctx,
                                              const v1::DeleteAcceleratorRequest* req,
                                              v1::DeleteAcceleratorResponse* resp) override;

  // The catalog a scenario resolves against without the store: the built-in one when it names
  // only catalog parts (cluster.accelerator, accelerator_spec.like), else the catalog with the
  // registered accelerators as last read, when that read is fresh (accelerator_refresh_ms) and
  // holds the names; null when the store must be read (ResolveCatalog, on a pool).
  std::shared_ptr<const Catalog> FreshCatalog(const Scenario& s);
  std::shared_ptr<const Catalog> FreshCatalog(absl::Span<const Scenario> scenarios);
  // The built-in catalog with every registered accelerator, read from the store (or reused when
  // a read finished after `since`). Call it on a pool, never on a gRPC thread.
  absl::StatusOr<std::shared_ptr<const Catalog>> ResolveCatalog(
      std::chrono::steady_clock::time_point since = std::chrono::steady_clock::now());
  const std::shared_ptr<const Catalog>& builtin_catalog() const { return builtin_; }

  // The profile a scenario names ("" or "default" = built-in); NOT_FOUND if unknown. May read
  // the store: call it on a pool, never on a gRPC thread. A profile read from the store is
  // trusted for options.profile_refresh_ms, then read again (so a profile replaced through
  // another replica is seen within that time).
  absl::StatusOr<std::shared_ptr<const Profile>> ResolveProfile(const std::string& name,
                                                                const std::string& path);
  // Sets out's drift fields from DriftOf (jobs/calibration_job.h) and reports it to the
  // observer; nothing for a profile that kept no filter. Reads the store: call it on a pool.
  absl::Status AddDrift(const StoredProfile& p, v1::CalibrationProfile* out);
  // The profile if it can be had without the store (built-in, or cached and fresh); else null.
  std::shared_ptr<const Profile> FreshProfile(const std::string& name);

  // Whether the call carries the write token (always true when none is configured).
  bool MayWrite(grpc::CallbackServerContext* ctx) const { return CheckWriteAuth(ctx).ok(); }

  // Runs `fn` (returning absl::Status) on the long-read lane and finishes the call with its
  // status; RESOURCE_EXHAUSTED at once when the caller (its connection) already has
  // options.max_reads_per_caller long reads running or waiting.
  grpc::ServerUnaryReactor* OnReadLane(grpc::CallbackServerContext* ctx,
                                       std::function<absl::Status()> fn);

  // Runs fn() on the long-read lane and waits for its result (from a compute thread, never a
  // gRPC one).
  template <typename Fn>
  auto OnReadPool(Fn fn) -> decltype(fn());

  // Admission of a write that holds `bytes` (WriteHoldsBytes) against options.max_write_bytes:
  // a ticket holding its share until destroyed, or RESOURCE_EXHAUSTED.
  class WriteTicket;
  absl::StatusOr<std::shared_ptr<WriteTicket>> AdmitWrite(int64_t bytes);

  // Runs `fn` (returning absl::Status) on the store threads when the measurement writes admitted
  // before it are done, and finishes the call with its status. Measurement writes serialise on
  // the store's record lock anyway (PostgreSQL: an advisory lock; SQLite: the one writer): here
  // they wait their turn holding only their admitted memory, not a store thread nor a database
  // connection, and not against the 30 s statement timeout. A call given up while it waits is
  // finished as soon as its turn comes, without running.
  grpc::ServerUnaryReactor* OnWriteLane(grpc::CallbackServerContext* ctx,
                                        std::function<absl::Status()> fn);
  void StartNextWrite();
  // A request's scenario (FromProto) with the server's defaults: hbm_headroom when unset.
  absl::StatusOr<Scenario> ScenarioFromProto(const v1::Scenario& in, absl::string_view path) const;
  absl::Status ScenarioFromProto(const v1::Scenario& in, absl::string_view path,
                                 Scenario* out) const;
  // Compare's work on a pool thread: the catalog (`fresh`, or read with the registered parts),
  // each scenario resolved and predicted, the deltas against the first.
  absl::Status CompareOnPool(const std::vector<Scenario>& given,
                             std::shared_ptr<const Catalog> fresh, v1::CompareResponse* resp);

  // A slot for one more sweep, or false at options.max_sweeps; EndSweep gives it back.
  bool TryStartSweep();
  void EndSweep();

  const Catalog& catalog() const { return *catalog_; }
  Store* store() { return store_; }
  boost::asio::thread_pool* pool() { return pool_; }
  boost::asio::thread_pool* io_pool() { return io_pool_; }
  boost::asio::thread_pool* read_pool() { return read_pool_; }
  int pool_threads() const { return pool_threads_; }
  const ServerOptions& options() const { return options_; }
  ServiceObserver* observer() { return observer_; }

 private:
  // UNAUTHENTICATED unless the call carries "authorization: Bearer <token>" (when configured).
  absl::Status CheckWriteAuth(grpc::CallbackServerContext* ctx) const;
  // Predict's answer to a scenario refused (INVALID_ARGUMENT) or infeasible (FAILED_PRECONDITION)
  // as asked, `in`: predicted at the nearest global batch that works when one is near enough
  // (model/feasibility.h, AtNearestBatch; the prediction warns), else `status` with the nearest
  // that work.
  absl::Status PredictNearest(const absl::Status& status, const Scenario& in,
                              const Catalog& catalog, PredictResponseBytes* resp);
  // The same for one scenario of a Compare (its path "scenarios[i]"): the scenario at the
  // nearest global batch, resolved, or the status with the nearest that work.
  absl::StatusOr<ResolvedScenario> CompareNearest(const absl::Status& status, const Scenario& in,
                                                  const Catalog& catalog, const std::string& path);
  // Stores checked runs in one write (on the store threads) and fills the response.
  // A write's outcome into its response (the ids moved there), the counts refreshed.
  absl::Status Stored(absl::StatusOr<RecordOutcome> stored, v1::RecordMeasurementsResponse* resp);
  // Predict's work once the catalog is at hand (any thread but a gRPC one: it may read the
  // store for the profile and run the planner).
  // `resolved`: `in` resolved already (its scenario becomes the echo), `profile` its profile
  // (each null when not at hand). The response's bytes into `resp`.
  // `nearest`: a refusal or no layout goes to PredictNearest (false once there).
  absl::Status PredictWith(const Catalog& catalog, const Scenario& in, ResolvedScenario* resolved,
                           std::shared_ptr<const Profile> profile, PredictResponseBytes* resp,
                           bool nearest = true);
  // Predict's request (its bytes) read into `out` as ScenarioFromProto converts a scenario.
  absl::Status PredictScenario(const grpc::ByteBuffer& req, Scenario* out) const;
  // The spec of a RegisterAccelerator request resolved against the built-in catalog: its base
  // (spec.like, or the nearest generation) with its fields; errors name "spec.<field>".
  absl::StatusOr<Accelerator> ResolveRegistered(const AcceleratorSpec& spec) const;
  void ForgetRegistered();  // the next request reads the store again

  const Catalog* catalog_;
  Store* store_;
  boost::asio::thread_pool* pool_;
  int pool_threads_;
  boost::asio::thread_pool* io_pool_;
  boost::asio::thread_pool* read_pool_;
  std::mutex writes_mu_;
  int64_t write_bytes_ = 0;     // estimated bytes the admitted writes hold, guarded by writes_mu_
  int writes_ = 0;              // admitted writes in progress, guarded by writes_mu_
  bool write_running_ = false;  // guarded by writes_mu_
  std::deque<std::function<void()>> write_queue_;  // the writes waiting, guarded by writes_mu_
  // Long reads running or waiting per caller address (options.max_reads_per_caller).
  std::mutex readers_mu_;
  std::map<std::string, int> readers_;
  std::atomic<int> active_sweeps_{0};
  ServerOptions options_;
  std::string token_;
  ServiceObserver* observer_;
  std::shared_ptr<const Profile> default_profile_;
  std::shared_ptr<const Catalog> builtin_;  // catalog_, not owned
  // The catalog with the registered accelerators, as last read from the store.
  std::mutex registry_mu_;
  std::shared_ptr<const Catalog> registry_;  // guarded by registry_mu_; null = never read
  std::chrono::steady_clock::time_point registry_read_at_;
  std::mutex registry_load_mu_;  // one store read at a time; later callers reuse it
  // total_count of ListMeasurements per filter, reused for a second: paging through a large
  // store does not run COUNT(*) for every page. Bounded like profiles_.
  struct CachedCount {
    int64_t count;
    std::chrono::steady_clock::time_point at;
  };
  absl::StatusOr<int64_t> CountMatching(const MeasurementFilter& filter);
  std::mutex counts_mu_;
  std::map<std::string, CachedCount> counts_;

  struct CachedProfile {
    std::shared_ptr<const Profile> profile;
    std::chrono::steady_clock::time_point read_at;
  };
  std::mutex profiles_mu_;
  // Stored profiles as last read, by name. Bounded: only names that exist in the store get in,
  // and the whole map is dropped past kMaxCachedProfiles.
  std::map<std::string, CachedProfile> profiles_;
};

}  // namespace scalecast

#endif  // SCALECAST_SERVER_SERVICE_H_
