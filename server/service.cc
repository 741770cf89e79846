#include "server/service.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <algorithm>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <deque>
#include <functional>
#include <future>
#include <map>
#include <set>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "jobs/calibration_job.h"
#include "jobs/import_job.h"
#include "jobs/sweep_job.h"
#include "jobs/validate_job.h"
#include "jobs/validation.h"
#include "model/calibration.h"
#include "model/feasibility.h"
#include "model/framework.h"
#include "model/model_fields_gen.h"
#include "model/planner.h"
#include "model/predictor.h"
#include "model/step.h"
#include "model/uncertainty.h"
#include "model/version.h"
#include "server/convert.h"
#include "server/predict_codec.h"
#include "server/status.h"
#include "storage/store.h"

namespace scalecast {
namespace {

using Clock = std::chrono::steady_clock;

// The resolved scenario as echoed to the caller: the stack as the model resolved it (every
// feature the framework's defaults decided), and the network the model assumes when the request
// left it to the accelerator's usual system.
// The stack as resolved, into `echo` (the request's stack): every switch
// (model/model_fields_gen.h), the recipe, the kernel and context parallelism's exchange.
void EchoStack(const ResolvedScenario& resolved, StackOptions* echo) {
  const Stack& stack = resolved.stack;
  // A dense model's echo leaves the MoE dispatcher's switches as the request gave them.
  const std::optional<bool> fused_dispatch = echo->fused_dispatch;
  const std::optional<bool> ep_comm_overlap = echo->ep_comm_overlap;
  field_rules::VisitStackSwitches(*echo, stack,
                                  [](const char*, std::optional<bool>& e, bool v) { e = v; });
  if (!resolved.scenario.workload.model.moe.enabled()) {
    echo->fused_dispatch = fused_dispatch;
    echo->ep_comm_overlap = ep_comm_overlap;
  }
  const absl::string_view recipe = ToString(stack.fp8_recipe);
  const absl::string_view kernel = ToString(stack.attention);
  if (echo->fp8_recipe != recipe) echo->fp8_recipe.assign(recipe.data(), recipe.size());
  if (echo->attention_kernel != kernel) echo->attention_kernel.assign(kernel.data(), kernel.size());
  // The exchange where context parallelism may run (cp above 1, or left to the planner), or where
  // the request named one.
  if (resolved.scenario.parallelism.cp != 1 || !echo->cp_comm_type.empty()) {
    const absl::string_view comm = ToString(stack.cp_comm);
    if (echo->cp_comm_type != comm) echo->cp_comm_type.assign(comm.data(), comm.size());
  }
  // The release only where the request named a version: with none the stack is priced at today's
  // libraries (model/framework.h, ResolveStack), which no release names, and the echo must
  // predict as the request did.
  if (!resolved.scenario.stack.version.empty()) echo->version = stack.version;
}

// The network the echo names: the accelerator's usual system's where the request left it.
double EchoNetwork(const ResolvedScenario& resolved) {
  const double asked = resolved.scenario.cluster.inter_node_gbps_per_gpu;
  return asked <= 0 ? resolved.accelerator->net_gbps : asked;
}

void EchoScenario(const ResolvedScenario& resolved, v1::Scenario* out) {
  ToProto(resolved.scenario, out);
  StackOptions echo = resolved.scenario.stack;
  EchoStack(resolved, &echo);
  ToProto(echo, out->mutable_stack());
  out->mutable_cluster()->set_inter_node_gbps_per_gpu(EchoNetwork(resolved));
}

// The same echo made of the resolved scenario itself, for Predict's struct writer (nothing reads
// the scenario after its prediction).
void EchoInPlace(ResolvedScenario* resolved) {
  EchoStack(*resolved, &resolved->scenario.stack);
  resolved->scenario.cluster.inter_node_gbps_per_gpu = EchoNetwork(*resolved);
}

std::string Deterministic(const google::protobuf::MessageLite& m) {
  std::string out;
  {
    google::protobuf::io::StringOutputStream sos(&out);
    google::protobuf::io::CodedOutputStream cos(&sos);
    cos.SetSerializationDeterministic(true);
    m.SerializeToCodedStream(&cos);
  }
  return out;
}

// Length-prefixed concatenation of serialized results: the sweep cache's value format.
std::string EncodeResults(const std::vector<v1::SweepResult>& results) {
  std::string out;
  for (const v1::SweepResult& r : results) {
    const std::string bytes = r.SerializeAsString();
    const uint64_t n = bytes.size();
    out.append(reinterpret_cast<const char*>(&n), sizeof(n));
    out.append(bytes);
  }
  return out;
}

bool DecodeResults(const std::string& in, std::vector<v1::SweepResult>* out) {
  size_t pos = 0;
  while (pos < in.size()) {
    uint64_t n = 0;
    if (in.size() - pos < sizeof(n)) return false;
    std::memcpy(&n, in.data() + pos, sizeof(n));
    pos += sizeof(n);
    if (in.size() - pos < n) return false;
    v1::SweepResult r;
    if (!r.ParseFromArray(in.data() + pos, static_cast<int>(n))) return false;
    out->push_back(std::move(r));
    pos += n;
  }
  return true;
}

MeasurementFilter FilterFromProto(const v1::MeasurementFilter& f) {
  MeasurementFilter out;
  out.accelerator = f.accelerator();
  out.framework = f.framework();
  out.source = f.source();
  for (const auto& [k, v] : f.labels()) out.labels[k] = v;
  return out;
}

// Whether long work should stop: the client cancelled or its deadline passed (by our clock: under
// load gRPC may mark the call cancelled only some time after its deadline).
bool Abandoned(grpc::CallbackServerContext* ctx) {
  return ctx->IsCancelled() || std::chrono::system_clock::now() >= ctx->deadline();
}

// The status of a call the client gave up on: DEADLINE_EXCEEDED past its deadline, else
// CANCELLED (both arrive as a cancellation).
grpc::Status GaveUp(grpc::CallbackServerContext* ctx, absl::string_view what) {
  if (std::chrono::system_clock::now() >= ctx->deadline()) {
    return grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED,
                        absl::StrCat(what, " ran past its deadline"));
  }
  return grpc::Status(grpc::StatusCode::CANCELLED, absl::StrCat(what, " was cancelled"));
}

// Runs `fn` (returning absl::Status) on `pool` and finishes the call with its status. A call
// cancelled (or past its deadline) before or while fn runs ends with that, not with fn's status:
// work the client gave up on is not reported as done, and work fn stopped because the deadline
// passed is counted as past its deadline whether or not gRPC has noticed yet.
template <typename Fn>
void FinishOnPool(boost::asio::thread_pool* pool, grpc::ServerUnaryReactor* reactor,
                  grpc::CallbackServerContext* ctx, Fn fn) {
  boost::asio::post(*pool, [reactor, ctx, fn = std::move(fn)]() mutable {
    if (Abandoned(ctx)) {
      reactor->Finish(GaveUp(ctx, "the call"));
      return;
    }
    const absl::Status s = fn();
    if (Abandoned(ctx)) {
      reactor->Finish(GaveUp(ctx, "the call"));
      return;
    }
    reactor->Finish(ToGrpcStatus(s));
  });
}

template <typename Fn>
grpc::ServerUnaryReactor* OnPool(boost::asio::thread_pool* pool, grpc::CallbackServerContext* ctx,
                                 Fn fn) {
  grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
  FinishOnPool(pool, reactor, ctx, std::move(fn));
  return reactor;
}

grpc::ServerUnaryReactor* Done(grpc::CallbackServerContext* ctx, const absl::Status& s) {
  grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
  reactor->Finish(ToGrpcStatus(s));
  return reactor;
}

// Runs read per page by Validate (the store's largest page).
constexpr int kValidatePage = 1000;

// The model's error per accelerator and framework pair, for the model-error gauge.
void ReportModelError(const ValidationReport& r, ServiceObserver* observer) {
  std::map<std::pair<std::string, std::string>, std::vector<double>> pairs;
  for (const ValidationRow& row : r.rows) {
    if (!row.failure.empty()) continue;
    const Scenario& s = row.measurement->scenario;
    pairs[{s.cluster.accelerator, s.framework}].push_back(std::fabs(row.error));
  }
  for (const auto& [k, v] : pairs) observer->OnModelError(k.first, k.second, Summarise(v).mape);
}

// The model's error per source, for the model-error gauge: the largest groups, smallest first,
// so that when the gauge keeps fewer sources than there are, the largest are the ones kept.
void ReportModelErrorBySource(const ValidationReport& r, ServiceObserver* observer) {
  std::vector<std::pair<std::string, ErrorStats>> groups =
      LargestGroups(r.by_source, kMaxValidateGroups);
  for (auto it = groups.rbegin(); it != groups.rend(); ++it) {
    observer->OnModelErrorBySource(it->first, it->second.mape);
  }
}

void FillDelta(const Prediction& base, const Prediction& p, int base_gpus, int gpus, v1::Delta* d) {
  d->set_throughput_ratio(p.tokens_per_s / base.tokens_per_s);
  d->set_per_gpu_throughput_ratio(p.tokens_per_s_per_gpu / base.tokens_per_s_per_gpu);
  d->set_scaling_efficiency(d->throughput_ratio() / (static_cast<double>(gpus) / base_gpus));
  d->set_watts_per_gpu_ratio(p.power.watts_per_gpu / base.power.watts_per_gpu);
  d->set_joules_per_token_ratio(p.power.joules_per_token / base.power.joules_per_token);
  d->set_mfu_delta(p.mfu - base.mfu);
}

// ------------------------------------------------------------------------------------------
// Sweep: a server-streaming reactor whose work runs on the pool, split across its threads.

class SweepReactor;

// State shared by the reactor and its pool tasks; outlives whichever finishes first.
struct SweepJob {
  // Recursive: gRPC may run a reaction (OnWriteDone, OnDone) inline in StartWrite or Finish.
  std::recursive_mutex mu;
  SweepReactor* reactor = nullptr;  // null once the call is done
  std::atomic<bool> cancelled{false};
  std::atomic<int64_t> evaluated{0};
  // Cancels the call when its reader stalls (options.sweep_idle_timeout_ms); guarded by mu.
  std::unique_ptr<boost::asio::steady_timer> idle;
};

class SweepReactor final : public grpc::ServerWriteReactor<v1::SweepResponse> {
 public:
  SweepReactor(ScalecastService* svc, grpc::CallbackServerContext* ctx, const v1::SweepRequest* req)
      : svc_(svc), ctx_(ctx), job_(std::make_shared<SweepJob>()) {
    job_->reactor = this;
    started_ = Clock::now();
    // Each sweep holds memory and a reader's attention: a bounded number at once.
    if (!svc_->TryStartSweep()) {
      Finish(grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                          absl::StrCat("too many sweeps at once (the limit is ",
                                       svc_->options().max_sweeps, "); retry later")));
      return;
    }
    has_slot_ = true;
    job_->idle = std::make_unique<boost::asio::steady_timer>(svc_->io_pool()->get_executor());
    auto base = svc_->ScenarioFromProto(req->base(), "base");
    catalog_ = base.ok() ? svc_->FreshCatalog(*base) : svc_->builtin_catalog();
    std::shared_ptr<SweepJob> job = job_;
    if (catalog_ == nullptr) {
      // A registered accelerator: the catalog is read on the store's threads, then the sweep
      // is prepared and run as below.
      boost::asio::post(*svc_->io_pool(), [job, svc = svc_, req] {
        absl::StatusOr<std::shared_ptr<const Catalog>> c = svc->ResolveCatalog();
        std::lock_guard<std::recursive_mutex> l(job->mu);
        if (job->reactor == nullptr) return;
        if (!c.ok()) {
          job->reactor->FinishLocked(c.status());
          return;
        }
        job->reactor->catalog_ = *c;
        job->reactor->PrepareAndRunLocked(*req);
      });
      return;
    }
    // The job, not the reactor, holds the lock: a Finish here may delete the reactor.
    std::lock_guard<std::recursive_mutex> l(job->mu);
    PrepareAndRunLocked(*req);
  }

