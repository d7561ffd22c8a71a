// The checkpoint drill both training phases run (issue: "training checkpoints through the
// shared filesystem"): during the main training run the state is saved after step k; at the
// end of the phase it is restored from the files into the same GPUs, steps k+1 .. k+R are run
// again, and their losses and the state after step k+R must equal the main run's bit for bit.
// Beside it, the same bytes per rank written and read the way dd does (sequential_io.h), so
// the checkpoint's bandwidth is judged against what the filesystem gives.
//
// Records (phase's file; docs/results-format.md): checkpoint_save, checkpoint_baseline,
// checkpoint_efficiency, checkpoint_restore, checkpoint_resume. Per-rank figures are gathered
// to rank 0, which writes every record with the rank and node it is about.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cuda/cuda_handles.h"
#include "cuda/rank_runtime.h"
#include "results/result_writer.h"
#include "train/checkpoint_config.h"
#include "train/step_timing.h"
#include "train/training_checkpoint.h"
#include "world/world.h"

namespace gpuaccept::train {

class CheckpointDrill {
 public:
  // state: the trainer's device state (identical on every rank); header: the manifest's
  // phase and the settings a resume must match. The checkpoints go to config.dir, else
  // <results' run dir>/checkpoints/<phase>.
  CheckpointDrill(World& world, ResultWriter& results, const CheckpointConfig& config, CheckpointManifest header,
                  std::vector<DeviceStateTensor> state);

  int save_step() const { return config_.step; }
  int last_step() const { return config_.step + config_.resume_steps; }  // the last one compared

  // The main run's hook after each step (the step's work done): saves after save_step(),
  // takes the state's checksum after last_step(). Collective at those steps.
  void after_main_step(int step);
  // The dd-style write and read of this rank's slice size, all ranks at once. Collective.
  void baseline();
  // Restores the latest checkpoint into the state (collective; comm: the world's ranks).
  // False when there was nothing to restore (the records say why); the resume is then SKIP.
  bool restore(ncclComm_t comm, RankRuntime& runtime, double timeout_s);
  // The resumed steps against the main run's (rank 0 records; every rank passes its own).
  void record_resume(const std::vector<StepRecord>& main_run, const std::vector<StepRecord>& resumed);

  // After the main run, all of the above in order: baseline(), restore() and, when something
  // was restored, run_resumed() (steps save_step()+1 .. last_step() from the state in place,
  // after the trainer refreshed what derives from it) and record_resume(). `stage` follows
  // along for the phase's fault record. Collective.
  void finish(ncclComm_t comm, RankRuntime& runtime, double timeout_s, const std::vector<StepRecord>& main_run,
              const std::function<std::vector<StepRecord>()>& run_resumed, std::string& stage);

 private:
  World& world_;
  ResultWriter& results_;
  CheckpointConfig config_;
  std::string phase_;
  std::vector<DeviceStateTensor> state_;
  CudaStream stream_;
  std::unique_ptr<TrainingCheckpoint> checkpoint_;
  bool saved_ = false;
  std::uint64_t main_checksum_ = 0;  // after last_step() of the main run
  double save_write_gbps_ = 0;       // aggregate, for the efficiency record
  std::string save_slowest_;         // the slowest rank's file time split, for the efficiency record

  void record_save(const CheckpointSave& save);
};

// Rank 0, when the drill did not run or restored nothing: checkpoint_resume SKIP with why.
void record_resume_skipped(ResultWriter& results, const std::string& why);

}  // namespace gpuaccept::train
