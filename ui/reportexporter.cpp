#include "ui/reportexporter.h"

#include "core/common/textfile.h"
#include "core/report/rundirectory.h"
#include "core/report/runreport.h"
#include "ui/reportpdf.h"

#include <QMetaObject>
#include <QPointer>
#include <QThreadPool>

namespace waferscope::ui {

ReportExporter::ReportExporter(QObject* parent)
    : QObject(parent)
{
}

QStringList ReportExporter::fileNames()
{
    return { QStringLiteral("report.json"), QStringLiteral("report.csv"), QStringLiteral("report.html"),
        QStringLiteral("trace.json"), QStringLiteral("summary.txt"), QStringLiteral("report.pdf") };
}

QString ReportExporter::cancelledMessage(const QString& directory)
{
    return QStringLiteral("%1: the report was cancelled; no file was replaced").arg(directory);
}

void ReportExporter::cancel()
{
    if (m_cancel)
        m_cancel->store(true);
}

QString writeReportDirectory(const ReportJob& job, const std::atomic<bool>* cancelled)
{
    const auto stopped = [cancelled] { return cancelled && cancelled->load(); };
    if (!job.graph || !job.plan || !job.run)
        return QStringLiteral("%1: error: there is no run to export yet").arg(job.directory);
    const core::Expected<std::string> bytes
        = core::readTextFile(job.inputPath.toStdString(), std::size_t(64) << 20, "Model Zoo params YAML file");
    if (!bytes)
        return QString::fromStdString(bytes.error().format());
    const core::report::RunReport report
        = core::report::makeReport(core::report::makeManifest(job.inputPath.toStdString(), *bytes, *job.graph,
                                       job.compileOptions, job.runOptions, job.run->metrics),
            *job.run, *job.plan, job.sweep.get());
    std::vector<core::report::ReportFile> files = core::report::runDirectoryFiles(report, *job.run, *job.plan);
    if (stopped())
        return ReportExporter::cancelledMessage(job.directory);
    QString pdfError;
    const QByteArray pdf = reportPdf(report, &pdfError);
    if (pdf.isEmpty())
        return QStringLiteral("%1/report.pdf: error: %2").arg(job.directory, pdfError);
    files.emplace_back("report.pdf", pdf.toStdString());
    if (const std::optional<core::Diagnostic> error
        = core::report::writeRunDirectory(job.directory.toStdString(), files, cancelled))
        return stopped() ? ReportExporter::cancelledMessage(job.directory) : QString::fromStdString(error->format());
    return {};
}

void ReportExporter::start(ReportJob job)
{
    m_busy = true;
    m_cancel = std::make_shared<std::atomic<bool>>(false);
    QPointer<ReportExporter> self(this);
    QThreadPool::globalInstance()->start([self, job = std::move(job), cancelled = m_cancel] {
        const QString error = writeReportDirectory(job, cancelled.get());
        QMetaObject::invokeMethod(
            self.data(),
            [self, directory = job.directory, error] {
                if (!self)
                    return;
                self->m_busy = false;
                Q_EMIT self->finished(directory, error);
            },
            Qt::QueuedConnection);
    });
}

} // namespace waferscope::ui
