// The Plan handler: a server-streaming adapter over jobs/plan_job (translate the request, run the
// job on the pool, stream its progress, then one last message with the options).
#include <boost/asio/post.hpp>
#include <chrono>
#include <deque>
#include <memory>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "jobs/plan_job.h"
#include "model/status_macros.h"
#include "server/convert.h"
#include "server/plan_convert_gen.h"
#include "server/service.h"
#include "server/status.h"

namespace scalecast {
namespace {

// `default_headroom`: the server's --hbm-headroom, for a request that leaves hbm_headroom unset.
absl::StatusOr<PlanJobRequest> FromProto(const v1::PlanRequest& in, double default_headroom) {
  PlanJobRequest out;
  v1::Scenario base;
  *base.mutable_workload() = in.workload();
  base.set_framework(in.framework());
  *base.mutable_stack() = in.stack();
  base.set_calibration(in.calibration());
  // The workload and stack are the request's own fields: named from its top ("workload.model").
  RETURN_IF_ERROR(scalecast::FromProto(base, "", &out.base));
  out.hbm_headroom_given = in.has_hbm_headroom();
  out.base.cluster.hbm_headroom = in.has_hbm_headroom() ? in.hbm_headroom() : default_headroom;
  out.tokens = in.tokens();
  for (int i = 0; i < in.candidates_size(); ++i) {
    const v1::PlanCandidate& c = in.candidates(i);
    PlanCandidateSpec spec;
    convert_gen::CopyFromProto(c, &spec);
    spec.accelerator_spec = scalecast::FromProto(c.accelerator_spec());
    spec.gpu_counts.assign(c.gpu_counts().begin(), c.gpu_counts().end());
    RETURN_IF_ERROR(
        scalecast::FromProto(c.layout(), absl::StrCat("candidates[", i, "].layout"), &spec.layout));
    out.candidates.push_back(std::move(spec));
  }
  convert_gen::CopyFromProto(in.constraints(), &out.constraints);
  convert_gen::CopyFromProto(in.reliability(), &out.reliability);
  out.electricity_price_per_kwh = in.electricity_price_per_kwh();
  out.pue = in.pue();
  out.top_k = in.top_k();
  return out;
}

void ToProto(const PlanJobOption& in, const Catalog& catalog, v1::PlanOption* out) {
  scalecast::ToProto(in.prediction, out->mutable_prediction());
  out->set_num_gpus(in.num_gpus);
  out->set_accelerator(in.accelerator);
  out->set_days(in.days);
  out->set_goodput(in.goodput.goodput);
  out->set_gpu_hours(in.gpu_hours);
  out->set_energy_mwh(in.energy_mwh);
  out->set_cost(in.cost);
  out->set_meets_constraints(in.meets_constraints);
  out->set_pareto(in.pareto);
  scalecast::ToProto(in.scenario, out->mutable_scenario());
  const Accelerator* acc = ScenarioAccelerator(in.scenario, catalog);
  if (acc != nullptr && in.scenario.cluster.inter_node_gbps_per_gpu <= 0) {
    out->mutable_scenario()->mutable_cluster()->set_inter_node_gbps_per_gpu(acc->net_gbps);
  }
  out->set_candidate(in.candidate);
  out->set_facility_kw(in.facility_kw);
  for (const std::string& v : in.violations) out->add_violations(v);
  out->set_top(in.top);
  out->set_smallest(in.smallest);
  v1::PlanGoodput* g = out->mutable_goodput_detail();
  g->set_mtbf_s(in.goodput.mtbf_s);
  g->set_interruptions_per_day(in.goodput.interruptions_per_day);
  g->set_checkpoint_bytes(in.goodput.checkpoint_bytes);
  g->set_checkpoint_write_s(in.goodput.checkpoint_write_s);
  g->set_checkpoint_interval_s(in.goodput.checkpoint_interval_s);
  g->set_restart_s(in.goodput.restart_s);
  g->set_lost_checkpointing(in.goodput.lost_checkpointing);
  g->set_lost_restarts(in.goodput.lost_restarts);
  g->set_lost_rework(in.goodput.lost_rework);
}

void ToProto(const PlanJobResult& in, const Catalog& catalog, v1::PlanResponse* out) {
  for (const PlanJobOption& o : in.options) ToProto(o, catalog, out->add_options());
  for (const PlanDoubling& d : in.doublings) {
    v1::PlanDoubling* p = out->add_doublings();
    p->set_accelerator(d.accelerator);
    p->set_candidate(d.candidate);
    p->set_from_gpus(d.from_gpus);
    p->set_to_gpus(d.to_gpus);
    p->set_speedup(d.speedup);
    p->set_extra_cost(d.extra_cost);
    p->set_cost_per_day_saved(d.cost_per_day_saved);
  }
  for (const std::string& w : in.warnings) out->add_warnings(w);
  out->set_ranked_by_cost(in.ranked_by_cost);
  v1::PlanStats* st = out->mutable_stats();
  st->set_gpu_counts_total(in.gpu_counts_total);
  st->set_gpu_counts_evaluated(in.gpu_counts_evaluated);
  st->set_layouts_total(in.layouts_total);
  st->set_layouts_evaluated(in.layouts_evaluated);
}

// State shared by the reactor and its pool task; outlives whichever finishes first.
class PlanReactor;
struct PlanState {
  std::recursive_mutex mu;  // gRPC may run OnWriteDone / OnDone inline in StartWrite or Finish
  PlanReactor* reactor = nullptr;  // null once the call is done
  std::atomic<bool> cancelled{false};
};

class PlanReactor final : public grpc::ServerWriteReactor<v1::PlanResponse> {
 public:
  PlanReactor(ScalecastService* svc, grpc::CallbackServerContext* ctx, const v1::PlanRequest* req)
      : svc_(svc), ctx_(ctx), state_(std::make_shared<PlanState>()) {
    state_->reactor = this;
    // A plan holds a pool thread for up to a second or so: it shares the sweeps' slots.
    if (!svc_->TryStartSweep()) {
      Finish(grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                          absl::StrCat("too many sweeps and plans at once (the limit is ",
                                       svc_->options().max_sweeps, "); retry later")));
      return;
    }
    has_slot_ = true;
    absl::StatusOr<PlanJobRequest> job = FromProto(*req, svc_->options().hbm_headroom);
    if (!job.ok()) {
      Finish(ToGrpcStatus(job.status()));
      return;
    }
    // The catalog the candidates name: the built-in one, or with the registered parts (read on
    // the store's threads when this replica's copy does not hold every name).
    std::vector<Scenario> named;
    for (const PlanCandidateSpec& c : job->candidates) {
      Scenario s = job->base;
      s.cluster.accelerator = c.accelerator;
      s.cluster.accelerator_spec = c.accelerator_spec;
      named.push_back(std::move(s));
    }
    std::shared_ptr<const Catalog> catalog = svc_->FreshCatalog(named);
    std::shared_ptr<PlanState> state = state_;
    if (catalog != nullptr) {
      boost::asio::post(*svc_->pool(), [state, svc, ctx, catalog, job = *std::move(job)]() {
        Run(state, svc, ctx, catalog, job);
      });
      return;
    }
    boost::asio::post(*svc_->io_pool(), [state, svc, ctx, job = *std::move(job)]() {
      absl::StatusOr<std::shared_ptr<const Catalog>> c = svc->ResolveCatalog();
      boost::asio::post(*svc->pool(), [state, svc, ctx, c = std::move(c), job]() {
        Run(state, svc, ctx, c, job);
      });
    });
  }

