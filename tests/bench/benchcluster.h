#pragma once

#include <nlohmann/json.hpp>

// The appliance scheduler (issue 30's 1 s target): `cluster_schedule_ms_1000_jobs`, reading a
// jobs file of 1,000 jobs over a handful of models and allocations and scheduling it from a cold
// timing cache (each distinct model, mode and allocation run by the engine once), EASY backfill;
// `cluster_engine_runs_1000_jobs`, those engine runs; `cluster_scheduler_ms_1000_jobs`, the
// scheduler alone on the timed jobs. The best of `rounds`. Then `cluster_size_inference_ms_300_jobs`:
// 300 inference jobs of four models (8B to 405B) sized with --size_inference from a cold cache,
// with `cluster_size_inference_compiles_300_jobs` (one per allocation) and
// `cluster_size_inference_engine_runs_300_jobs`, the best of up to three rounds.
bool clusterFigures(nlohmann::ordered_json& figures, int rounds);
