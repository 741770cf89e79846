// The server tests' scenarios as requests: a preset on H100 with seq 4096 and 1024 sequences a
// step, open (the planner chooses) or with a full data-parallel layout.
#ifndef SCALECAST_TESTS_PROTO_SCENARIOS_H_
#define SCALECAST_TESTS_PROTO_SCENARIOS_H_

#include <string>

#include "proto/scalecast/v1/scalecast.pb.h"

namespace scalecast::testing {

inline v1::Scenario PresetRequest(const std::string& model, int gpus) {
  v1::Scenario s;
  s.mutable_workload()->mutable_model()->set_name(model);
  s.mutable_workload()->set_seq_len(4096);
  s.mutable_workload()->set_global_batch(1024);
  s.mutable_cluster()->set_accelerator("h100-sxm-80gb");
  s.mutable_cluster()->set_num_gpus(gpus);
  return s;
}

// tp = pp = vpp = cp = 1, FSDP, micro batch 1, selective recompute: nothing left to plan.
inline v1::Scenario FullLayoutRequest(const std::string& model, int gpus) {
  v1::Scenario s = PresetRequest(model, gpus);
  v1::Parallelism* p = s.mutable_parallelism();
  p->set_tp(1);
  p->set_pp(1);
  p->set_vpp(1);
  p->set_cp(1);
  p->set_sharding(v1::SHARDING_FSDP);
  p->set_micro_batch(1);
  p->set_recompute(v1::RECOMPUTE_SELECTIVE);
  return s;
}

}  // namespace scalecast::testing

#endif  // SCALECAST_TESTS_PROTO_SCENARIOS_H_
