#pragma once

#include "core/compiler/compiler.h"
#include "core/engine/engine.h"
#include "core/engine/scaling.h"
#include "core/model/modelgraph.h"

#include <QObject>
#include <QString>

#include <atomic>
#include <memory>

namespace waferscope::ui {

// What File > Export report writes from: the run on screen and how it was made.
struct ReportJob {
    QString directory;
    QString inputPath; // the params file, hashed into the manifest
    std::shared_ptr<const core::ModelGraph> graph;
    std::shared_ptr<const core::ExecutionPlan> plan;
    std::shared_ptr<const core::engine::RunResult> run;
    std::shared_ptr<const core::engine::ScalingSweep> sweep; // may be null
    core::CompileOptions compileOptions;
    core::engine::RunOptions runOptions;
};

// Writes the run directory of `waferscope-cli run --model_dir` (report.json, report.csv,
// report.html, trace.json, summary.txt; core/report) plus report.pdf, on a worker thread of the
// global pool, all six staged then renamed together. Lives on the GUI thread; `finished`
// arrives there.
class ReportExporter : public QObject {
    Q_OBJECT
public:
    explicit ReportExporter(QObject* parent = nullptr);
    void start(ReportJob job);
    bool isBusy() const { return m_busy; }
    // Stops the export in progress within one piece of a file (about 1 MB): nothing is replaced,
    // no temporary stays, and `finished` reports cancelledMessage().
    void cancel();
    static QString cancelledMessage(const QString& directory);

    // The files a report directory gets from the GUI, in writing order.
    static QStringList fileNames();

Q_SIGNALS:
    // `error` is empty on success; otherwise the located reason, and no file was replaced.
    void finished(const QString& directory, const QString& error);

private:
    bool m_busy = false;
    std::shared_ptr<std::atomic<bool>> m_cancel; // of the running export
};

// The export itself, on the calling thread: returns the error text, or an empty string.
QString writeReportDirectory(const ReportJob& job, const std::atomic<bool>* cancelled = nullptr);

} // namespace waferscope::ui