  // Prepares the sweep against catalog_ and posts its run to the pool; job->mu held.
  void PrepareAndRunLocked(const v1::SweepRequest& req) {
    absl::Status s = Prepare(req);
    if (!s.ok()) {
      FinishLocked(s);
      return;
    }
    std::shared_ptr<SweepJob> job = job_;
    boost::asio::post(*svc_->pool(), [job] {
      std::lock_guard<std::recursive_mutex> l(job->mu);
      if (job->reactor != nullptr) job->reactor->RunLocked();
    });
  }

  void OnWriteDone(bool ok) override {
    std::lock_guard<std::recursive_mutex> l(job_->mu);
    writing_ = false;
    job_->idle->cancel();
    if (!ok) job_->cancelled = true;
    PumpLocked();
  }

  void OnCancel() override { job_->cancelled = true; }

  void OnDone() override {
    {
      std::lock_guard<std::recursive_mutex> l(job_->mu);
      job_->reactor = nullptr;
      if (job_->idle) job_->idle->cancel();
    }
    if (has_slot_) svc_->EndSweep();
    delete this;
  }

 private:
  struct Count {
    int gpus = 0;
    ResolvedScenario resolved;
    LayoutSpace layouts;  // listed lazily: kilobytes of axes
    std::map<std::string, int64_t> rejected;
  };

  absl::Status Prepare(const v1::SweepRequest& req) {
    auto base = svc_->ScenarioFromProto(req.base(), "base");
    if (!base.ok()) return base.status();
    auto objective = scalecast::FromProto(req.objective(), "objective");
    if (!objective.ok()) return objective.status();
    const ServerOptions& o = svc_->options();
    bounds_ = SweepBounds{o.sweep_max_gpu_counts, o.sweep_max_top_k, o.sweep_max_layouts,
                          o.sweep_max_bytes};
    absl::StatusOr<SweepPlan> plan =
        PlanSweep(SweepAsk{*base,
                           {req.gpu_counts().begin(), req.gpu_counts().end()},
                           req.top_k(),
                           req.limits().max_layouts(),
                           req.limits().max_gpu_counts(),
                           *objective},
                  bounds_, *catalog_);
    if (!plan.ok()) return plan.status();
    plan_ = *std::move(plan);
    options_ = plan_.options;
    std::vector<int> counts;
    for (SweepCount& sc : plan_.counts) {
      counts.push_back(sc.gpus);
      Count c;
      c.gpus = sc.gpus;
      c.resolved = sc.resolved;
      counts_.push_back(std::move(c));
    }
    // The profile is read on the pool (RunLocked): the store is never called here.
    profile_name_ = base->calibration.empty() ? "default" : base->calibration;
    label_ = base->label;
    // The cache key: the canonical request, without what does not change the answer: the
    // label, the limits, refresh, and the order of the GPU counts.
    v1::SweepRequest key = req;
    key.clear_refresh();
    key.clear_limits();
    key.clear_gpu_counts();
    std::vector<int> sorted = counts;
    std::sort(sorted.begin(), sorted.end());
    for (int g : sorted) key.add_gpu_counts(g);
    ToProto(counts_.front().resolved.scenario, key.mutable_base());
    key.mutable_base()->mutable_cluster()->set_num_gpus(0);
    key.mutable_base()->set_calibration(profile_name_);
    key.mutable_base()->clear_label();
    cache_key_ = Deterministic(key);
    // A registered or described part: its resolved figures too (a registration replaced
    // through another replica changes them under the same id).
    const Accelerator* acc = counts_.front().resolved.accelerator;
    if (acc != nullptr && acc->origin != "catalog") {
      v1::Accelerator figures;
      ToProto(*acc, &figures);
      cache_key_ += Deterministic(figures);
    }
    refresh_ = req.refresh();
    // A tokenless caller may read the cache but not fill it when writes need a token.
    may_cache_ = svc_->MayWrite(ctx_);
    return absl::OkStatus();
  }

  // On a pool thread, job->mu held.
  void RunLocked() {
    if (job_->cancelled) {
      FinishLocked(absl::CancelledError("the sweep was cancelled"));
      return;
    }
    auto profile = svc_->ResolveProfile(profile_name_, "base.calibration");
    if (!profile.ok()) {
      FinishLocked(profile.status());
      return;
    }
    profile_ = *profile;
    if (!refresh_) {
      auto cached = svc_->store()->GetCachedSweep(cache_key_, ModelVersion(), profile_->name);
      std::vector<v1::SweepResult> results;
      if (cached.ok() && cached->has_value() && DecodeResults(**cached, &results)) {
        // In this request's order of GPU counts, with this caller's label.
        std::map<int, v1::SweepResult> by_count;
        for (v1::SweepResult& r : results) by_count[r.gpu_count()] = std::move(r);
        bool complete = true;
        for (const Count& c : counts_) complete = complete && by_count.count(c.gpus) > 0;
        if (complete) {
          if (svc_->observer()) svc_->observer()->OnSweepCache(true);
          for (const Count& c : counts_) {
            v1::SweepResult& r = by_count[c.gpus];
            r.set_cached(true);
            EchoScenario(c.resolved, r.mutable_scenario());
            if (r.has_best()) r.mutable_best()->set_label(label_);
            for (v1::Prediction& p : *r.mutable_top()) p.set_label(label_);
            v1::SweepResponse msg;
            *msg.mutable_result() = std::move(r);
            queue_.push_back(std::move(msg));
          }
          FinishLocked(absl::OkStatus());
          return;
        }
      }
    }
    if (svc_->observer()) svc_->observer()->OnSweepCache(false);
    // Enumerate every count first: an oversized search is refused before anything is sent.
    // Every count's layout space is held, together bounded by options.sweep_max_bytes.
    size_t held = 0;
    for (size_t i = 0; i < counts_.size(); ++i) {
      Count& c = counts_[i];
      absl::StatusOr<LayoutSpace> layouts =
          SweepLayouts(plan_.counts[i], plan_, bounds_, *catalog_, &c.rejected, held);
      if (!layouts.ok()) {
        FinishLocked(layouts.status());
        return;
      }
      c.layouts = *std::move(layouts);
      held += c.layouts.bytes();
      total_ += static_cast<int64_t>(c.layouts.size());
    }
    StartCountLocked(0);
  }

