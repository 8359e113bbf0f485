// "What this result depends on": the tornado chart of the run in the window. Its rows are the
// factors of core::sweeps::runSensitivity computed here independently for the same model, system
// and options; a new run replaces it and a run dropped mid-sweep leaves nothing stale.
#include "ui/mainwindow.h"
#include "ui/models/document.h"
#include "ui/models/reportexporter.h"
#include "ui/models/sensitivitymodel.h"
#include "ui/panels/qcustomplotinclude.h"
#include "ui/panels/sensitivitypanel.h"
#include "windowfixture.h"

#include "core/compiler/compiler.h"
#include "core/engine/calibration.h"
#include "core/hardware/builtinpresets.h"
#include "core/model/modelloader.h"
#include "core/sweeps/sensitivity.h"

#include <QDockWidget>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QSignalSpy>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTest>
#include <QThreadPool>

#include <algorithm>

using namespace waferscope;
using waferscope::test::makeWindow;

namespace {

const QString kSample = QStringLiteral(WAFERSCOPE_SOURCE_DIR "/samples/gpt3_xl.yaml");

core::sweeps::Sensitivity expectedSensitivity(const core::SystemSpec& system, int numSystems, core::RunMode mode)
{
    const core::ModelGraph graph = core::loadModel(kSample.toStdString()).value();
    core::CompileOptions compile;
    compile.mode = mode;
    compile.numSystems = numSystems;
    core::engine::RunOptions run;
    run.mode = mode;
    run.maxSteps = ui::Document::kStepsShown;
    return core::sweeps::runSensitivity(graph, system, compile, run, core::engine::builtinCalibration()).value();
}

std::shared_ptr<const core::ModelGraph> sampleGraph()
{
    return std::make_shared<const core::ModelGraph>(core::loadModel(kSample.toStdString()).value());
}

// Where the bar of a row ends: bars are drawn from their base value (the baseline) on.
double barAt(QCustomPlot* plot, int plottable, double key)
{
    auto* bars = qobject_cast<QCPBars*>(plot->plottable(plottable));
    const auto it = bars->data()->findBegin(key, false);
    return it != bars->data()->constEnd() && it->key == key ? bars->baseValue() + it->value : -1.0;
}

} // namespace

