// The step-time, memory and power model of one resolved scenario, for any complete layout.
// Built once per scenario (shape, hardware and profile resolved), then evaluated per layout; the
// planner evaluates thousands of layouts against one StepModel.
#ifndef SCALECAST_MODEL_STEP_H_
#define SCALECAST_MODEL_STEP_H_

#include <string>

#include "absl/status/status.h"
#include "model/catalog.h"
#include "model/framework.h"
#include "model/hardware.h"
#include "model/profile.h"
#include "model/types.h"
#include "model/workload.h"

namespace scalecast {

// Forward and backward cost of one transformer layer for one micro-batch on one GPU.
struct LayerCost {
  double fwd_s = 0;  // GEMMs + attention + memory-bound kernels
  double bwd_s = 0;
  double recompute_s = 0;   // extra forward work in backward
  double tp_fwd_s = 0;      // tensor-parallel collectives, forward
  double tp_bwd_s = 0;      // including the recomputed forward's
  double tp_exposed_s = 0;  // what sticks out of the GEMMs (all of it without TP overlap)
  double tp_bytes = 0;      // per layer, forward + backward
  double cp_fwd_s = 0;      // context-parallel KV exchange, total and exposed
  double cp_bwd_s = 0;
  double cp_exposed_s = 0;
  double cp_bytes = 0;
  double flops_hw = 0;  // hardware FLOPs incl. recompute, per layer per micro-batch
};

class StepModel {
 public:
  // `s` must be resolved (ResolveScenario). status() says whether the accelerator exists.
  StepModel(const Scenario& s, const Catalog& catalog, const Profile& profile);
  const absl::Status& status() const { return status_; }

  // Full prediction for a complete layout; dp is derived from the GPU count. `memory`, when
  // given, is Memory(layout) already computed (the planner checks it first).
  Prediction Evaluate(const Parallelism& layout, const MemoryBreakdown* memory = nullptr) const;

  // Memory per GPU only (cheap), for pruning.
  MemoryBreakdown Memory(const Parallelism& layout) const;

  const Scenario& scenario() const { return s_; }
  const Accelerator& accelerator() const { return *acc_; }
  const Stack& stack() const { return stack_; }

 private:
  // The named steps of Evaluate; each returns seconds per optimizer step (or per micro-batch).
  struct HeadCost {  // embedding, final norm, logits and loss on the last stage
    double fwd_s = 0, bwd_s = 0;
  };
  struct StageCost {        // the slowest pipeline stage, per micro-batch
    double layers = 0;      // transformer layers on it
    bool has_head = false;  // whether it also holds the output layer and loss
    double t_mb = 0;        // compute + exposed TP/CP per micro-batch
  };
  struct CommTerm {
    double total = 0, exposed = 0, bytes = 0;
    int ranks = 0;
  };
  struct DataParallelComm {
    CommTerm allgather, reducescatter, allreduce;
    double optimizer_shard = 1;
    double stage_params = 0;
  };

  LayerCost ComputeLayer(int tp, int cp, int micro_batch, Recompute rc, bool sp) const;
  HeadCost ComputeHead(int tp, double tokens) const;
  StageCost SlowestStage(const Parallelism& p, const LayerCost& lc, const HeadCost& head) const;
  CommTerm PipelineP2p(const Parallelism& p, double micro_batches, double tokens) const;
  DataParallelComm DataParallel(const Parallelism& p, const StageCost& stage, const LayerCost& lc,
                                const HeadCost& head, double micro_batches) const;
  PowerEstimate Power(double step, double comm_exposed, double bubble) const;
  void AddWarnings(const Parallelism& p, double step, double comm_exposed, double bubble,
                   Prediction* out) const;

  Scenario s_;
  absl::Status status_;
  const Accelerator* acc_ = nullptr;
  const Framework* framework_ = nullptr;
  Stack stack_;
  Shape shape_;
  ParamCount params_;
  Hardware hw_;
  double overlap_eff_ = 0;
  double comm_slowdown_ = 0;
  double model_flops_per_token_ = 0;
};

}  // namespace scalecast

#endif  // SCALECAST_MODEL_STEP_H_
