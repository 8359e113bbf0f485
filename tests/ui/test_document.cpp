// The Document without a window: a model loads, compiles and runs into the same plan and run as
// core gives for the same inputs, and a change of settings is one transaction that compiles
// once, however many fields it changes, also when it comes with a model to load.
#include "ui/models/document.h"
#include "ui/models/fabricruns.h"

#include "app/cli/cli.h"

#include "core/compiler/compiler.h"
#include "core/engine/calibration.h"
#include "core/engine/engine.h"
#include "core/hardware/builtinpresets.h"
#include "core/model/modelloader.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonDocument>
#include <QJsonObject>
#include <QRegularExpression>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>

#include <sstream>
#include <string>
#include <vector>

using namespace waferscope;

namespace {

const QString kSample = QStringLiteral(WAFERSCOPE_SOURCE_DIR "/samples/gpt2_small.yaml");
const QString kOther = QStringLiteral(WAFERSCOPE_SOURCE_DIR "/samples/fc_mnist.yaml");

std::unique_ptr<ui::Document> makeDocument()
{
    return std::make_unique<ui::Document>(core::loadBuiltinPresets().value());
}

// Counts the compiles a document starts: each chain begins with one (busy with "compiling").
class CompileCounter {
public:
    explicit CompileCounter(ui::Document* document)
        : m_spy(document, &ui::Document::busyChanged)
    {
    }
    int count() const
    {
        int compiles = 0;
        for (const QList<QVariant>& call : m_spy)
            compiles += call.at(0).toString() == QStringLiteral("compiling") ? 1 : 0;
        return compiles;
    }

private:
    QSignalSpy m_spy;
};

// The plan and run core makes of the sample on `system` with these options.
core::engine::RunResult expectedRun(const QString& path, const core::SystemSpec& system, int numSystems,
    core::RunMode mode, core::CompileOptions* compiled = nullptr)
{
    const core::ModelGraph graph = core::loadModel(path.toStdString()).value();
    core::CompileOptions options;
    options.mode = mode;
    options.numSystems = numSystems;
    if (compiled)
        *compiled = options;
    const core::engine::Calibration calibration = core::engine::builtinCalibration();
    const core::ExecutionPlan plan = core::engine::compileFor(graph, system, options, calibration).value();
    core::engine::RunOptions run;
    run.mode = mode;
    run.maxSteps = ui::Document::kStepsShown;
    return core::engine::run(plan, graph, system, run, calibration).value();
}

bool waitSettled(ui::Document* document)
{
    QSignalSpy settled(document, &ui::Document::settled);
    return settled.wait(120000);
}

// A run directory's files by name, the TensorBoard event file's (named for its time and host) as
// "events.out.tfevents".
QStringList runDirectoryFiles(const QString& directory)
{
    QStringList names = QDir(directory).entryList(QDir::Files, QDir::Name);
    names.replaceInStrings(
        QRegularExpression(QStringLiteral("^events\\.out\\.tfevents\\..*")), QStringLiteral("events.out.tfevents"));
    return names;
}

QByteArray readFile(const QString& path)
{
    QFile file(path);
    return file.open(QIODevice::ReadOnly) ? file.readAll() : QByteArray();
}

// The one field two reports of the same inputs differ in: when they were made.
QByteArray createdUtc(const QString& directory)
{
    const QJsonObject report = QJsonDocument::fromJson(readFile(directory + QStringLiteral("/report.json"))).object();
    return report[QStringLiteral("manifest")].toObject()[QStringLiteral("created_utc")].toString().toLatin1();
}

} // namespace