  void StartCountLocked(size_t index) {
    if (job_->cancelled) {
      FinishLocked(absl::CancelledError("the sweep was cancelled"));
      return;
    }
    if (index >= counts_.size()) {
      CacheThenFinishLocked();
      return;
    }
    current_ = index;
    Count& c = counts_[index];
    CountSearch search = StartCountSearch(plan_.counts[index], *profile_, c.rejected);
    model_ = search.model;
    partial_ = std::move(search.seed);
    EnqueueProgressLocked(true);
    const std::vector<std::pair<size_t, size_t>> chunks =
        SweepChunks(c.layouts.size(), svc_->pool_threads());
    pending_chunks_ = chunks.size();
    for (const auto& [begin, end] : chunks) {
      boost::asio::post(*svc_->pool(), [job = job_, model = model_, layouts = &c.layouts,
                                        opts = options_, begin, end] {
        PlanResult part =
            EvaluateChunk(*model, *layouts, begin, end, opts, [&](int64_t delta, bool last) {
              job->evaluated += delta;
              if (last || job->cancelled) return false;
              std::lock_guard<std::recursive_mutex> l(job->mu);
              if (job->reactor != nullptr) job->reactor->EnqueueProgressLocked(false);
              return true;
            });
        std::lock_guard<std::recursive_mutex> l(job->mu);
        if (job->reactor != nullptr) job->reactor->ChunkDoneLocked(std::move(part));
      });
    }
  }

  // Every count searched: the results go to the cache (when this caller may fill it), then the
  // call finishes.
  void CacheThenFinishLocked() {
    if (!may_cache_) {
      FinishLocked(absl::OkStatus());
      return;
    }
    // Not here, under job->mu: gRPC's threads take it in OnWriteDone, and no gRPC thread may wait
    // on the store (a lock held by an import on another replica, a frozen database). The write
    // runs on the store threads with copies of what it needs, bounded in time by the store (a
    // failure only costs a recomputation later); the call finishes after it, so that a caller
    // who saw this sweep finish finds it cached.
    boost::asio::post(*svc_->io_pool(),
                      [job = job_, store = svc_->store(), key = cache_key_,
                       profile = profile_->name, value = EncodeResults(results_)] {
                        store->PutCachedSweep(key, ModelVersion(), profile, value).IgnoreError();
                        std::lock_guard<std::recursive_mutex> l(job->mu);
                        if (job->reactor != nullptr) job->reactor->FinishLocked(absl::OkStatus());
                      });
  }

  void ChunkDoneLocked(PlanResult part) {
    MergeResults(options_, &partial_, std::move(part));
    if (--pending_chunks_ > 0) return;
    Count& c = counts_[current_];
    const int64_t layouts = static_cast<int64_t>(c.layouts.size());
    c.layouts = LayoutSpace();  // done with them
    if (svc_->observer()) {
      svc_->observer()->OnLayoutsEvaluated(layouts);
      svc_->observer()->OnPredictions(layouts);
    }
    if (job_->cancelled) {
      FinishLocked(absl::CancelledError("the sweep was cancelled"));
      return;
    }
    FinishCountSearch(plan_.counts[current_], *model_, *profile_, &partial_);
    v1::SweepResult r;
    r.set_gpu_count(c.gpus);
    if (!partial_.top.empty()) ToProto(partial_.top.front(), r.mutable_best());
    for (const Prediction& p : partial_.top) ToProto(p, r.add_top());
    r.set_evaluated_count(partial_.evaluated_count);
    r.set_infeasible_count(partial_.infeasible_count);
    for (const auto& [reason, n] : partial_.infeasible_reasons) {
      v1::InfeasibleReason* ir = r.add_infeasible_reasons();
      ir->set_reason(reason);
      ir->set_count(n);
    }
    r.set_cached(false);
    results_.push_back(r);
    EchoScenario(c.resolved, r.mutable_scenario());  // sent, not cached: the key holds it
    EnqueueProgressLocked(true);
    v1::SweepResponse msg;
    *msg.mutable_result() = std::move(r);
    queue_.push_back(std::move(msg));
    PumpLocked();
    StartCountLocked(current_ + 1);
  }

  // Progress at most every 100 ms (the contract is at least every 200 ms); `force` for the
  // first and last of each GPU count. A queued progress message not yet sent is replaced.
  void EnqueueProgressLocked(bool force) {
    const Clock::time_point now = Clock::now();
    if (!force && now - last_progress_ < std::chrono::milliseconds(100)) return;
    last_progress_ = now;
    v1::SweepResponse msg;
    v1::SweepProgress* p = msg.mutable_progress();
    p->set_evaluated_count(job_->evaluated.load());
    p->set_total_count(total_);
    p->set_gpu_count(counts_.empty() ? 0 : counts_[current_].gpus);
    if (!queue_.empty() && queue_.back().has_progress()) {
      queue_.back() = std::move(msg);
    } else {
      queue_.push_back(std::move(msg));
    }
    PumpLocked();
  }

  void FinishLocked(absl::Status s) {
    if (finishing_) return;
    finishing_ = true;
    final_ = ToGrpcStatus(s);
    if (svc_->observer() && s.ok()) {
      svc_->observer()->OnSweepDuration(
          std::chrono::duration<double>(Clock::now() - started_).count());
    }
    PumpLocked();
  }

  void PumpLocked() {
    if (writing_ || finished_) return;
    if (!queue_.empty() && !job_->cancelled) {
      current_msg_ = std::move(queue_.front());
      queue_.pop_front();
      writing_ = true;
      ArmIdleLocked();
      StartWrite(&current_msg_);
      return;
    }
    if (finishing_) {
      finished_ = true;
      if (job_->cancelled && (final_.ok() || final_.error_code() == grpc::StatusCode::CANCELLED)) {
        // Tell a deadline from a cancellation (both arrive as OnCancel).
        final_ = std::chrono::system_clock::now() >= ctx_->deadline()
                     ? grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED,
                                    "the sweep ran past its deadline")
                     : grpc::Status(grpc::StatusCode::CANCELLED, "the sweep was cancelled");
      }
      Finish(final_);
    }
  }

  // A reader that takes no message for sweep_idle_timeout_ms has its call cancelled, so that
  // an unread stream does not hold its slot and memory for ever.
  void ArmIdleLocked() {
    job_->idle->expires_after(std::chrono::milliseconds(svc_->options().sweep_idle_timeout_ms));
    std::weak_ptr<SweepJob> weak = job_;
    job_->idle->async_wait([weak](const boost::system::error_code& ec) {
      if (ec) return;  // cancelled: the write completed
      std::shared_ptr<SweepJob> job = weak.lock();
      if (job == nullptr) return;
      std::lock_guard<std::recursive_mutex> l(job->mu);
      if (job->reactor != nullptr) job->reactor->IdleLocked();
    });
  }

  void IdleLocked() {
    if (!writing_) return;
    job_->cancelled = true;
    ctx_->TryCancel();
  }

  ScalecastService* svc_;
  grpc::CallbackServerContext* ctx_;
  std::shared_ptr<SweepJob> job_;
  std::shared_ptr<const Catalog> catalog_;  // with the registered accelerators where named
  Clock::time_point started_;
  SweepBounds bounds_;
  SweepPlan plan_;  // the checked request, each count resolved once (jobs/sweep_job.h)
  PlanOptions options_;
  std::vector<Count> counts_;
  std::shared_ptr<const Profile> profile_;  // resolved on the pool
  std::string profile_name_;
  std::string label_;
  std::string cache_key_;
  bool refresh_ = false;
  bool may_cache_ = false;
  bool has_slot_ = false;
  // Below: guarded by job_->mu.
  int64_t total_ = 0;
  size_t current_ = 0;
  size_t pending_chunks_ = 0;
  std::shared_ptr<const StepModel> model_;
  PlanResult partial_;
  std::vector<v1::SweepResult> results_;
  std::deque<v1::SweepResponse> queue_;
  v1::SweepResponse current_msg_;
  bool writing_ = false, finishing_ = false, finished_ = false;
  grpc::Status final_;
  Clock::time_point last_progress_;
};

}  // namespace

ScalecastService::ScalecastService(const Catalog* catalog, Store* store,
                                   boost::asio::thread_pool* pool, int pool_threads,
                                   boost::asio::thread_pool* io_pool,
                                   boost::asio::thread_pool* read_pool,
                                   const ServerOptions& options, std::string token,
                                   ServiceObserver* observer)
    : catalog_(catalog),
      store_(store),
      pool_(pool),
      pool_threads_(std::max(1, pool_threads)),
      io_pool_(io_pool),
      read_pool_(read_pool),
      options_(options),
      token_(std::move(token)),
      observer_(observer),
      default_profile_(std::make_shared<const Profile>(Profile::BuiltinDefault())),
      builtin_(catalog, [](const Catalog*) {}) {
  // Predict's handler replaces the generated one, at the method's index in the service (the
  // generated code numbers the methods in the proto's order).
  const int predict = v1::PredictRequest::descriptor()
                          ->file()
                          ->FindServiceByName("Scalecast")
                          ->FindMethodByName("Predict")
                          ->index();
  MarkMethodRawCallback(
      predict, new grpc::internal::CallbackUnaryHandler<grpc::ByteBuffer, PredictResponseBytes>(
                   [this](grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* req,
                          PredictResponseBytes* resp) { return PredictBytes(ctx, req, resp); }));
}

namespace {
// Profiles kept in memory at most; past it the cache starts again (names come from callers).
constexpr size_t kMaxCachedProfiles = 1024;
}  // namespace

