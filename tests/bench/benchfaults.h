#pragma once

#include <nlohmann/json.hpp>

// Stop latencies (issue 9's 200 ms target): `cli_interrupt_ms`, from SIGINT to the exit of a
// `waferscope-cli run --model_dir` that is writing its trace, and `report_cancel_ms`, from the
// cancel flag to the return of a run-directory write. The worst of `rounds` each.
bool faultFigures(nlohmann::ordered_json& figures, int rounds);
