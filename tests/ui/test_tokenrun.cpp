// Run token on fabric: the tiny Llama's inference plan on a CS-2 shrunk to 96 x 96 usable PEs,
// run on the cycle-level fabric from the window while its frames stream to the wafer view.
#include "ui/mainwindow.h"
#include "ui/models/document.h"
#include "ui/models/fabricruns.h"
#include "ui/models/reportexporter.h"
#include "ui/models/tokenrun.h"
#include "ui/panels/placementpanel.h"
#include "ui/panels/regiontablemodel.h"
#include "ui/stallwatch.h"
#include "ui/wafer/playbackcontroller.h"

#include "core/compiler/compiler.h"
#include "core/cyclelevel/cyclerun.h"
#include "core/hardware/builtinpresets.h"
#include "core/model/modelloader.h"

#include <QAction>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>
#include <QThreadPool>

#include <memory>

using namespace waferscope;

namespace {

const char* const kModel = WAFERSCOPE_SOURCE_DIR "/tests/data/cyclelevel/tiny_llama.yaml";

// The built-in presets with CS-2's program rectangle shrunk to 96 x 96 PEs: the same PE, a
// fabric small enough for a test.
std::vector<core::SystemSpec> smallSystems()
{
    std::vector<core::SystemSpec> systems = core::loadBuiltinPresets().value();
    for (core::SystemSpec& system : systems)
        if (system.name == "cs2") {
            system.wafer.usableWidth = 96;
            system.wafer.usableHeight = 96;
            system.wafer.fabricWidth = 96 + 7;
            system.wafer.fabricHeight = 96 + 2;
        }
    return systems;
}

} // namespace

class TestTokenRun : public QObject {
    Q_OBJECT

    std::unique_ptr<ui::MainWindow> makeWindow()
    {
        auto window = std::make_unique<ui::MainWindow>(smallSystems());
        window->resize(1400, 900);
        window->show();
        if (!QTest::qWaitForWindowExposed(window.get()))
            qWarning("window not exposed");
        return window;
    }

    // A window with the small model compiled for inference on the small CS-2, settled; null
    // (the test has failed) if it did not settle.
    std::unique_ptr<ui::MainWindow> inferenceWindow()
    {
        auto window = makeWindow();
        if (!window->document()->selectSystem(QStringLiteral("cs2")))
            return nullptr;
        window->document()->setMode(core::RunMode::Inference);
        QSignalSpy settled(window.get(), &ui::MainWindow::settled);
        window->openFile(QString::fromUtf8(kModel));
        if (!settled.wait(60000))
            return nullptr;
        return window;
    }

    static QAction* runAction(ui::MainWindow* window)
    {
        return window->findChild<QAction*>(QStringLiteral("runTokenOnFabric"));
    }

private Q_SLOTS:
    void fullFramesMergeInPairs()
    {
        // Four frames of 2 PEs at capacity 4; a fifth merges them into (1+2), (3+4), 5, each
        // value the cycle-weighted mean of the two windows, and doubles the stride.
        core::fabric::RecordedFrames frames(2, 1, 0, 0, 2, 1, 4, 1e9);
        const std::uint64_t intervals[] = { 100, 300, 200, 200, 50 };
        for (int i = 0; i < 5; ++i) {
            auto frame = std::make_shared<core::fabric::CompactFrame>();
            frame->intervalCycles = intervals[i];
            frame->position = i;
            frame->activity = { std::uint8_t(40 * i), 255 };
            frame->linkLoad.assign(8, std::uint8_t(10 * i));
            frames.add(frame);
        }
        QCOMPARE(frames.size(), std::size_t(3));
        QCOMPARE(frames.halvings(), std::uint64_t(1));
        QCOMPARE(frames.stride(), std::uint64_t(2));
        QCOMPARE(frames.at(0)->intervalCycles, std::uint64_t(400));
        QCOMPARE(int(frames.at(0)->activity[0]), 30); // (0 * 100 + 40 * 300) / 400
        QCOMPARE(int(frames.at(0)->activity[1]), 255);
        QCOMPARE(int(frames.at(0)->linkLoad[3]), 8); // (0 * 100 + 10 * 300) / 400 = 7.5, rounded
        QCOMPARE(frames.at(0)->position, std::int64_t(1)); // labelled as the later window
        QCOMPARE(int(frames.at(1)->activity[0]), 100); // (80 + 120) / 2
        QCOMPARE(frames.at(2)->intervalCycles, std::uint64_t(50));
    }