std::shared_ptr<const Profile> ScalecastService::FreshProfile(const std::string& name) {
  if (name.empty() || name == "default") return default_profile_;
  std::lock_guard<std::mutex> l(profiles_mu_);
  auto it = profiles_.find(name);
  if (it == profiles_.end() || std::chrono::steady_clock::now() - it->second.read_at >
                                   std::chrono::milliseconds(options_.profile_refresh_ms)) {
    return nullptr;
  }
  return it->second.profile;
}

namespace {

// A scenario refused or infeasible as asked (`in`, refused with `status`): the scenario at the
// nearest global batch that works when one is near enough (model/feasibility.h, AtNearestBatch;
// it carries the warning), else `status` with the nearest GPU counts, global batches and micro
// batches that work appended in words, when the search found any.
absl::StatusOr<Scenario> AtNearestOr(const absl::Status& status, const Scenario& in,
                                     const Catalog& catalog, const Profile& profile,
                                     absl::string_view path) {
  const NearestFeasible nearest = FindNearestFeasible(in, catalog, profile);
  if (std::optional<Scenario> at = AtNearestBatch(in, nearest, path)) return *std::move(at);
  const std::string words = DescribeNearest(nearest, in);
  if (words.empty()) return status;
  return absl::Status(status.code(), absl::StrCat(status.message(), ". ", words));
}

}  // namespace

absl::Status ScalecastService::PredictNearest(const absl::Status& status, const Scenario& in,
                                              const Catalog& catalog, PredictResponseBytes* resp) {
  auto profile = ResolveProfile(in.calibration, "scenario.calibration");
  if (!profile.ok()) return status;
  absl::StatusOr<Scenario> at = AtNearestOr(status, in, catalog, **profile, "scenario");
  if (!at.ok()) return at.status();
  return PredictWith(catalog, *at, nullptr, *profile, resp, /*nearest=*/false);
}

absl::StatusOr<ResolvedScenario> ScalecastService::CompareNearest(const absl::Status& status,
                                                                  const Scenario& in,
                                                                  const Catalog& catalog,
                                                                  const std::string& path) {
  auto profile = ResolveProfile(in.calibration, path + ".calibration");
  if (!profile.ok()) return status;
  absl::StatusOr<Scenario> at = AtNearestOr(status, in, catalog, **profile, path);
  if (!at.ok()) return at.status();
  return Resolve(*at, catalog, path);  // the search predicted it: it resolves and fits
}

absl::StatusOr<std::shared_ptr<const Profile>> ScalecastService::ResolveProfile(
    const std::string& name, const std::string& path) {
  if (std::shared_ptr<const Profile> p = FreshProfile(name)) return p;
  if (name.size() > kMaxNameBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": longer than ", kMaxNameBytes, " bytes"));
  }
  absl::StatusOr<StoredProfile> stored = store_->GetProfile(name);
  if (!stored.ok()) {
    if (stored.status().code() == absl::StatusCode::kNotFound) {
      std::lock_guard<std::mutex> l(profiles_mu_);
      profiles_.erase(name);  // deleted elsewhere
      return absl::NotFoundError(absl::StrCat(path, ": unknown calibration profile '", name, "'"));
    }
    return stored.status();
  }
  // A layer is its base (resolved the same way, from the store) with its changes applied.
  absl::StatusOr<Profile> resolved = ResolveLayers(
      stored->profile, *default_profile_, [this](const std::string& n) -> absl::StatusOr<Profile> {
        absl::StatusOr<StoredProfile> base = store_->GetProfile(n);
        if (!base.ok()) return base.status();
        return base->profile;
      });
  if (!resolved.ok()) {
    return absl::Status(resolved.status().code(),
                        absl::StrCat(path, ": ", resolved.status().message()));
  }
  auto p = std::make_shared<const Profile>(*std::move(resolved));
  std::lock_guard<std::mutex> l(profiles_mu_);
  if (profiles_.size() >= kMaxCachedProfiles) profiles_.clear();
  profiles_[name] = CachedProfile{p, std::chrono::steady_clock::now()};
  return std::shared_ptr<const Profile>(p);
}

absl::StatusOr<int64_t> ScalecastService::CountMatching(const MeasurementFilter& filter) {
  std::string key;
  for (const std::string* part : {&filter.accelerator, &filter.framework, &filter.source}) {
    absl::StrAppend(&key, part->size(), ":", *part);
  }
  for (const auto& [k, v] : filter.labels)
    absl::StrAppend(&key, k.size(), ":", k, v.size(), ":", v);
  const auto now = std::chrono::steady_clock::now();
  {
    std::lock_guard<std::mutex> l(counts_mu_);
    auto it = counts_.find(key);
    if (it != counts_.end() && now - it->second.at < std::chrono::seconds(1)) {
      return it->second.count;
    }
  }
  absl::StatusOr<int64_t> n = store_->CountMeasurements(filter);
  if (!n.ok()) return n;
  std::lock_guard<std::mutex> l(counts_mu_);
  if (counts_.size() >= kMaxCachedProfiles) counts_.clear();
  counts_[key] = CachedCount{*n, now};
  return n;
}

grpc::ServerUnaryReactor* ScalecastService::OnReadLane(grpc::CallbackServerContext* ctx,
                                                       std::function<absl::Status()> fn) {
  // A caller is a connection (address and port): many clients behind one address (a proxy, a
  // node) are not one caller.
  const std::string caller = ctx->peer();
  {
    std::lock_guard<std::mutex> l(readers_mu_);
    int& n = readers_[caller];
    if (n >= options_.max_reads_per_caller) {
      return Done(ctx, absl::ResourceExhaustedError(absl::StrCat(
                           "too many long reads at once from ", caller, " (the limit is ",
                           options_.max_reads_per_caller, " per caller); retry later")));
    }
    ++n;
  }
  // Given back when the task is done with, whether it ran or was dropped.
  struct Slot {
    ScalecastService* svc;
    std::string caller;
    ~Slot() {
      std::lock_guard<std::mutex> l(svc->readers_mu_);
      auto it = svc->readers_.find(caller);
      if (it != svc->readers_.end() && --it->second <= 0) svc->readers_.erase(it);
    }
  };
  std::shared_ptr<Slot> slot(new Slot{this, caller});
  return OnPool(read_pool_, ctx, [slot, ctx, fn = std::move(fn)]() mutable {
    absl::Status s;
    {
      // A read the caller gives up on (deadline, cancel) is interrupted in the database.
      ReadInterrupt interrupt([ctx] { return Abandoned(ctx); });
      s = fn();
    }
    // Given back before the reply goes out: a caller that sends its next read as soon as this
    // one answers must find its slot free, not racing the pool thread's clean-up.
    slot.reset();
    return s;
  });
}

template <typename Fn>
auto ScalecastService::OnReadPool(Fn fn) -> decltype(fn()) {
  auto task = std::make_shared<std::packaged_task<decltype(fn())()>>(std::move(fn));
  auto result = task->get_future();
  boost::asio::post(*read_pool_, [task] { (*task)(); });
  return result.get();
}

class ScalecastService::WriteTicket {
 public:
  WriteTicket(ScalecastService* svc, int64_t bytes) : svc_(svc), bytes_(bytes) {}
  WriteTicket(const WriteTicket&) = delete;
  WriteTicket& operator=(const WriteTicket&) = delete;
  ~WriteTicket() {
    std::lock_guard<std::mutex> l(svc_->writes_mu_);
    svc_->write_bytes_ -= bytes_;
    --svc_->writes_;
  }

 private:
  ScalecastService* svc_;
  int64_t bytes_;
};

absl::StatusOr<std::shared_ptr<ScalecastService::WriteTicket>> ScalecastService::AdmitWrite(
    int64_t bytes) {
  std::lock_guard<std::mutex> l(writes_mu_);
  if (writes_ > 0 && write_bytes_ + bytes > options_.max_write_bytes) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "too many writes at once: this one (about ", bytes >> 20, " MiB held) would take the ",
        "memory writes hold past --max-write-bytes (", options_.max_write_bytes, "); retry later"));
  }
  write_bytes_ += bytes;
  ++writes_;
  return std::make_shared<WriteTicket>(this, bytes);
}

grpc::ServerUnaryReactor* ScalecastService::OnWriteLane(grpc::CallbackServerContext* ctx,
                                                        std::function<absl::Status()> fn) {
  grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
  std::function<void()> task = [this, reactor, ctx, fn = std::move(fn)]() mutable {
    if (Abandoned(ctx)) {
      fn = nullptr;
      reactor->Finish(GaveUp(ctx, "the write"));
    } else {
      const absl::Status s = fn();
      // What the write held (its admission ticket) is given back before the reply goes out, so
      // a caller's next write is admitted against what is really held.
      fn = nullptr;
      reactor->Finish(Abandoned(ctx) ? GaveUp(ctx, "the write") : ToGrpcStatus(s));
    }
    StartNextWrite();
  };
  {
    std::lock_guard<std::mutex> l(writes_mu_);
    if (write_running_) {
      write_queue_.push_back(std::move(task));
      return reactor;
    }
    write_running_ = true;
  }
  boost::asio::post(*io_pool_, std::move(task));
  return reactor;
}

