#pragma once

#include "core/common/diagnostic.h"
#include "core/common/expected.h"
#include "core/compiler/plan.h"
#include "core/engine/engine.h"
#include "core/report/atomicfile.h"
#include "core/report/runreport.h"

#include <atomic>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace waferscope::core::report {

// A run directory (`waferscope-cli run --model_dir DIR`, the GUI's File > Export report):
// report.json, report.csv, report.html, trace.json and summary.txt, the TensorBoard event file
// events.out.tfevents.<unix time>.<host>.waferscope (tfevents.h), and cycle_vs_model.csv for a
// report that carries a cycle-level run.
struct ReportFile {
    ReportFile(std::string fileName, std::string text)
        : name(std::move(fileName))
        , content(std::move(text))
    {
    }
    ReportFile(std::string fileName, ContentWriter contentWriter)
        : name(std::move(fileName))
        , writer(std::move(contentWriter))
    {
    }
    std::string name; // file name inside the directory
    std::string content; // the bytes, unless `writer` produces them
    ContentWriter writer;
    // Files of the directory this one replaces under other names (an earlier run's event file):
    // removed in the same commit that puts this one in place.
    std::function<bool(const std::string& name)> supersedes;
};

// The files of a run, in the order above. The trace is produced while it is written: `run` and
// `plan` must outlive the files.
std::vector<ReportFile> runDirectoryFiles(
    const RunReport& report, const engine::RunResult& run, const ExecutionPlan& plan);

// Writes `files` into `directory`, creating it when needed. Files not named in `files` (nor
// superseded by one of them) are left alone; leftovers of a writer that was killed are removed. Every file is staged
// completely first, then each is renamed into place: a reader or a crash finds each file either as it was or as it is
// now, never truncated; when any file cannot be staged, none is replaced. Setting `*cancelled` stops the write within
// one piece of a file (about 1 MB): the staged temporaries are removed, nothing is replaced, and the error says
// "cancelled".
std::optional<Diagnostic> writeRunDirectory(
    const std::string& directory, const std::vector<ReportFile>& files, const std::atomic<bool>* cancelled = nullptr);

// Reads a report back: `path` is a run directory (its report.json is read) or a report.json.
Expected<RunReport> readReportFile(const std::string& path);

} // namespace waferscope::core::report