    void disabledWithAReasonUntilAnInferencePlan()
    {
        auto window = makeWindow();
        QAction* action = runAction(window.get());
        QVERIFY(action);
        QVERIFY(!action->isEnabled());
        QVERIFY(action->toolTip().contains(QStringLiteral("model")));
        QVERIFY(window->document()->selectSystem(QStringLiteral("cs2")));
        QSignalSpy settled(window.get(), &ui::MainWindow::settled);
        window->openFile(QString::fromUtf8(kModel)); // compiled for training
        QVERIFY(settled.wait(60000));
        QVERIFY(!action->isEnabled());
        QVERIFY(action->toolTip().contains(QStringLiteral("Inference")));
        window->document()->setMode(core::RunMode::Inference);
        QTRY_VERIFY_WITH_TIMEOUT(action->isEnabled(), 60000);
    }

    void framesStreamWhileItRunsThenPlayBack()
    {
        auto window = inferenceWindow();
        QVERIFY(window);
        ui::Document* document = window->document();
        QVERIFY(document->fabric()->tokenUnavailableReason().isEmpty());
        ui::PlaybackController* playback = window->presenter()->playback();

        // Frames shown while the run goes on, and the newest followed.
        int shownWhileRunning = 0;
        bool followedForward = true; // each frame shown while following is newer than the last
        std::size_t lastShown = 0;
        connect(playback, &ui::PlaybackController::frameShown, this,
            [&](std::shared_ptr<const ui::FrameSnapshot> snapshot) {
                if (!snapshot->fabricFrame || !document->fabric()->isTokenRunning())
                    return;
                ++shownWhileRunning;
                if (playback->isFollowing() && shownWhileRunning > 1 && snapshot->index < lastShown)
                    followedForward = false;
                lastShown = snapshot->index;
            });
        QSignalSpy finished(document->fabric(), &ui::FabricRuns::tokenFinished);
        ui::StallWatch watch;
        const int promptTokens = 12;
        document->fabric()->runToken(promptTokens);
        QVERIFY(document->fabric()->isTokenRunning());
        QVERIFY(!runAction(window.get())->isEnabled());
        QVERIFY(finished.wait(240000));
        QThreadPool::globalInstance()->waitForDone();
        QVERIFY2(shownWhileRunning > 0, "no frame reached the wafer view while the token ran");
        QVERIFY(followedForward);
        QVERIFY2(watch.maxGapMs() < 500.0, qPrintable(QString::number(watch.maxGapMs())));
        const std::shared_ptr<const core::cyclelevel::CycleRunResult> run = document->fabric()->tokenRun();
        QVERIFY(run);
        QVERIFY(run->tokensMatchReference);

        // The same run computed here: the table's measured cycles are the fabric's.
        const core::ModelGraph graph = core::loadModel(kModel).value();
        core::CompileOptions compileOptions;
        compileOptions.mode = core::RunMode::Inference;
        const core::ExecutionPlan plan = core::compile(graph, window->document()->system(), compileOptions).value();
        core::cyclelevel::CycleRunOptions options;
        options.tokens = 1;
        options.promptTokens = promptTokens;
        const core::cyclelevel::CycleRunResult expected
            = core::cyclelevel::runCycleLevel(graph, plan, window->document()->system(), options).value();
        QCOMPARE(run->decode.back().cycles, expected.decode.back().cycles);
        ui::RegionTableModel* table = window->views().placement->regionModel();
        int measuredRows = 0;
        for (int row = 0; row < table->rowCount(); ++row) {
            const QString op
                = table->data(table->index(row, ui::RegionTableModel::OpColumn), Qt::DisplayRole).toString();
            for (const core::cyclelevel::RegionCycles& region : expected.regions)
                if (QString::fromStdString(region.op) == op) {
                    QCOMPARE(
                        table->data(table->index(row, ui::RegionTableModel::MeasuredColumn), Qt::UserRole).toLongLong(),
                        qlonglong(region.measuredCycles));
                    ++measuredRows;
                }
        }
        QCOMPARE(measuredRows, int(expected.regions.size()));

        // File > Export report carries the token run: report.json's cycle_level and
        // cycle_vs_model.csv, as `run --level cycle --model_dir` writes them.
        QTemporaryDir reportDir;
        QVERIFY(reportDir.isValid());
        QSignalSpy exported(window.get(), &ui::MainWindow::reportExported);
        window->exportReport(reportDir.path());
        QVERIFY(exported.wait(60000));
        QCOMPARE(exported.last().at(1).toString(), QString());
        for (const QString& name : ui::reportFileNames(true))
            QVERIFY2(QFileInfo(reportDir.filePath(name)).size() > 0, qPrintable(name));
        QFile reportFile(reportDir.filePath(QStringLiteral("report.json")));
        QVERIFY(reportFile.open(QIODevice::ReadOnly));
        const QJsonObject cycleLevel
            = QJsonDocument::fromJson(reportFile.readAll()).object()[QStringLiteral("cycle_level")].toObject();
        QCOMPARE(cycleLevel[QStringLiteral("cycles_per_token")].toDouble(), run->cyclesPerToken);
        QCOMPARE(cycleLevel[QStringLiteral("regions")].toArray().size(), qsizetype(expected.regions.size()));

        // The frames: every position's, windows of about kTokenFrameCycles (the fabric may step
        // past a multiple of it); the last token's windows cover most of its cycles, all but the
        // tail after the last window (no later call ends it).
        const core::fabric::RecordedFrames* frames = playback->fabricFrames();
        QVERIFY(frames && frames->finished());
        QCOMPARE(frames->halvings(), std::uint64_t(0));
        QCOMPARE(frames->newest()->position, std::int64_t(promptTokens - 1));
        std::uint64_t lastTokenCycles = 0;
        double activity = 0.0;
        for (std::size_t i = 0; i < frames->size(); ++i) {
            const std::shared_ptr<const core::fabric::CompactFrame> frame = frames->at(i);
            QVERIFY(frame->intervalCycles > 0);
            QCOMPARE(frame->activity.size(), std::size_t(plan.usable.w) * std::size_t(plan.usable.h));
            if (frame->position == promptTokens - 1) {
                lastTokenCycles += frame->intervalCycles;
                for (std::uint8_t value : frame->activity)
                    activity += value;
            }
        }
        const std::uint64_t cycles = expected.decode.back().cycles;
        QVERIFY2(lastTokenCycles <= cycles && 2 * lastTokenCycles > cycles,
            qPrintable(QStringLiteral("%1 of %2").arg(lastTokenCycles).arg(cycles)));
        QVERIFY(activity > 0.0);

        // The view caught up with the newest frame; after the run the token plays back like any
        // run, from the first frame to the last.
        // (Following stops on the pull tick that sees the recording finished, which may come
        // after the newest frame was shown.)
        QTRY_VERIFY_WITH_TIMEOUT(playback->shown() && playback->shown()->index + 1 == frames->size(), 10000);
        QTRY_VERIFY_WITH_TIMEOUT(!playback->isPlaying(), 10000);
        QCOMPARE(playback->frameCount(), frames->size());
        playback->seek(0);
        QTRY_VERIFY_WITH_TIMEOUT(playback->shown() && playback->shown()->index == 0, 10000);
        QVERIFY(playback->shown()->fabricFrame == frames->at(0));
        playback->play();
        QTRY_VERIFY_WITH_TIMEOUT(!playback->isPlaying(), 60000);
        QTRY_VERIFY_WITH_TIMEOUT(playback->shown()->index + 1 == frames->size(), 10000);
    }