void ScalecastService::StartNextWrite() {
  std::function<void()> next;
  {
    std::lock_guard<std::mutex> l(writes_mu_);
    if (write_queue_.empty()) {
      write_running_ = false;
      return;
    }
    next = std::move(write_queue_.front());
    write_queue_.pop_front();
  }
  boost::asio::post(*io_pool_, std::move(next));
}

absl::StatusOr<Scenario> ScalecastService::ScenarioFromProto(const v1::Scenario& in,
                                                             absl::string_view path) const {
  Scenario s;
  if (absl::Status st = ScenarioFromProto(in, path, &s); !st.ok()) return st;
  return s;
}

absl::Status ScalecastService::ScenarioFromProto(const v1::Scenario& in, absl::string_view path,
                                                 Scenario* out) const {
  if (absl::Status st = FromProto(in, path, out); !st.ok()) return st;
  if (!out->cluster.hbm_headroom.has_value()) out->cluster.hbm_headroom = options_.hbm_headroom;
  return absl::OkStatus();
}

// --- Registered accelerators -------------------------------------------------------------------

namespace {

// The accelerator names a scenario looks up: cluster.accelerator and accelerator_spec.like. A
// name a part answers to as read (a name several parts share, a TPU slice, a system) counts
// where `read_ok` (the registry: a registered part of that very name would have been found
// first).
bool Knows(const Catalog& c, const Scenario& s, bool new_name_ok, bool read_ok) {
  const AcceleratorSpec& spec = s.cluster.accelerator_spec;
  if (!spec.like.empty() && c.FindAccelerator(spec.like) == nullptr) return false;
  if (s.cluster.accelerator.empty() || c.FindAccelerator(s.cluster.accelerator) != nullptr) {
    return true;
  }
  if (read_ok && spec.empty() && c.ReadAccelerator(s.cluster.accelerator).has_value()) {
    return true;
  }
  // A described part may be new: its name is then in no catalog.
  return new_name_ok && !spec.empty();
}

}  // namespace

std::shared_ptr<const Catalog> ScalecastService::FreshCatalog(const Scenario& s) {
  return FreshCatalog(absl::MakeConstSpan(&s, 1));  // no copy of the scenario
}

std::shared_ptr<const Catalog> ScalecastService::FreshCatalog(
    absl::Span<const Scenario> scenarios) {
  bool builtin = true;
  for (const Scenario& s : scenarios) builtin = builtin && Knows(*catalog_, s, false, false);
  if (builtin) return builtin_;
  std::lock_guard<std::mutex> l(registry_mu_);
  if (registry_ == nullptr || std::chrono::steady_clock::now() - registry_read_at_ >
                                  std::chrono::milliseconds(options_.accelerator_refresh_ms)) {
    return nullptr;
  }
  // A name the last read did not hold may have been registered since, through another replica.
  for (const Scenario& s : scenarios) {
    if (!Knows(*registry_, s, true, true)) return nullptr;
  }
  return registry_;
}

absl::StatusOr<std::shared_ptr<const Catalog>> ScalecastService::ResolveCatalog(
    std::chrono::steady_clock::time_point since) {
  std::lock_guard<std::mutex> load(registry_load_mu_);
  {
    std::lock_guard<std::mutex> l(registry_mu_);
    if (registry_ != nullptr && registry_read_at_ >= since) return registry_;
  }
  const auto started = std::chrono::steady_clock::now();
  absl::StatusOr<std::vector<StoredAccelerator>> stored = store_->ListAccelerators();
  if (!stored.ok()) return stored.status();
  auto c = std::make_shared<Catalog>(*catalog_);
  for (const StoredAccelerator& a : *stored) {
    // Resolved against today's catalog; a part whose base is gone (a --catalog entry removed)
    // is left out, and a catalog part of the same id wins.
    absl::StatusOr<Accelerator> r = ResolveRegistered(a.spec);
    if (!r.ok() || catalog_->accelerators().count(a.spec.id) != 0) continue;
    c->AddAccelerator(*std::move(r));
  }
  std::lock_guard<std::mutex> l(registry_mu_);
  registry_ = c;
  registry_read_at_ = started;
  return std::shared_ptr<const Catalog>(c);
}

void ScalecastService::ForgetRegistered() {
  std::lock_guard<std::mutex> l(registry_mu_);
  registry_.reset();
}

absl::StatusOr<Accelerator> ScalecastService::ResolveRegistered(const AcceleratorSpec& spec) const {
  std::string nearest;
  absl::StatusOr<const Accelerator*> base = SpecBase(*catalog_, "", spec, "spec", &nearest);
  if (!base.ok()) return base.status();
  absl::StatusOr<Accelerator> a = DescribeAccelerator(**base, spec, "spec");
  if (!a.ok()) return a.status();
  if (!nearest.empty()) {
    a->borrowed = true;
    a->like_basis = nearest;
  }
  a->origin = "registered";
  return a;
}

grpc::ServerUnaryReactor* ScalecastService::RegisterAccelerator(
    grpc::CallbackServerContext* ctx, const v1::RegisterAcceleratorRequest* req,
    v1::RegisterAcceleratorResponse* resp) {
  if (absl::Status s = CheckWriteAuth(ctx); !s.ok()) return Done(ctx, s);
  const AcceleratorSpec spec = FromProto(req->spec());
  if (spec.id.empty()) return Done(ctx, absl::InvalidArgumentError("spec.id: is required"));
  if (spec.like.size() > kMaxNameBytes) {
    return Done(ctx, absl::InvalidArgumentError(
                         absl::StrCat("spec.like: longer than ", kMaxNameBytes, " bytes")));
  }
  if (spec.id.size() <= kMaxSpecIdBytes) {
    if (const Accelerator* part = catalog_->FindAccelerator(spec.id)) {
      return Done(ctx, absl::AlreadyExistsError(absl::StrCat(
                           "spec.id: '", spec.id, "' names the catalog part ", part->id,
                           "; register a variant under another id (with like = ", part->id, ")")));
    }
  }
  absl::StatusOr<Accelerator> resolved = ResolveRegistered(spec);
  if (!resolved.ok()) return Done(ctx, resolved.status());
  return OnPool(
      io_pool_, ctx,
      [this, resp, spec, a = *std::move(resolved), replace = req->replace()]() -> absl::Status {
        StoredAccelerator stored;
        stored.spec = spec;
        absl::Status s =
            store_->PutAccelerator(stored, replace, options_.max_registered_accelerators);
        if (!s.ok()) return s;
        ForgetRegistered();
        ToProto(a, resp->mutable_accelerator());
        return absl::OkStatus();
      });
}

grpc::ServerUnaryReactor* ScalecastService::DeleteAccelerator(
    grpc::CallbackServerContext* ctx, const v1::DeleteAcceleratorRequest* req,
    v1::DeleteAcceleratorResponse* /*resp*/) {
  if (absl::Status s = CheckWriteAuth(ctx); !s.ok()) return Done(ctx, s);
  if (req->id().empty()) return Done(ctx, absl::InvalidArgumentError("id: is required"));
  if (req->id().size() > kMaxNameBytes) {
    return Done(
        ctx, absl::InvalidArgumentError(absl::StrCat("id: longer than ", kMaxNameBytes, " bytes")));
  }
  if (catalog_->accelerators().count(req->id()) != 0) {
    return Done(ctx, absl::FailedPreconditionError(absl::StrCat(
                         "id: '", req->id(), "' is a catalog part, not a registered one")));
  }
  return OnPool(io_pool_, ctx, [this, id = req->id()]() -> absl::Status {
    absl::Status s = store_->DeleteAccelerator(id);
    if (s.ok()) ForgetRegistered();
    if (s.code() == absl::StatusCode::kNotFound) {
      s = absl::NotFoundError(absl::StrCat("id: accelerator '", id, "' is not registered"));
    }
    return s;
  });
}

bool ScalecastService::TryStartSweep() {
  int n = active_sweeps_.load();
  while (n < options_.max_sweeps) {
    if (active_sweeps_.compare_exchange_weak(n, n + 1)) return true;
  }
  return false;
}

void ScalecastService::EndSweep() { --active_sweeps_; }

absl::Status ScalecastService::CheckWriteAuth(grpc::CallbackServerContext* ctx) const {
  if (token_.empty()) return absl::OkStatus();
  const auto& md = ctx->client_metadata();
  auto it = md.find("authorization");
  const std::string expected = "Bearer " + token_;
  if (it == md.end()) {
    return absl::UnauthenticatedError("authorization: this write needs 'Bearer <token>'");
  }
  const absl::string_view got(it->second.data(), it->second.size());
  // Constant-time comparison of equal-length strings.
  unsigned diff = got.size() == expected.size() ? 0 : 1;
  for (size_t i = 0; i < std::min(got.size(), expected.size()); ++i) {
    diff |= static_cast<unsigned char>(got[i]) ^ static_cast<unsigned char>(expected[i]);
  }
  if (diff != 0) return absl::UnauthenticatedError("authorization: wrong token");
  return absl::OkStatus();
}

