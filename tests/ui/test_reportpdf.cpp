// reportPdf() on GPT-3 XL on 2 CS-2 (2 steps, with a scaling sweep, so all four charts are drawn):
// a well-formed PDF whose page count follows the number of layers, with the report's title in
// its metadata; an empty report and an inference report still give a PDF; it runs off the GUI
// thread. QPdfWriter compresses the page content, so the text on the pages is not read back here;
// the document information dictionary is written plain.
//
// WAFERSCOPE_REPORT_PDF=path also writes the GPT-3 XL PDF there, to look at.
#include "ui/models/reportpdf.h"

#include "core/compiler/compiler.h"
#include "core/engine/engine.h"
#include "core/hardware/builtinpresets.h"
#include "core/model/modelloader.h"
#include "core/report/runreport.h"
#include "core/sweeps/scaling.h"

#include <QFile>
#include <QRegularExpression>
#include <QTest>

#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

using namespace waferscope;

namespace {

// QTest reports an exception thrown by a test function as that test's failure.
template <typename T>
T take(core::Expected<T> result)
{
    if (!result)
        throw std::runtime_error(result.error().format());
    return std::move(result).value();
}

std::string readAll(const std::string& path)
{
    std::ifstream in(path, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

core::report::RunReport gpt3XlOnTwoCs2()
{
    const std::string path = std::string(WAFERSCOPE_SOURCE_DIR) + "/samples/gpt3_xl.yaml";
    const core::ModelGraph graph = take(core::loadModel(path));
    const core::SystemSpec system = take(core::loadBuiltinPreset("cs2"));
    core::CompileOptions compileOptions;
    compileOptions.numSystems = 2;
    const core::ExecutionPlan plan = take(core::compile(graph, system, compileOptions));
    core::engine::RunOptions runOptions;
    runOptions.maxSteps = 2;
    const core::engine::RunResult run = take(core::engine::run(plan, graph, system, runOptions));
    core::sweeps::ScalingOptions sweepOptions;
    sweepOptions.numCsx = { 1, 2, 4 };
    const core::sweeps::ScalingSweep sweep = take(core::sweeps::scale(graph, system, sweepOptions));
    return core::report::buildReport({ path, readAll(path), graph, system, plan, run, compileOptions, runOptions,
        core::engine::builtinCalibration(), &sweep });
}

// Page objects, not the page tree ("/Type /Pages").
int pageCount(const QByteArray& pdf)
{
    static const QRegularExpression page(QStringLiteral("/Type\\s*/Page(?![A-Za-z])"));
    int count = 0;
    for (auto it = page.globalMatch(QString::fromLatin1(pdf)); it.hasNext(); it.next())
        ++count;
    return count;
}

// A text string of the information dictionary as QPdfWriter writes it: a literal string of
// UTF-16BE with a byte order mark, "(", ")" and "\" escaped with a backslash.
QString infoString(const QByteArray& pdf, const QByteArray& key)
{
    qsizetype at = pdf.indexOf(key + " (");
    if (at < 0)
        return QStringLiteral("<no %1>").arg(QString::fromLatin1(key));
    QByteArray raw;
    for (at += key.size() + 2; at < pdf.size() && pdf[at] != ')'; ++at) {
        if (pdf[at] == '\\')
            ++at;
        raw += pdf[at];
    }
    if (!raw.startsWith("\xfe\xff"))
        return QString::fromLatin1(raw);
    QString text;
    for (qsizetype i = 2; i + 1 < raw.size(); i += 2)
        text += QChar(char16_t((uchar(raw[i]) << 8) | uchar(raw[i + 1])));
    return text;
}

bool isPdf(const QByteArray& pdf)
{
    return pdf.startsWith("%PDF-") && pdf.trimmed().endsWith("%%EOF");
}

} // namespace

class TestReportPdf : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase()
    {
        m_report = gpt3XlOnTwoCs2();
        QVERIFY(m_report.metrics.layers.size() > 20);
        QVERIFY(!m_report.regions.empty());
        QVERIFY(m_report.scaling.has_value());
    }

    void gpt3XlReportIsAMultiPagePdf()
    {
        QString error;
        const QByteArray pdf = ui::reportPdf(m_report, &error);
        QVERIFY2(isPdf(pdf), qPrintable(error));
        QVERIFY(error.isEmpty());
        QVERIFY2(pageCount(pdf) > 1, qPrintable(QString::number(pageCount(pdf))));
        QVERIFY(pdf.contains("/MediaBox [0 0 595"));
        QCOMPARE(infoString(pdf, "/Title"), QStringLiteral("WaferScope report: gpt3 on 2 x cs2"));
        QCOMPARE(infoString(pdf, "/Creator"), QStringLiteral("WaferScope"));
        const QByteArray out = qgetenv("WAFERSCOPE_REPORT_PDF");
        if (!out.isEmpty()) {
            QFile file(QString::fromLocal8Bit(out));
            QVERIFY(file.open(QIODevice::WriteOnly));
            QCOMPARE(file.write(pdf), pdf.size());
        }
    }

    // The layer table is paginated, not cut; the per-layer chart shrinks to one page.
    void moreLayersMakeMorePages()
    {
        core::report::RunReport longer = m_report;
        for (int copy = 0; copy < 3; ++copy)
            longer.metrics.layers.insert(
                longer.metrics.layers.end(), m_report.metrics.layers.begin(), m_report.metrics.layers.end());
        const QByteArray base = ui::reportPdf(m_report);
        const QByteArray more = ui::reportPdf(longer);
        QVERIFY(isPdf(more));
        QVERIFY2(pageCount(more) > pageCount(base) + 1,
            qPrintable(QStringLiteral("%1 pages, then %2").arg(pageCount(base)).arg(pageCount(more))));
    }

    void emptyReportIsStillAPdf()
    {
        core::report::RunReport empty;
        empty.manifest.model = "empty (model)";
        empty.manifest.system = "cs2";
        QString error;
        const QByteArray pdf = ui::reportPdf(empty, &error);
        QVERIFY2(isPdf(pdf), qPrintable(error));
        QVERIFY(pageCount(pdf) >= 1);
        QCOMPARE(infoString(pdf, "/Title"), QStringLiteral("WaferScope report: empty (model) on 1 x cs2"));
    }

    void inferenceReportIsAPdf()
    {
        core::report::RunReport inference = m_report;
        inference.metrics.mode = core::RunMode::Inference;
        inference.scaling.reset();
        const QByteArray pdf = ui::reportPdf(inference);
        QVERIFY(isPdf(pdf));
        QVERIFY(pageCount(pdf) > 1);
    }

    void worksOffTheGuiThread()
    {
        QByteArray pdf;
        std::thread worker([&] { pdf = ui::reportPdf(m_report); });
        worker.join();
        QVERIFY(isPdf(pdf));
        QCOMPARE(pageCount(pdf), pageCount(ui::reportPdf(m_report)));
    }

private:
    core::report::RunReport m_report;
};

QTEST_MAIN(TestReportPdf)
#include "test_reportpdf.moc"
