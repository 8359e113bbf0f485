// Trust in the GUI. Help > Validation: the published figures recomputed on the job runner and
// shown as `waferscope-cli validate` prints them; cancel leaves nothing half-shown. Run >
// Software profile: the document runs with the chosen calibration.
#include "ui/mainwindow.h"
#include "ui/models/document.h"
#include "ui/panels/validationdialog.h"
#include "windowfixture.h"

#include "core/compiler/compiler.h"
#include "core/engine/engine.h"
#include "core/model/modelloader.h"
#include "core/validation/validation.h"

#include <QFile>
#include <QPushButton>
#include <QSignalSpy>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTest>
#include <QThreadPool>

using namespace waferscope;

class TestValidationDialog : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void theSoftwareProfileMenuRunsWithTheChosenCalibration()
    {
        // Run > Software profile: a calibration file whose launch overhead is zero runs the 8B
        // decode at the engine's mechanisms alone, as the CLI's --calibration FILE does.
        auto window = test::makeWindow();
        QVERIFY(window->document()->selectSystem(QStringLiteral("cs3")));
        window->document()->setMode(core::RunMode::Inference);
        QSignalSpy settled(window.get(), &ui::MainWindow::settled);
        const QString path = QStringLiteral(WAFERSCOPE_SOURCE_DIR "/samples/llama3_8b.yaml");
        window->openFile(path);
        QVERIFY(settled.wait(30000));
        QTRY_VERIFY_WITH_TIMEOUT(window->document()->run() != nullptr, 30000);
        const double launch = window->document()->run()->metrics.tokensPerS;
        QCOMPARE(window->document()->run()->metrics.calibrationProfile, std::string("2024-08-launch"));
        QTemporaryDir directory;
        const QString file = directory.filePath(QStringLiteral("zero.json"));
        QVERIFY(!window->document()->setCalibration(QStringLiteral("no-such-profile")).isEmpty());
        // The launch overhead at zero (its range widened to hold it).
        {
            std::string text(core::engine::builtinCalibrationText());
            const auto replace = [&text](const std::string& from, const std::string& to) {
                const std::size_t at = text.find(from);
                QVERIFY(at != std::string::npos);
                text.replace(at, from.size(), to);
            };
            replace("\"value\": 1134.0", "\"value\": 0.0");
            replace("[\n            1032.0", "[\n            0.0");
            QFile out(file);
            QVERIFY(out.open(QIODevice::WriteOnly | QIODevice::Truncate));
            out.write(QByteArray::fromStdString(text));
        }
        QCOMPARE(window->document()->setCalibration(file), QString());
        QTRY_VERIFY_WITH_TIMEOUT(
            window->document()->run() != nullptr && window->document()->run()->metrics.tokensPerS > launch, 30000);
        core::engine::Calibration zero = core::engine::builtinCalibration();
        zero.regionLaunchCycles = 0.0;
        core::CompileOptions options;
        options.mode = core::RunMode::Inference;
        const core::ModelGraph graph = core::loadModel(path.toStdString()).value();
        const core::ExecutionPlan plan = core::compile(graph, window->document()->system(), options).value();
        core::engine::RunOptions run;
        run.mode = core::engine::RunMode::Inference;
        run.maxSteps = ui::Document::kStepsShown;
        const double expected
            = core::engine::run(plan, graph, window->document()->system(), run, zero)->metrics.tokensPerS;
        QCOMPARE(window->document()->run()->metrics.tokensPerS, expected);
    }

    void showsEveryFigureAsTheCoreComputesIt()
    {
        ui::ValidationDialog dialog;
        QSignalSpy finished(&dialog, &ui::ValidationDialog::finished);
        dialog.start();
        // Every figure with its sensitivity sweep: about a minute under the sanitizers.
        QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 240000);
        QCOMPARE(finished.front().front().toBool(), true);
        const auto& figures = core::validation::builtinFigures();
        QCOMPARE(dialog.table()->rowCount(), int(figures.size()));
        for (int row = 0; row < int(figures.size()); ++row) {
            const core::validation::FigureResult& shown = dialog.results()[std::size_t(row)];
            QCOMPARE(dialog.table()->item(row, 0)->text(), QString::fromStdString(figures[std::size_t(row)].what));
            QCOMPARE(dialog.table()->item(row, 3)->text() == QStringLiteral("fitted"), shown.fitted);
            QVERIFY(dialog.table()->item(row, 1)->toolTip().contains(QString::fromStdString(shown.command)));
            // The cheap figures evaluated here again, independently of the dialog's job.
            if (figures[std::size_t(row)].kind != "inference_wafers"
                && figures[std::size_t(row)].id != "llama3p1_8b_decode_cs3")
                continue;
            const auto expected = core::validation::evaluate(figures[std::size_t(row)]);
            QVERIFY(expected.hasValue());
            QCOMPARE(shown.predicted, expected->predicted);
            QCOMPARE(shown.fitted, expected->fitted);
        }
    }

    void cancelStopsTheJobAndShowsNothing()
    {
        ui::ValidationDialog dialog;
        QSignalSpy finished(&dialog, &ui::ValidationDialog::finished);
        dialog.start();
        const auto cancel = dialog.findChildren<QPushButton*>();
        for (QPushButton* button : cancel)
            if (button->text() == QStringLiteral("Cancel"))
                button->click();
        QCOMPARE(finished.count(), 1);
        QCOMPARE(finished.front().front().toBool(), false);
        QThreadPool::globalInstance()->waitForDone();
        QCoreApplication::processEvents();
        QCOMPARE(dialog.table()->rowCount(), 0);
        QCOMPARE(finished.count(), 1); // the cancelled job delivers nothing
    }
};

QTEST_MAIN(TestValidationDialog)
#include "test_validationdialog.moc"