grpc::ServerUnaryReactor* ScalecastService::PredictBytes(grpc::CallbackServerContext* ctx,
                                                         const grpc::ByteBuffer* req,
                                                         PredictResponseBytes* resp) {
  // The request is read into the resolved scenario and resolved where it is: nothing copied on
  // the inline path. The paths that need the scenario as asked (the nearest feasible layout's
  // search, a planner search) read the request again.
  ResolvedScenario resolved;
  Scenario& scenario = resolved.scenario;
  if (absl::Status st = PredictScenario(*req, &scenario); !st.ok()) return Done(ctx, st);
  std::shared_ptr<const Catalog> catalog = FreshCatalog(scenario);
  if (catalog == nullptr) {  // a registered accelerator: read from the store, on its threads
    return OnPool(io_pool_, ctx, [this, resp, in = std::move(scenario)]() -> absl::Status {
      absl::StatusOr<std::shared_ptr<const Catalog>> c = ResolveCatalog();
      if (!c.ok()) return c.status();
      return PredictWith(**c, in, nullptr, nullptr, resp);
    });
  }
  auto as_asked = [this, req] {
    Scenario in;  // read once already: no error now
    (void)PredictScenario(*req, &in);
    return in;
  };
  if (absl::Status st = ResolveInPlace(*catalog, "scenario", &resolved); !st.ok()) {
    if (st.code() != absl::StatusCode::kInvalidArgument) return Done(ctx, st);
    // A layout or batch that does not divide may be one step from one that does: the search
    // for it runs the planner, so it goes to the pool.
    return OnPool(pool_, ctx, [this, resp, s = as_asked(), st, catalog]() {
      return PredictNearest(st, s, *catalog, resp);
    });
  }
  std::shared_ptr<const Profile> fresh = FreshProfile(resolved.scenario.calibration);
  // A complete layout (complete once resolved: a dense model's ep and etp are 1 even when the
  // request left them) with a profile at hand is one evaluation (microseconds): answered inline.
  // Its prediction does not fail, so the scenario it would search from is the resolved one. A
  // planner search goes to the pool; a profile to read from the store, to the store threads.
  if (fresh != nullptr && LayoutComplete(resolved.scenario.parallelism)) {
    return Done(ctx, PredictWith(*catalog, resolved.scenario, &resolved, std::move(fresh), resp));
  }
  boost::asio::thread_pool* pool = fresh == nullptr ? io_pool_ : pool_;
  return OnPool(
      pool, ctx,
      [this, resp, in = as_asked(), s = std::move(resolved), catalog,
       fresh]() mutable -> absl::Status { return PredictWith(*catalog, in, &s, fresh, resp); });
}

namespace {
// The bytes of a request gRPC received as one uncompressed slice, read in place from the C
// core's buffer that `req` wraps (its one member: grpc::ByteBuffer is standard-layout), without
// TrySingleSlice's reference taken and dropped through gRPC's codegen interface (callgrind: 190
// instructions a call). Empty when the request came otherwise: the caller copies it out.
absl::string_view SingleSlice(const grpc::ByteBuffer& req) {
  static_assert(std::is_standard_layout_v<grpc::ByteBuffer> &&
                sizeof(grpc::ByteBuffer) == sizeof(grpc_byte_buffer*));
  const grpc_byte_buffer* b = reinterpret_cast<grpc_byte_buffer* const&>(req);
  if (b == nullptr || b->type != GRPC_BB_RAW || b->data.raw.compression != GRPC_COMPRESS_NONE ||
      b->data.raw.slice_buffer.count != 1) {
    return {};
  }
  const grpc_slice& slice = b->data.raw.slice_buffer.slices[0];
  return absl::string_view(reinterpret_cast<const char*>(GRPC_SLICE_START_PTR(slice)),
                           GRPC_SLICE_LENGTH(slice));
}
}  // namespace

absl::Status ScalecastService::PredictScenario(const grpc::ByteBuffer& req, Scenario* out) const {
  absl::string_view bytes = SingleSlice(req);
  std::string joined;  // a request that came in more than one slice (or compressed)
  if (bytes.empty()) {
    std::vector<grpc::Slice> slices;
    if (req.Valid() && req.Dump(&slices).ok()) {
      for (const grpc::Slice& s : slices) {
        joined.append(reinterpret_cast<const char*>(s.begin()), s.size());
      }
    }
    bytes = joined;
  }
  if (absl::Status st = ReadPredictRequest(bytes, "scenario", out); !st.ok()) return st;
  if (!out->cluster.hbm_headroom.has_value()) out->cluster.hbm_headroom = options_.hbm_headroom;
  return absl::OkStatus();
}

absl::Status ScalecastService::PredictWith(const Catalog& catalog, const Scenario& in,
                                           ResolvedScenario* resolved,
                                           std::shared_ptr<const Profile> profile,
                                           PredictResponseBytes* resp, bool nearest) {
  absl::StatusOr<ResolvedScenario> own;  // `in` resolved here when the caller had not
  if (resolved == nullptr) {
    own = Resolve(in, catalog);
    if (!own.ok()) {
      if (own.status().code() != absl::StatusCode::kInvalidArgument || !nearest) {
        return own.status();
      }
      return PredictNearest(own.status(), in, catalog, resp);
    }
    resolved = &*own;
  }
  absl::StatusOr<std::shared_ptr<const Profile>> p = std::move(profile);
  if (*p == nullptr) p = ResolveProfile(resolved->scenario.calibration, "scenario.calibration");
  if (!p.ok()) return p.status();
  absl::StatusOr<Prediction> pred = scalecast::Predict(*resolved, catalog, **p);
  if (!pred.ok()) {
    if (pred.status().code() != absl::StatusCode::kFailedPrecondition || !nearest) {
      return pred.status();
    }
    return PredictNearest(pred.status(), in, catalog, resp);
  }
  // The response's bytes straight from the structs (server/predict_codec.h), in a buffer this
  // thread keeps, then copied into the slice gRPC sends.
  EchoInPlace(resolved);
  const std::string& model_version = ModelVersion();
  static thread_local std::string buf;
  const size_t n =
      WritePredictResponse({*pred, model_version, (*p)->name, resolved->scenario}, &buf);
  grpc::Slice slice(buf.data(), n);
  grpc::ByteBuffer bytes(&slice, 1);
  resp->buffer.Swap(&bytes);
  if (observer_) observer_->OnPredictions(1);
  return absl::OkStatus();
}

grpc::ServerUnaryReactor* ScalecastService::Compare(grpc::CallbackServerContext* ctx,
                                                    const v1::CompareRequest* req,
                                                    v1::CompareResponse* resp) {
  if (req->scenarios().empty()) {
    return Done(ctx, absl::InvalidArgumentError("scenarios: at least one scenario is required"));
  }
  if (req->scenarios_size() > options_.max_compare_scenarios) {
    return Done(ctx, absl::InvalidArgumentError(absl::StrCat("scenarios: ", req->scenarios_size(),
                                                             " scenarios, over the ", "limit of ",
                                                             options_.max_compare_scenarios)));
  }
  std::vector<Scenario> given;
  for (int i = 0; i < req->scenarios_size(); ++i) {
    auto s = ScenarioFromProto(req->scenarios(i), absl::StrCat("scenarios[", i, "]"));
    if (!s.ok()) return Done(ctx, s.status());
    given.push_back(*std::move(s));
  }
  std::shared_ptr<const Catalog> fresh = FreshCatalog(given);
  // Registered accelerators are read on the store's threads, the rest on the pool.
  return OnPool(fresh != nullptr ? pool_ : io_pool_, ctx,
                [this, resp, given = std::move(given), fresh]() -> absl::Status {
                  return CompareOnPool(given, fresh, resp);
                });
}

absl::Status ScalecastService::CompareOnPool(const std::vector<Scenario>& given,
                                             std::shared_ptr<const Catalog> fresh,
                                             v1::CompareResponse* resp) {
  struct Item {
    ResolvedScenario resolved;
    std::shared_ptr<const Profile> profile;
  };
  std::shared_ptr<const Catalog> catalog = fresh;
  if (catalog == nullptr) {
    absl::StatusOr<std::shared_ptr<const Catalog>> c = ResolveCatalog();
    if (!c.ok()) return c.status();
    catalog = *c;
  }
  std::vector<Item> items;
  for (size_t i = 0; i < given.size(); ++i) {
    const std::string path = absl::StrCat("scenarios[", i, "]");
    auto r = Resolve(given[i], *catalog, path);
    if (!r.ok() && r.status().code() == absl::StatusCode::kInvalidArgument) {
      r = CompareNearest(r.status(), given[i], *catalog, path);
    }
    if (!r.ok()) return r.status();
    items.push_back({*std::move(r), nullptr});
  }
  for (size_t i = 0; i < items.size(); ++i) {  // profiles are read here, on the pool
    auto p = ResolveProfile(items[i].resolved.scenario.calibration,
                            absl::StrCat("scenarios[", i, "].calibration"));
    if (!p.ok()) return p.status();
    items[i].profile = *p;
  }
  std::vector<Prediction> preds;
  for (size_t i = 0; i < items.size(); ++i) {
    absl::StatusOr<Prediction> p =
        scalecast::Predict(items[i].resolved, *catalog, *items[i].profile);
    if (!p.ok()) {
      const std::string path = absl::StrCat("scenarios[", i, "]");
      const absl::Status st(p.status().code(), absl::StrCat(path, ": ", p.status().message()));
      if (st.code() != absl::StatusCode::kFailedPrecondition) return st;
      absl::StatusOr<ResolvedScenario> r = CompareNearest(st, given[i], *catalog, path);
      if (!r.ok()) return r.status();
      items[i].resolved = *std::move(r);
      p = scalecast::Predict(items[i].resolved, *catalog, *items[i].profile);
      if (!p.ok()) return p.status();
    }
    preds.push_back(*std::move(p));
  }
  for (size_t i = 0; i < preds.size(); ++i) {
    ToProto(preds[i], resp->add_predictions());
    EchoScenario(items[i].resolved, resp->add_scenarios());
    FillDelta(preds[0], preds[i], items[0].resolved.scenario.cluster.num_gpus,
              items[i].resolved.scenario.cluster.num_gpus, resp->add_deltas());
  }
  resp->set_model_version(ModelVersion());
  if (observer_) observer_->OnPredictions(static_cast<int64_t>(preds.size()));
  return absl::OkStatus();
}