  void OnWriteDone(bool ok) override {
    std::lock_guard<std::recursive_mutex> l(state_->mu);
    writing_ = false;
    if (!ok) state_->cancelled = true;
    PumpLocked();
  }
  void OnCancel() override { state_->cancelled = true; }
  void OnDone() override {
    {
      std::lock_guard<std::recursive_mutex> l(state_->mu);
      state_->reactor = nullptr;
    }
    if (has_slot_) svc_->EndSweep();
    delete this;
  }

 private:
  // On a pool thread: the job, then its answer queued.
  static void Run(std::shared_ptr<PlanState> state, ScalecastService* svc,
                  grpc::CallbackServerContext* ctx,
                  const absl::StatusOr<std::shared_ptr<const Catalog>>& catalog,
                  const PlanJobRequest& job) {
    JobControl control;
    control.cancelled = [&] {
      return state->cancelled.load() || std::chrono::system_clock::now() >= ctx->deadline();
    };
    auto last = std::chrono::steady_clock::now() - std::chrono::seconds(1);
    control.progress = [&](int64_t done, int64_t total) {
      const auto now = std::chrono::steady_clock::now();
      if (done < total && now - last < std::chrono::milliseconds(100)) return;
      last = now;
      v1::PlanResponse msg;
      msg.mutable_progress()->set_evaluated_count(done);
      msg.mutable_progress()->set_total_count(total);
      std::lock_guard<std::recursive_mutex> l(state->mu);
      if (state->reactor != nullptr) state->reactor->EnqueueLocked(std::move(msg), false);
    };
    absl::Status status = absl::OkStatus();
    v1::PlanResponse answer;
    if (control.Cancelled()) {
      status = absl::CancelledError("the plan was cancelled");
    } else if (!catalog.ok()) {
      status = catalog.status();
    } else if (auto profile = svc->ResolveProfile(job.base.calibration, "calibration");
               !profile.ok()) {
      status = profile.status();
    } else {
      absl::StatusOr<PlanJobResult> result = RunPlan(job, **catalog, **profile, control);
      if (result.ok()) {
        ToProto(*result, **catalog, &answer);
      } else {
        status = result.status();
      }
    }
    std::lock_guard<std::recursive_mutex> l(state->mu);
    if (state->reactor == nullptr) return;
    if (status.ok()) state->reactor->EnqueueLocked(std::move(answer), true);
    state->reactor->FinishLocked(status);
  }