class TestDocument : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void startsOnTheDefaultSystem()
    {
        const auto document = makeDocument();
        QCOMPARE(document->system().name, std::string(core::defaultPresetName()));
        QCOMPARE(document->numSystems(), 1);
        QCOMPARE(document->mode(), core::RunMode::Train);
        QVERIFY(!document->model() && !document->plan() && !document->run());
    }

    void aModelRunsWithoutAWindow()
    {
        const auto document = makeDocument();
        QVERIFY(document->selectSystem(QStringLiteral("cs2")));
        CompileCounter compiles(document.get());
        document->open(kSample);
        QVERIFY(waitSettled(document.get()));
        QVERIFY(document->plan() && document->run());
        QCOMPARE(compiles.count(), 1);
        const core::engine::RunResult want = expectedRun(kSample, document->system(), 1, core::RunMode::Train);
        QCOMPARE(document->run()->metrics.stepTimeS, want.metrics.stepTimeS);
        QCOMPARE(document->run()->metrics.samplesPerS, want.metrics.samplesPerS);
        QCOMPARE(document->generations().plan, document->generations().model);
        QCOMPARE(document->generations().run, document->generations().model);
    }

    void aSettingsChangeCompilesOnce()
    {
        const auto document = makeDocument();
        QVERIFY(document->selectSystem(QStringLiteral("cs2")));
        document->open(kSample);
        QVERIFY(waitSettled(document.get()));
        const std::uint64_t generation = document->generations().current;

        // Three fields at once: one compile, one settingsChanged, a plan for all three.
        CompileCounter compiles(document.get());
        QSignalSpy changed(document.get(), &ui::Document::settingsChanged);
        ui::Settings settings = document->withSystem(*document->systemIndexOf(QStringLiteral("cs3")));
        settings.numSystems = 4;
        settings.mode = core::RunMode::Train;
        settings.execution = core::ExecutionChoice::WeightStreaming;
        QCOMPARE(document->applySettings(settings), QString());
        QVERIFY(waitSettled(document.get()));
        QCOMPARE(compiles.count(), 1);
        QCOMPARE(changed.count(), 1);
        QCOMPARE(document->generations().current, generation + 1);
        QCOMPARE(document->system().name, std::string("cs3"));
        QCOMPARE(document->numSystems(), 4);
        QCOMPARE(document->plan()->mode, core::ExecutionMode::WeightStreaming);
        QCOMPARE(document->run()->metrics.numCsx, 4);

        // The same settings again: no transaction at all.
        QCOMPARE(document->applySettings(settings), QString());
        QCOMPARE(compiles.count(), 1);
        QCOMPARE(changed.count(), 1);

        // A cluster size the generation cannot have: refused whole, nothing changes.
        ui::Settings refused = document->withSystem(*document->systemIndexOf(QStringLiteral("cs1")));
        refused.numSystems = 2;
        refused.mode = core::RunMode::Inference;
        QVERIFY(document->applySettings(refused).contains(QStringLiteral("no SwarmX")));
        QCOMPARE(document->system().name, std::string("cs3"));
        QCOMPARE(document->mode(), core::RunMode::Train);
        QCOMPARE(compiles.count(), 1);
    }

    // A model opened with new settings (a job clicked in the Cluster dock): the settings wait for
    // the load, and the load's chain is the only compile.
    void settingsWithALoadCompileOnce()
    {
        const auto document = makeDocument();
        document->open(kOther);
        QVERIFY(waitSettled(document.get()));
        CompileCounter compiles(document.get());
        ui::Settings settings = document->withSystem(*document->systemIndexOf(QStringLiteral("cs2")));
        settings.numSystems = 2;
        document->open(kSample);
        QCOMPARE(document->applySettings(settings), QString());
        QVERIFY(!document->plan()); // the old model's plan is not kept for the new settings
        QVERIFY(waitSettled(document.get()));
        QCOMPARE(compiles.count(), 1);
        QVERIFY(document->model()->path.endsWith(QStringLiteral("gpt2_small.yaml")));
        const core::engine::RunResult want = expectedRun(kSample, document->system(), 2, core::RunMode::Train);
        QCOMPARE(document->run()->metrics.numCsx, 2);
        QCOMPARE(document->run()->metrics.stepTimeS, want.metrics.stepTimeS);
    }

    // The fabric's runs follow the Document's plan: a GEMV region runs on the cycle-level fabric
    // (a 768 x 768 projection of GPT-2 small, one token), attention has no kernel, and a new plan
    // drops what was asked of the old one.
    void fabricRunsFollowThePlan()
    {
        const auto document = makeDocument();
        ui::FabricRuns* fabric = document->fabric();
        QVERIFY(!fabric->kernelUnavailableReason(0).isEmpty()); // no plan yet
        QVERIFY(!fabric->tokenUnavailableReason().isEmpty());
        QVERIFY(document->selectSystem(QStringLiteral("cs2")));
        document->open(kSample);
        QVERIFY(waitSettled(document.get()));
        const auto indexOf = [&](const std::string& name) {
            for (std::size_t i = 0; i < document->plan()->regions.size(); ++i)
                if (document->plan()->regions[i].opName == name)
                    return int(i);
            return -1;
        };
        QVERIFY(fabric->kernelUnavailableReason(indexOf("layers.0.attn.core"))
                    .contains(QStringLiteral("no cycle-level kernel")));
        const int k = indexOf("layers.0.attn.k");
        QCOMPARE(fabric->kernelUnavailableReason(k), QString());
        QSignalSpy ran(fabric, &ui::FabricRuns::kernelFinished);
        fabric->runKernel(k);
        QVERIFY(ran.wait(60000));
        const auto result = ran.first().at(0).value<core::fabric::KernelResult>();
        QCOMPARE(result.fmacs, std::uint64_t(768) * 768);
        QVERIFY(result.maxAbsError <= 1e-2);
        // Training plans have no token to run; another plan takes the old one's place.
        QVERIFY(!fabric->tokenUnavailableReason().isEmpty());
        QCOMPARE(document->setNumSystems(2), QString());
        QVERIFY(!fabric->tokenRun());
        QVERIFY(!fabric->kernelUnavailableReason(k).isEmpty()); // the plan is being compiled again
        QVERIFY(waitSettled(document.get()));
        QCOMPARE(fabric->kernelUnavailableReason(k), QString());
    }

    // The load fails: the model held is compiled for the settings changed meanwhile.
    void settingsWithAFailedLoadCompileTheModelHeld()
    {
        const auto document = makeDocument();
        QVERIFY(document->selectSystem(QStringLiteral("cs2")));
        document->open(kSample);
        QVERIFY(waitSettled(document.get()));
        CompileCounter compiles(document.get());
        QSignalSpy failed(document.get(), &ui::Document::loadFailed);
        document->open(QStringLiteral(WAFERSCOPE_SOURCE_DIR "/samples/no_such_model.yaml"));
        QCOMPARE(document->setNumSystems(2), QString());
        QVERIFY(waitSettled(document.get()));
        QCOMPARE(failed.count(), 1);
        QCOMPARE(compiles.count(), 1);
        QVERIFY(document->model()->path.endsWith(QStringLiteral("gpt2_small.yaml")));
        QCOMPARE(document->run()->metrics.numCsx, 2);
    }

    void anExportIsTheClisRunDirectory()
    {
        // File > Export report of the run on screen writes what `waferscope-cli run --model_dir` writes
        // for the same model, system and options (the GUI's sweep given as --sweep), report.pdf aside,
        // and but for the time each was made.
        const auto document = makeDocument();
        document->open(kSample);
        QVERIFY(waitSettled(document.get()));
        QVERIFY(document->run() && document->runState()->sweep);
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const QString gui = dir.filePath(QStringLiteral("gui"));
        QSignalSpy exported(document.get(), &ui::Document::reportExported);
        document->exportReport(gui);
        QVERIFY(exported.wait(120000));
        QCOMPARE(exported.last().at(1).toString(), QString());

        QStringList counts;
        for (const core::sweeps::ScalingPoint& point : document->runState()->sweep->points)
            counts << QString::number(point.numCsx);
        const QString cli = dir.filePath(QStringLiteral("cli"));
        const std::vector<std::string> args { "run", "--params", kSample.toStdString(), "--system",
            std::string(core::defaultPresetName()), "--num_csx", "1", "--max_steps",
            std::to_string(ui::Document::kStepsShown), "--sweep", counts.join(QLatin1Char(',')).toStdString(),
            "--model_dir", cli.toStdString(), "--quiet" };
        std::ostringstream out, err;
        QVERIFY2(cli::runCli(args, out, err) == 0, err.str().c_str());

        QStringList files = runDirectoryFiles(gui);
        QVERIFY(files.removeOne(QStringLiteral("report.pdf")));
        QCOMPARE(files, runDirectoryFiles(cli));
        const QByteArray guiMade = createdUtc(gui);
        const QByteArray cliMade = createdUtc(cli);
        QVERIFY(!guiMade.isEmpty() && !cliMade.isEmpty());
        for (const QString& name : files) {
            if (name == QStringLiteral("events.out.tfevents")) { // binary, with each event's wall time
                const auto size = [](const QString& directory) {
                    return QDir(directory)
                        .entryInfoList({ QStringLiteral("events.out.tfevents.*") }, QDir::Files)
                        .value(0)
                        .size();
                };
                QCOMPARE(size(gui), size(cli));
                continue;
            }
            QByteArray fromGui = readFile(gui + QLatin1Char('/') + name);
            QByteArray fromCli = readFile(cli + QLatin1Char('/') + name);
            QVERIFY2(!fromGui.isEmpty(), qPrintable(name));
            fromGui.replace(guiMade, "<created_utc>");
            fromCli.replace(cliMade, "<created_utc>");
            QVERIFY2(fromGui == fromCli, qPrintable(name));
        }
    }
};

QTEST_MAIN(TestDocument)
#include "test_document.moc"