grpc::ServerWriteReactor<v1::SweepResponse>* ScalecastService::Sweep(
    grpc::CallbackServerContext* ctx, const v1::SweepRequest* req) {
  return new SweepReactor(this, ctx, req);
}

grpc::ServerUnaryReactor* ScalecastService::RecordMeasurements(
    grpc::CallbackServerContext* ctx, const v1::RecordMeasurementsRequest* req,
    v1::RecordMeasurementsResponse* resp) {
  if (absl::Status s = CheckWriteAuth(ctx); !s.ok()) return Done(ctx, s);
  if (req->measurements().empty()) {
    return Done(ctx, absl::InvalidArgumentError("measurements: the batch is empty"));
  }
  if (req->measurements_size() > options_.max_record_batch) {
    return Done(ctx, absl::InvalidArgumentError(absl::StrCat(
                         "measurements: ", req->measurements_size(),
                         " in one batch, over the limit of ", options_.max_record_batch)));
  }
  // Bounded memory: admitted before anything is converted, held until the store is done. The
  // runs are converted and checked a chunk at a time as the store takes them (on its thread,
  // not gRPC's); a bad one ends the write with nothing stored.
  absl::StatusOr<std::shared_ptr<WriteTicket>> ticket =
      AdmitWrite(WriteHoldsBytes(static_cast<int64_t>(req->ByteSizeLong()),
                                 kRecordBytesPerRequestByte, req->measurements_size()));
  if (!ticket.ok()) return Done(ctx, ticket.status());
  return OnWriteLane(ctx, [this, ctx, req, resp, ticket = *std::move(ticket)]() {
    JobControl control;
    control.cancelled = [ctx] { return Abandoned(ctx); };
    return Stored(RecordRuns(
                      store_, req->measurements_size(),
                      [this, req](int64_t i) -> absl::StatusOr<Measurement> {
                        const std::string path = absl::StrCat("measurements[", i, "]");
                        auto m = FromProto(req->measurements(static_cast<int>(i)), path);
                        if (!m.ok()) return m.status();
                        if (!m->id.empty()) {
                          return absl::InvalidArgumentError(
                              absl::StrCat(path, ".id: is assigned by the server; leave it empty"));
                        }
                        if (absl::Status st = PrepareToStore(*catalog_, &*m); !st.ok()) {
                          return absl::Status(st.code(), absl::StrCat(path, ".", st.message()));
                        }
                        return m;
                      },
                      control),
                  resp);
  });
}

grpc::ServerUnaryReactor* ScalecastService::ImportMeasurements(
    grpc::CallbackServerContext* ctx, const v1::ImportMeasurementsRequest* req,
    v1::RecordMeasurementsResponse* resp) {
  if (absl::Status s = CheckWriteAuth(ctx); !s.ok()) return Done(ctx, s);
  if (req->csv().size() > kMaxImportCsvBytes) {
    return Done(ctx,
                absl::InvalidArgumentError(absl::StrCat(
                    "csv: ", req->csv().size(), " bytes, over the limit of ", kMaxImportCsvBytes)));
  }
  // Its rows, at most: a line each (a quoted cell may hold more; that only overestimates).
  const int64_t lines = std::count(req->csv().begin(), req->csv().end(), '\n') + 1;
  absl::StatusOr<std::shared_ptr<WriteTicket>> ticket = AdmitWrite(
      WriteHoldsBytes(static_cast<int64_t>(req->csv().size()), kImportBytesPerRequestByte,
                      std::min<int64_t>(lines, options_.max_record_batch)));
  if (!ticket.ok()) return Done(ctx, ticket.status());
  // The source and labels are checked with every row (PrepareToStore's store bounds). The file
  // is read a chunk at a time as the store takes it, on the store's threads.
  CsvImport in{req->csv(),
               req->source(),
               {req->labels().begin(), req->labels().end()},
               options_.max_record_batch};
  return OnWriteLane(ctx, [this, ctx, resp, in = std::move(in), ticket = *std::move(ticket)]() {
    JobControl control;
    control.cancelled = [ctx] { return Abandoned(ctx); };
    return Stored(ImportCsv(store_, in, *catalog_, control), resp);
  });
}

absl::Status ScalecastService::Stored(absl::StatusOr<RecordOutcome> stored,
                                      v1::RecordMeasurementsResponse* resp) {
  if (!stored.ok()) return stored.status();
  resp->mutable_ids()->Reserve(static_cast<int>(stored->ids.size()));
  for (std::string& id : stored->ids) resp->add_ids(std::move(id));
  resp->set_recorded_count(static_cast<int32_t>(stored->ids.size()));
  resp->set_duplicate_count(static_cast<int32_t>(stored->duplicates));
  {
    std::lock_guard<std::mutex> l(counts_mu_);  // this replica's counts are exact after a write
    counts_.clear();
  }
  if (observer_) observer_->OnMeasurementsStored(static_cast<int64_t>(stored->ids.size()));
  return absl::OkStatus();
}

grpc::ServerUnaryReactor* ScalecastService::ListMeasurements(grpc::CallbackServerContext* ctx,
                                                             const v1::ListMeasurementsRequest* req,
                                                             v1::ListMeasurementsResponse* resp) {
  if (req->page_size() < 0) {
    return Done(ctx, absl::InvalidArgumentError("page_size: must be >= 0"));
  }
  if (absl::Status s = CheckLengths(req->filter(), "filter"); !s.ok()) return Done(ctx, s);
  if (req->page_token().size() > kMaxPageTokenBytes) {
    return Done(ctx, absl::InvalidArgumentError("page_token: malformed (too long)"));
  }
  // On the long-read lane: a page of a large store never holds a gRPC thread, nor a write.
  return OnReadLane(ctx,
                    [this, resp, filter = FilterFromProto(req->filter()),
                     page_size = req->page_size(), token = req->page_token()]() -> absl::Status {
                      std::string next;
                      auto page = store_->ListMeasurements(filter, page_size, token, &next);
                      if (!page.ok()) return page.status();
                      for (const Measurement& m : *page) ToProto(m, resp->add_measurements());
                      resp->set_next_page_token(next);
                      auto total = CountMatching(filter);
                      if (!total.ok()) return total.status();
                      resp->set_total_count(*total);
                      return absl::OkStatus();
                    });
}

grpc::ServerUnaryReactor* ScalecastService::DeleteMeasurement(
    grpc::CallbackServerContext* ctx, const v1::DeleteMeasurementRequest* req,
    v1::DeleteMeasurementResponse* /*resp*/) {
  if (absl::Status s = CheckWriteAuth(ctx); !s.ok()) return Done(ctx, s);
  if (req->id().empty()) return Done(ctx, absl::InvalidArgumentError("id: is required"));
  if (req->id().size() > kMaxNameBytes) {
    return Done(
        ctx, absl::InvalidArgumentError(absl::StrCat("id: longer than ", kMaxNameBytes, " bytes")));
  }
  return OnPool(io_pool_, ctx, [this, id = req->id()]() -> absl::Status {
    absl::Status s = store_->DeleteMeasurement(id);
    if (s.ok()) {
      std::lock_guard<std::mutex> l(counts_mu_);
      counts_.clear();
    }
    if (s.code() == absl::StatusCode::kNotFound) {
      s = absl::NotFoundError(absl::StrCat("id: no measurement '", id, "'"));
    }
    return s;
  });
}

