#include "ui/models/reportexporter.h"

#include "ui/models/reportpdf.h"
#include "ui/models/runchain.h"

#include "core/report/atomicfile.h"
#include "core/report/chrometrace.h"
#include "core/report/runreport.h"
#include "core/study/study.h"
#include "core/sweeps/sensitivity.h"

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

namespace {

// The run directory's extra file: report.pdf, made from the study's report.
core::Expected<std::vector<core::report::ReportFile>> pdfFile(
    const QString& directory, const core::report::RunReport& report)
{
    QString pdfError;
    const QByteArray pdf = reportPdf(report, &pdfError);
    if (pdf.isEmpty())
        return core::Diagnostic { (directory + QStringLiteral("/report.pdf")).toStdString(), 0, 0,
            pdfError.toStdString() };
    return std::vector<core::report::ReportFile> { { "report.pdf", pdf.toStdString() } };
}

// The study that writes the job's report: every piece the job holds, so that only the sensitivity
// (when the job has none) is computed; at cycle level with the token run, whose seed the manifest
// records. What the headline figure depends on is in the report, as `run --model_dir` writes it.
core::study::StudySpec reportStudy(const ReportJob& job)
{
    core::study::StudySpec spec;
    spec.model = job.model->file;
    spec.system = job.system;
    spec.compile = job.compileOptions;
    spec.run = job.run->options;
    spec.calibration = job.calibration;
    spec.plan = job.plan;
    spec.ran = job.run->run;
    spec.scaling = job.run->sweep;
    spec.sensitivity = true;
    if (job.sensitivity)
        spec.sensitivityResult = std::make_shared<const core::sweeps::Sensitivity>(*job.sensitivity);
    if (job.tokenRun) {
        spec.level = core::study::StudyLevel::Cycle;
        spec.cycleLevel = job.tokenRun;
        spec.cycle.tokens = int(job.tokenRun->tokens.size());
        spec.cycle.promptTokens = int(job.tokenRun->prompt.size());
        spec.cycle.seed = job.tokenSeed;
    }
    spec.extraFiles
        = [directory = job.directory](const core::report::RunReport& report) { return pdfFile(directory, report); };
    return spec;
}

} // namespace

QString writeReportDirectory(
    const ReportJob& job, const std::atomic<bool>* cancelled, const std::function<void(double)>& progress)
{
    if (!job.model || !job.plan || !job.run || !job.run->run)
        return QStringLiteral("%1: error: there is no run to export yet").arg(job.directory);
    // The directory is this export's before the sweep starts: another writer is refused at once.
    core::Expected<core::report::RunDirectoryWriter> opened
        = core::report::RunDirectoryWriter::open(job.directory.toStdString());
    if (!opened)
        return QString::fromStdString(opened.error().format());
    core::report::RunDirectoryWriter writer = std::move(opened).value();
    core::study::StudySpec spec = reportStudy(job);
    spec.writer = &writer;
    core::study::StudyControl control;
    control.cancelFlag = cancelled;
    if (progress)
        control.progress = [&progress](const core::study::StudyProgress& at) { progress(at.fraction); };
    const core::Expected<core::study::StudyOutcome> outcome = core::study::runStudy(spec, control);
    if (outcome)
        return {};
    if (core::study::isCancellation(outcome.error()) || (cancelled && cancelled->load()))
        return reportCancelledMessage(job.directory);
    return QString::fromStdString(outcome.error().format());
}

QString writeTimelineTrace(const QString& path, const core::engine::RunResult& run, const core::ExecutionPlan* plan)
{
    const std::string trace = core::report::chromeTrace(run, plan);
    if (const std::optional<core::Diagnostic> failure = core::report::writeFileAtomically(path.toStdString(), trace))
        return QString::fromStdString(failure->format());
    return {};
}

} // namespace waferscope::ui
