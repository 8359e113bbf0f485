#include "ui/models/reportexporter.h"

#include "ui/models/reportpdf.h"
#include "ui/models/runchain.h"

#include "core/engine/sensitivity.h"
#include "core/report/atomicfile.h"
#include "core/report/chrometrace.h"
#include "core/report/cyclelevelreport.h"
#include "core/report/rundirectory.h"
#include "core/report/runreport.h"

namespace waferscope::ui {

QStringList reportFileNames(bool tokenRun)
{
    QStringList names { QStringLiteral("report.json"), QStringLiteral("report.csv"), QStringLiteral("report.html"),
        QStringLiteral("trace.json"), QStringLiteral("summary.txt") };
    if (tokenRun)
        names << QStringLiteral("cycle_vs_model.csv");
    return names << QStringLiteral("report.pdf");
}

QString reportCancelledMessage(const QString& directory)
{
    return QStringLiteral("%1: the report was cancelled; no file was replaced").arg(directory);
}

QString writeReportDirectory(const ReportJob& job, const std::atomic<bool>* cancelled)
{
    const auto stopped = [cancelled] { return cancelled && cancelled->load(); };
    if (!job.model || !job.plan || !job.run || !job.run->run)
        return QStringLiteral("%1: error: there is no run to export yet").arg(job.directory);
    const core::engine::RunResult& run = *job.run->run;
    // The directory is this export's before the sweep starts: another writer is refused at once.
    core::Expected<core::report::RunDirectoryWriter> opened
        = core::report::RunDirectoryWriter::open(job.directory.toStdString());
    if (!opened)
        return QString::fromStdString(opened.error().format());
    core::report::RunDirectoryWriter writer = std::move(opened).value();
    core::report::RunReport report
        = core::report::makeReport(core::report::makeManifest(job.model->path.toStdString(), job.model->bytes,
                                       *job.model->graph, job.compileOptions, job.run->options, run.metrics),
            run, *job.plan, *job.model->graph, job.system, job.run->sweep.get(), job.calibration);
    if (job.tokenRun)
        report.cycleLevel = core::report::cycleLevelReport(*job.tokenRun);
    // What the headline figure depends on, as `run --model_dir` writes it: the dock's sweep of
    // this run, or swept here (cancellable).
    if (job.sensitivity) {
        report.sensitivity = *job.sensitivity;
    } else {
        core::engine::SweepOptions sweepOptions;
        sweepOptions.cancelled = stopped;
        core::Expected<core::engine::Sensitivity> sensitivity = core::engine::runSensitivity(
            *job.model->graph, job.system, job.compileOptions, job.run->options, job.calibration, sweepOptions);
        if (stopped())
            return reportCancelledMessage(job.directory);
        if (!sensitivity)
            return QStringLiteral("%1: error: %2")
                .arg(job.directory, QString::fromStdString(sensitivity.error().format()));
        report.sensitivity = std::move(sensitivity).value();
    }
    std::vector<core::report::ReportFile> files = core::report::runDirectoryFiles(report, run, *job.plan);
    if (stopped())
        return reportCancelledMessage(job.directory);
    QString pdfError;
    const QByteArray pdf = reportPdf(report, &pdfError);
    if (pdf.isEmpty())
        return QStringLiteral("%1/report.pdf: error: %2").arg(job.directory, pdfError);
    files.emplace_back("report.pdf", pdf.toStdString());
    if (const std::optional<core::Diagnostic> error = writer.write(files, cancelled))
        return stopped() ? reportCancelledMessage(job.directory) : QString::fromStdString(error->format());
    return {};
}

QString writeTimelineTrace(const QString& path, const core::engine::RunResult& run, const core::ExecutionPlan* plan)
{
    const std::string trace = core::report::chromeTrace(run, plan);
    if (const std::optional<core::Diagnostic> failure = core::report::writeFileAtomically(path.toStdString(), trace))
        return QString::fromStdString(failure->format());
    return {};
}

} // namespace waferscope::ui
