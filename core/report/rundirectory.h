#pragma once

#include "core/common/diagnostic.h"
#include "core/common/expected.h"
#include "core/compiler/plan.h"
#include "core/engine/engine.h"
#include "core/report/reportfile.h"
#include "core/report/rundirectorywriter.h"
#include "core/report/runreport.h"

#include <atomic>
#include <optional>
#include <string>
#include <vector>

namespace waferscope::core::report {

// A run directory (`waferscope-cli run --model_dir DIR`, the GUI's File > Export report):
// report.json, report.csv, report.html, trace.json and summary.txt, the TensorBoard event file
// events.out.tfevents.<unix time>.<host>.waferscope (tfevents.h), and cycle_vs_model.csv for a
// report that carries a cycle-level run. Written by RunDirectoryWriter (rundirectorywriter.h).
//
// The files of a run, in the order above. The trace is produced while it is written: `run` and
// `plan` must outlive the files.
std::vector<ReportFile> runDirectoryFiles(
    const RunReport& report, const engine::RunResult& run, const ExecutionPlan& plan);

// The one call that writes a run's report into a run directory (study::runStudy, and through it
// every front end): runDirectoryFiles, then `extraFiles` (the GUI's report.pdf), committed all or
// none by `writer` (opened by the caller before the run computed anything). `cancelled` as
// RunDirectoryWriter::write.
std::optional<Diagnostic> writeRunReport(RunDirectoryWriter& writer, const RunReport& report,
    const engine::RunResult& run, const ExecutionPlan& plan, std::vector<ReportFile> extraFiles = {},
    const std::atomic<bool>* cancelled = nullptr);

// RunDirectoryWriter::open(directory) then write(files, cancelled), for a caller with nothing to
// compute in between: the lock is held only while the files are written.
std::optional<Diagnostic> writeRunDirectory(
    const std::string& directory, const std::vector<ReportFile>& files, const std::atomic<bool>* cancelled = nullptr);

// Reads a report back: `path` is a run directory (its report.json is read) or a report.json.
Expected<RunReport> readReportFile(const std::string& path);

} // namespace waferscope::core::report