grpc::ServerUnaryReactor* ScalecastService::Validate(grpc::CallbackServerContext* ctx,
                                                     const v1::ValidateRequest* req,
                                                     v1::ValidateResponse* resp) {
  if (absl::Status s = CheckLengths(req->filter(), "filter"); !s.ok()) return Done(ctx, s);
  if (req->calibration().size() > kMaxNameBytes) {
    return Done(ctx, absl::InvalidArgumentError(
                         absl::StrCat("calibration: longer than ", kMaxNameBytes, " bytes")));
  }
  const MeasurementFilter filter = FilterFromProto(req->filter());
  const bool rows = req->include_rows();
  return OnPool(
      pool_, ctx, [this, ctx, resp, filter, rows, name = req->calibration()]() -> absl::Status {
        auto p = ResolveProfile(name, "calibration");
        if (!p.ok()) return p.status();
        // The runs stream from the store a page at a time, read on the long-read lane, and are
        // folded into the report as they come (jobs/validate_job.h): memory follows the page.
        RunSource source;
        // A read the caller gives up on (deadline, cancel) is interrupted in the database.
        source.count = [this, ctx, &filter] {
          return OnReadPool([&] {
            ReadInterrupt interrupt([ctx] { return Abandoned(ctx); });
            return CountMatching(filter);
          });
        };
        source.page = [this, ctx, &filter](const std::string& token, std::string* next) {
          return OnReadPool([&] {
            ReadInterrupt interrupt([ctx] { return Abandoned(ctx); });
            return store_->ListMeasurements(filter, kValidatePage, token, next);
          });
        };
        ValidateJobOptions options;
        options.max_runs = options_.max_validate_runs;
        options.keep_rows = rows;
        JobControl control;
        control.cancelled = [ctx] { return Abandoned(ctx); };
        absl::StatusOr<ValidateJobResult> job =
            RunValidateJob(source, *catalog_, **p, options, DescribeFilter(filter), control);
        if (!job.ok()) return job.status();
        const ValidationReport& r = job->report;
        ToProto(r, rows, resp);
        resp->set_calibration((*p)->name);
        resp->set_model_version(ModelVersion());
        if (!name.empty() && name != "default") {  // a stored profile: its drift
          absl::StatusOr<StoredProfile> stored = store_->GetProfile(name);
          if (stored.ok()) {
            v1::CalibrationProfile drift;
            if (absl::Status s = AddDrift(*stored, &drift); !s.ok()) return s;
            resp->set_profile_drift(drift.drift());
          }
        }
        if (observer_) {
          for (const auto& [k, v] : job->by_pair)
            observer_->OnModelError(k.first, k.second, v.mape);
          ReportModelErrorBySource(r, observer_);
          observer_->OnPredictions(r.overall.count);
        }
        return absl::OkStatus();
      });
}

namespace {

void ToProto(const StoredProfile& p, v1::CalibrationProfile* out) {
  ToProto(p.profile, out);
  if (auto it = p.profile.info.find(kDeclinedReasonKey); it != p.profile.info.end()) {
    out->set_declined_reason(it->second);
  }
  out->set_fitted_on(p.fitted_on);
  out->set_fitted_count(p.fitted_count);
  out->set_mape_before(p.mape_before);
  out->set_mape_after(p.mape_after);
  out->set_cross_validated_mape(p.cv_mape);
  out->mutable_created_at()->set_seconds(p.created_at_unix_ms / 1000);
  out->mutable_created_at()->set_nanos(static_cast<int32_t>(p.created_at_unix_ms % 1000) * 1000000);
}

}  // namespace

grpc::ServerUnaryReactor* ScalecastService::Calibrate(grpc::CallbackServerContext* ctx,
                                                      const v1::CalibrateRequest* req,
                                                      v1::CalibrateResponse* resp) {
  if (absl::Status s = CheckWriteAuth(ctx); !s.ok()) return Done(ctx, s);
  if (absl::Status s = CheckLengths(req->filter(), "filter"); !s.ok()) return Done(ctx, s);
  CalibrationJob job{req->name(), req->start_from(), FilterFromProto(req->filter()), req->replace(),
                     options_.max_validate_runs};
  return OnPool(pool_, ctx, [this, ctx, resp, job = std::move(job)]() -> absl::Status {
    JobControl control;
    control.cancelled = [ctx] { return Abandoned(ctx); };
    absl::StatusOr<CalibrationJobResult> r =
        RunCalibration(job, store_, *catalog_, default_profile_, control);
    if (!r.ok()) return r.status();
    if (r->written) {  // profiles layered on this one resolve through it: drop every resolution
      std::lock_guard<std::mutex> l(profiles_mu_);
      profiles_.clear();
    }
    ToProto(r->stored, resp->mutable_profile());
    ToProto(r->fit.before.overall, resp->mutable_before());
    ToProto(r->fit.after.overall, resp->mutable_after());
    resp->set_accepted(r->fit.accepted);
    resp->set_reason(r->fit.reason);
    resp->set_validated(r->fit.validated);
    ToProto(r->fit.held_out_before, resp->mutable_held_out_before());
    if (r->fit.validated) {
      ToProto(r->fit.held_out_after, resp->mutable_held_out_after());
      resp->set_cross_validated_mape(r->fit.held_out_after.mape);
      ToProto(r->fit.held_out_after, &(*resp->mutable_cross_validated())[r->fit.held_out_method]);
    }
    ToProto(r->others.before, resp->mutable_others_before());
    ToProto(r->others.after, resp->mutable_others_after());
    resp->set_others_stored(r->others.stored);
    resp->set_others_sampled(r->others.sampled);
    for (const std::string& s : r->others.skipped_named) resp->add_others_skipped(s);
    resp->set_others_skipped_count(r->others.skipped);
    if (observer_ && r->written) {
      ReportModelError(r->fit.after, observer_);
      auto count = store_->CountProfiles();
      if (count.ok()) observer_->OnProfiles(*count);
    }
    return absl::OkStatus();
  });
}

absl::Status ScalecastService::AddDrift(const StoredProfile& p, v1::CalibrationProfile* out) {
  if (!StoredFilter(p.profile).has_value()) return absl::OkStatus();
  absl::StatusOr<std::shared_ptr<const Profile>> resolved = ResolveProfile(p.profile.name, "name");
  if (!resolved.ok()) return absl::OkStatus();  // a broken chain: ResolveProfile's error elsewhere
  absl::StatusOr<ProfileDrift> d = DriftOf(p, **resolved, store_, *catalog_, JobControl());
  if (!d.ok()) return d.status();
  out->set_drift(d->text);
  out->set_drift_runs(d->runs);
  out->set_drift_ratio(d->median_ratio);
  if (observer_ && d->runs > 0) observer_->OnProfileDrift(p.profile.name, d->median_ratio);
  return absl::OkStatus();
}

grpc::ServerUnaryReactor* ScalecastService::ListProfiles(grpc::CallbackServerContext* ctx,
                                                         const v1::ListProfilesRequest* req,
                                                         v1::ListProfilesResponse* resp) {
  if (req->page_size() < 0) {
    return Done(ctx, absl::InvalidArgumentError("page_size: must be >= 0"));
  }
  return OnReadLane(
      ctx, [this, resp, page_size = req->page_size(), token = req->page_token()]() -> absl::Status {
        std::string next;
        absl::StatusOr<std::vector<StoredProfile>> page =
            store_->ListProfiles(page_size, token, &next);
        if (!page.ok()) return page.status();
        for (const StoredProfile& p : *page) {
          v1::CalibrationProfile* out = resp->add_profiles();
          ToProto(p, out);
          if (absl::Status s = AddDrift(p, out); !s.ok()) return s;
        }
        resp->set_next_page_token(next);
        return absl::OkStatus();
      });
}

grpc::ServerUnaryReactor* ScalecastService::DeleteProfile(grpc::CallbackServerContext* ctx,
                                                          const v1::DeleteProfileRequest* req,
                                                          v1::DeleteProfileResponse* /*resp*/) {
  if (absl::Status s = CheckWriteAuth(ctx); !s.ok()) return Done(ctx, s);
  const std::string& name = req->name();
  if (name.empty()) return Done(ctx, absl::InvalidArgumentError("name: is required"));
  if (name == "default") {
    return Done(ctx, absl::InvalidArgumentError(
                         "name: 'default' is the built-in profile and cannot be deleted"));
  }
  if (name.size() > kMaxNameBytes) {
    return Done(ctx, absl::InvalidArgumentError(
                         absl::StrCat("name: longer than ", kMaxNameBytes, " bytes")));
  }
  return OnPool(io_pool_, ctx, [this, name]() -> absl::Status {
    // A profile another one layers on is refused by the store, naming the layers.
    absl::Status s = store_->DeleteProfile(name);
    if (s.code() == absl::StatusCode::kNotFound) {
      return absl::NotFoundError(absl::StrCat("name: profile '", name, "' not found"));
    }
    if (s.code() == absl::StatusCode::kFailedPrecondition) {
      return absl::FailedPreconditionError(absl::StrCat("name: ", s.message()));
    }
    if (!s.ok()) return s;
    {
      std::lock_guard<std::mutex> l(profiles_mu_);
      profiles_.erase(name);
    }
    if (observer_) {
      auto count = store_->CountProfiles();
      if (count.ok()) observer_->OnProfiles(*count);
    }
    return absl::OkStatus();
  });
}

grpc::ServerUnaryReactor* ScalecastService::ListAccelerators(
    grpc::CallbackServerContext* ctx, const v1::ListAcceleratorsRequest* /*req*/,
    v1::ListAcceleratorsResponse* resp) {
  // The registered parts come from the store: on its threads.
  return OnPool(io_pool_, ctx, [this, resp]() -> absl::Status {
    absl::StatusOr<std::shared_ptr<const Catalog>> c = ResolveCatalog();
    if (!c.ok()) return c.status();
    for (const auto& [id, a] : (*c)->accelerators()) ToProto(a, resp->add_accelerators());
    for (const auto& [id, s] : (*c)->systems()) ToProto(s, resp->add_systems());
    return absl::OkStatus();
  });
}

grpc::ServerUnaryReactor* ScalecastService::ListModels(grpc::CallbackServerContext* ctx,
                                                       const v1::ListModelsRequest* /*req*/,
                                                       v1::ListModelsResponse* resp) {
  for (const auto& [id, m] : catalog_->models()) ToProto(m, resp);
  return Done(ctx, absl::OkStatus());
}

}  // namespace scalecast