    void cancelStopsIt()
    {
        auto window = inferenceWindow();
        QVERIFY(window);
        ui::Document* document = window->document();
        ui::PlaybackController* playback = window->presenter()->playback();
        document->fabric()->runToken(64);
        QTRY_VERIFY_WITH_TIMEOUT(playback->frameCount() > 0, 60000);
        const core::fabric::RecordedFrames* frames = playback->fabricFrames();
        QVERIFY(frames);
        QVERIFY(document->fabric()->isTokenRunning());
        document->cancel();
        QVERIFY(!document->fabric()->isTokenRunning());
        QTRY_VERIFY_WITH_TIMEOUT(frames->finished(), 10000); // the worker returned
        QVERIFY(frames->newest()->position < 63); // stopped before its last token
        QVERIFY(!document->fabric()->tokenRun());
        QVERIFY(runAction(window.get())->isEnabled());
        const std::size_t recorded = frames->size();
        QThreadPool::globalInstance()->waitForDone();
        QCoreApplication::processEvents();
        QCOMPARE(frames->size(), recorded);
        // What arrived stays to step through.
        QTRY_VERIFY_WITH_TIMEOUT(!playback->isPlaying(), 10000);
        QCOMPARE(playback->frameCount(), frames->size());
    }
};

QTEST_MAIN(TestTokenRun)
#include "test_tokenrun.moc"