  // A progress message not yet sent is replaced by a newer one.
  void EnqueueLocked(v1::PlanResponse msg, bool final) {
    if (!final && !queue_.empty() && queue_.back().has_progress() &&
        queue_.back().options_size() == 0) {
      queue_.back() = std::move(msg);
    } else {
      queue_.push_back(std::move(msg));
    }
    PumpLocked();
  }

  void FinishLocked(const absl::Status& s) {
    if (finishing_) return;
    finishing_ = true;
    final_ = ToGrpcStatus(s);
    PumpLocked();
  }

  void PumpLocked() {
    if (writing_ || finished_) return;
    if (!queue_.empty() && !state_->cancelled) {
      current_ = std::move(queue_.front());
      queue_.pop_front();
      writing_ = true;
      StartWrite(&current_);
      return;
    }
    if (!finishing_) return;
    finished_ = true;
    if (state_->cancelled && (final_.ok() || final_.error_code() == grpc::StatusCode::CANCELLED)) {
      final_ =
          std::chrono::system_clock::now() >= ctx_->deadline()
              ? grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED, "the plan ran past its deadline")
              : grpc::Status(grpc::StatusCode::CANCELLED, "the plan was cancelled");
    }
    Finish(final_);
  }

  ScalecastService* svc_;
  grpc::CallbackServerContext* ctx_;
  std::shared_ptr<PlanState> state_;
  bool has_slot_ = false;
  // Below: guarded by state_->mu.
  std::deque<v1::PlanResponse> queue_;
  v1::PlanResponse current_;
  bool writing_ = false, finishing_ = false, finished_ = false;
  grpc::Status final_;
};

}  // namespace

grpc::ServerWriteReactor<v1::PlanResponse>* ScalecastService::Plan(grpc::CallbackServerContext* ctx,
                                                                   const v1::PlanRequest* req) {
  return new PlanReactor(this, ctx, req);
}

}  // namespace scalecast