class TestSensitivityPanel : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void emptyWithoutARun()
    {
        auto window = makeWindow();
        ui::SensitivityPanel* panel = window->views().sensitivity;
        QVERIFY(!window->sensitivity()->sensitivity().has_value());
        QVERIFY(!window->sensitivity()->isComputing());
        QVERIFY(panel->rowNames().isEmpty());
        auto* dock = window->findChild<QDockWidget*>(QStringLiteral("sensitivityDock"));
        QVERIFY(dock != nullptr);
        QCOMPARE(dock->windowTitle(), QStringLiteral("What this result depends on"));
        QVERIFY(window->raiseDock(QStringLiteral("sensitivity")));
        QVERIFY(!window->raiseDock(QStringLiteral("nosuch")));
    }

    void tornadoRowsAreTheSweepOfTheRun()
    {
        auto window = makeWindow();
        QVERIFY(window->document()->selectSystem(QStringLiteral("cs2")));
        QVERIFY(window->document()->setNumSystems(16).isEmpty());
        QVERIFY(window->raiseDock(QStringLiteral("sensitivity")));
        ui::SensitivityPanel* panel = window->views().sensitivity;
        ui::SensitivityModel* model = window->sensitivity();
        window->openFile(kSample);
        QTRY_VERIFY_WITH_TIMEOUT(model->sensitivity().has_value(), 240000);
        QVERIFY(window->document()->run() != nullptr);

        const core::sweeps::Sensitivity expected
            = expectedSensitivity(window->document()->system(), 16, core::RunMode::Train);
        const core::sweeps::Sensitivity& shown = *model->sensitivity();
        QCOMPARE(shown.figure, std::string("samples_per_s"));
        QCOMPARE(shown.baseline, expected.baseline);
        QCOMPARE(shown.baseline, window->document()->run()->metrics.samplesPerS);
        QCOMPARE(shown.factors.size(), expected.factors.size());
        QVERIFY(!expected.factors.empty());

        // The chart: at most kMaxRows rows, the largest effect on top, bars from the figure at
        // the factor's low to that at its high around the baseline.
        const int rows = int(std::min<std::size_t>(expected.factors.size(), ui::SensitivityPanel::kMaxRows));
        QCOMPARE(panel->rowNames().size(), rows);
        QCustomPlot* plot = panel->plot();
        QCOMPARE(plot->plottableCount(), 2);
        for (int i = 0; i < rows; ++i) {
            const core::sweeps::FactorEffect& f = expected.factors[std::size_t(i)];
            QCOMPARE(panel->rowNames()[i], QString::fromStdString(f.name));
            const double key = double(rows - 1 - i);
            QCOMPARE(barAt(plot, 0, key), expected.baseline + (f.figureAtLow - expected.baseline));
            QCOMPARE(barAt(plot, 1, key), expected.baseline + (f.figureAtHigh - expected.baseline));
            auto ticker = plot->yAxis->ticker().dynamicCast<QCPAxisTickerText>();
            QVERIFY(ticker);
            QCOMPARE(ticker->ticks().value(key), QString::fromStdString(f.name));
        }
        QCOMPARE(qobject_cast<QCPBars*>(plot->plottable(0))->baseValue(), expected.baseline);
        QVERIFY(plot->xAxis->label().startsWith(QStringLiteral("samples/s")));
        auto* line = qobject_cast<QCPItemStraightLine*>(plot->item(0));
        QVERIFY(line != nullptr);
        QCOMPARE(line->point1->coords().x(), expected.baseline);
        for (int i = 0; i < rows; ++i) {
            const double impact = expected.factors[std::size_t(i)].impact();
            if (i > 0)
                QVERIFY(impact <= expected.factors[std::size_t(i - 1)].impact());
        }

        // The table lists every factor with why it spans its range.
        QTableWidget* table = panel->table();
        QCOMPARE(table->rowCount(), int(expected.factors.size()));
        for (int i = 0; i < table->rowCount(); ++i) {
            const core::sweeps::FactorEffect& f = expected.factors[std::size_t(i)];
            QCOMPARE(table->item(i, 0)->text(), QString::fromStdString(f.name));
            QCOMPARE(table->item(i, 5)->text(), QString::fromStdString(f.reason));
            QVERIFY(table->item(i, 0)->toolTip().contains(QString::fromStdString(f.reason)));
        }
    }

    // A sweep still running when a newer run arrives is dropped: only the newest one shows.
    void aNewerRunDropsTheSweepInFlight()
    {
        const core::Expected<core::SystemSpec> preset = core::loadBuiltinPreset("cs2");
        QVERIFY(preset.hasValue());
        const core::SystemSpec& cs2 = *preset;
        const auto graph = sampleGraph();
        // The model alone, without a window: active, so it sweeps at once.
        ui::SensitivityModel model;
        QVERIFY(model.isActive());
        ui::SensitivityPanel panel(&model); // a view, to check the rows drawn
        panel.show();
        QSignalSpy computed(&model, &ui::SensitivityModel::computed);
        core::engine::RunOptions run;
        run.maxSteps = ui::Document::kStepsShown;
        for (const int numSystems : { 16, 2 }) {
            core::CompileOptions compile;
            compile.numSystems = numSystems;
            model.setRun(graph, cs2, compile, run);
            QVERIFY(model.isComputing());
            QVERIFY(!model.sensitivity().has_value());
        }
        QTRY_VERIFY_WITH_TIMEOUT(model.sensitivity().has_value(), 120000);
        QThreadPool::globalInstance()->waitForDone();
        QCoreApplication::processEvents();
        QCOMPARE(computed.count(), 1);
        const core::sweeps::Sensitivity expected = expectedSensitivity(cs2, 2, core::RunMode::Train);
        QCOMPARE(model.sensitivity()->baseline, expected.baseline);
        QCOMPARE(panel.rowNames().size(), int(std::min<std::size_t>(expected.factors.size(), 10)));
        for (int i = 0; i < panel.rowNames().size(); ++i)
            QCOMPARE(panel.rowNames()[i], QString::fromStdString(expected.factors[std::size_t(i)].name));
    }

    // A panel nobody sees does no work: the run it is given is swept when it is shown.
    void aHiddenPanelSweepsOnlyOnceShown()
    {
        const core::Expected<core::SystemSpec> preset = core::loadBuiltinPreset("cs2");
        QVERIFY(preset.hasValue());
        const core::SystemSpec& cs2 = *preset;
        const auto graph = sampleGraph();
        ui::SensitivityModel model;
        ui::SensitivityPanel panel(&model); // hidden: the model is inactive
        QVERIFY(!model.isActive());
        core::CompileOptions compile;
        compile.numSystems = 2;
        core::engine::RunOptions run;
        run.maxSteps = ui::Document::kStepsShown;
        model.setRun(graph, cs2, compile, run);
        QVERIFY(!model.isComputing());
        QVERIFY(model.isPending());
        QTest::qWait(50);
        QVERIFY(!model.sensitivity().has_value());
        panel.show();
        QTRY_VERIFY_WITH_TIMEOUT(model.sensitivity().has_value(), 120000);
        QCOMPARE(model.sensitivity()->baseline, expectedSensitivity(cs2, 2, core::RunMode::Train).baseline);
        QVERIFY(!panel.rowNames().isEmpty());
    }

    // A new run in the window (another cluster size) replaces the tornado with its own sweep.
    void theTornadoFollowsTheRun()
    {
        auto window = makeWindow();
        QVERIFY(window->document()->selectSystem(QStringLiteral("cs2")));
        QVERIFY(window->document()->setNumSystems(16).isEmpty());
        ui::SensitivityModel* model = window->sensitivity();
        window->openFile(kSample);
        QTRY_VERIFY_WITH_TIMEOUT(model->sensitivity().has_value(), 120000);
        const double first = model->sensitivity()->baseline;
        QVERIFY(window->document()->setNumSystems(4).isEmpty());
        QVERIFY(!model->sensitivity().has_value()); // the run was dropped, and its tornado with it
        QTRY_VERIFY_WITH_TIMEOUT(model->sensitivity().has_value(), 120000);
        const core::sweeps::Sensitivity expected
            = expectedSensitivity(window->document()->system(), 4, core::RunMode::Train);
        QCOMPARE(model->sensitivity()->baseline, expected.baseline);
        QVERIFY(model->sensitivity()->baseline != first);
        QCOMPARE(model->sensitivity()->factors.size(), expected.factors.size());
        for (std::size_t i = 0; i < expected.factors.size(); ++i) {
            QCOMPARE(model->sensitivity()->factors[i].name, expected.factors[i].name);
            QCOMPARE(model->sensitivity()->factors[i].figureAtLow, expected.factors[i].figureAtLow);
            QCOMPARE(model->sensitivity()->factors[i].figureAtHigh, expected.factors[i].figureAtHigh);
        }
    }

    void aReportReusesTheSweepItIsGiven()
    {
        // File > Export report hands over the dock's sweep of the run: the report writes that one
        // and sweeps nothing. A made-up factor shows whose sweep was written.
        const auto graph = sampleGraph();
        const core::SystemSpec cs2 = core::loadBuiltinPreset("cs2").value();
        core::CompileOptions compile;
        const auto plan = std::make_shared<const core::ExecutionPlan>(core::compile(*graph, cs2, compile).value());
        auto state = std::make_shared<ui::RunState>();
        state->options.mode = core::RunMode::Train;
        state->run = std::make_shared<const core::engine::RunResult>(
            core::engine::run(*plan, *graph, cs2, state->options).value());
        core::sweeps::Sensitivity given;
        given.figure = "samples_per_s";
        given.baseline = state->run->metrics.samplesPerS;
        given.low = given.baseline;
        given.high = given.baseline;
        given.factors.push_back(
            { "made.up.factor", "a sweep the dock already ran", 1.0, 0.5, 2.0, given.baseline, given.baseline });
        QTemporaryDir dir;
        ui::ReportJob job { dir.filePath(QStringLiteral("report")),
            ui::makeLoadedModel(kSample, core::LoadedModelFile { kSample.toStdString(), "bytes", *graph }), plan, state,
            compile, nullptr, 1, cs2, core::engine::builtinCalibration(), given };
        QCOMPARE(ui::writeReportDirectory(job), QString());
        QFile file(dir.filePath(QStringLiteral("report/report.json")));
        QVERIFY(file.open(QIODevice::ReadOnly));
        const QJsonArray factors
            = QJsonDocument::fromJson(file.readAll()).object()["sensitivity"].toObject()["factors"].toArray();
        QCOMPARE(factors.size(), qsizetype(1));
        QCOMPARE(factors[0].toObject()["name"].toString(), QStringLiteral("made.up.factor"));
    }
};

QTEST_MAIN(TestSensitivityPanel)
#include "test_sensitivitypanel.moc"
