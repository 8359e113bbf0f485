// The GUI shell on the offscreen platform: system selection, cluster limits, drag and drop,
// hover, the screenshot path and the launch options.
#include "sanitizer.h"
#include "ui/launchoptions.h"
#include "ui/mainwindow.h"
#include "ui/models/document.h"
#include "ui/models/fabricruns.h"
#include "ui/models/hardwaretablemodel.h"
#include "ui/models/layertablemodel.h"
#include "ui/models/reportexporter.h"
#include "ui/models/runlayertablemodel.h"
#include "ui/panels/layerspanel.h"
#include "ui/panels/messagepanel.h"
#include "ui/panels/modelpanel.h"
#include "ui/panels/placementpanel.h"
#include "ui/panels/qcustomplotinclude.h"
#include "ui/panels/regiontablemodel.h"
#include "ui/panels/scalingpanel.h"
#include "ui/panels/systempanel.h"
#include "ui/panels/timelinedock.h"
#include "ui/panels/timelinepanel.h"
#include "ui/panels/utilizationpanel.h"
#include "ui/screenshot.h"
#include "ui/stallwatch.h"
#include "ui/wafer/playbackcontroller.h"
#include "ui/wafer/waferview.h"
#include "windowfixture.h"

#include "core/compiler/compiler.h"
#include "core/engine/engine.h"
#include "core/engine/framesource.h"
#include "core/hardware/builtinpresets.h"
#include "core/model/modelloader.h"
#include "core/sweeps/scaling.h"

#include <QCryptographicHash>
#include <QDockWidget>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QMimeData>
#include <QPushButton>
#include <QSettings>
#include <QSignalSpy>
#include <QStatusBar>
#include <QTableView>
#include <QTemporaryDir>
#include <QTest>
#include <QThreadPool>
#include <QUrl>

#include <cmath>

using namespace waferscope;

class TestMainWindow : public QObject {
    Q_OBJECT

    static std::unique_ptr<ui::MainWindow> makeWindow() { return test::makeWindow(); }

    // The engine's own job for what the window ran (the engine is deterministic): the file
    // compiled for `numSystems` of the window's system, run for as many steps as the window shows.
    struct EngineJob {
        core::ModelGraph graph;
        core::ExecutionPlan plan;
        core::engine::RunResult run;
    };
    static EngineJob engineJob(const QString& path, const core::SystemSpec& system, int numSystems)
    {
        EngineJob job;
        job.graph = core::loadModel(path.toStdString()).value();
        core::CompileOptions options;
        options.numSystems = numSystems;
        job.plan = core::compile(job.graph, system, options).value();
        core::engine::RunOptions runOptions;
        runOptions.maxSteps = ui::Document::kStepsShown;
        job.run = core::engine::run(job.plan, job.graph, system, runOptions).value();
        return job;
    }

    static void drop(QWidget* target, const QList<QUrl>& urls) { QVERIFY(test::dropUrls(target, urls)); }

private Q_SLOTS:
    void systemSelectionDrivesViewAndPanel()
    {
        auto window = makeWindow();
        QVERIFY(window->document()->selectSystem(QStringLiteral("cs2")));
        QCOMPARE(window->views().wafer->scene().fabricWidth, 757);
        QCOMPARE(window->views().wafer->scene().fabricHeight, 996);
        QCOMPARE(window->views().wafer->scene().usable, QRect(4, 1, 750, 994));
        QVERIFY(window->document()->selectSystem(QStringLiteral("cs3")));
        QCOMPARE(window->views().wafer->scene().fabricWidth, 762);
        QCOMPARE(window->views().wafer->scene().fabricHeight, 1172);
        const ui::HardwareTableModel* model = window->views().system->model();
        QVERIFY(model->rowCount() > 10);
        QCOMPARE(model->index(0, ui::HardwareTableModel::ValueColumn).data().toString(), QStringLiteral("WSE-3"));
        QVERIFY(!window->document()->selectSystem(QStringLiteral("cs9")));
        QCOMPARE(window->document()->system().name, std::string("cs3"));
    }

    void clusterSizeFollowsTheGeneration()
    {
        auto window = makeWindow();
        QVERIFY(window->document()->selectSystem(QStringLiteral("cs2")));
        QVERIFY(window->document()->setNumSystems(192).isEmpty());
        QCOMPARE(window->document()->numSystems(), 192);
        QVERIFY(!window->document()->setNumSystems(193).isEmpty());
        QVERIFY(window->document()->selectSystem(QStringLiteral("cs1")));
        QCOMPARE(window->document()->numSystems(), 1); // clamped: CS-1 has no SwarmX
        QVERIFY(window->document()->setNumSystems(2).contains(QStringLiteral("no SwarmX")));
    }

    void droppedModelLoadsOffTheGuiThreadIntoTheModelPanel()
    {
        auto window = makeWindow();
        const QString path = QStringLiteral(WAFERSCOPE_SOURCE_DIR "/samples/gpt3_xl.yaml");
        QSignalSpy loaded(window->document(), &ui::Document::modelChanged);
        drop(window.get(), { QUrl::fromLocalFile(path) });
        QVERIFY(loaded.wait(20000));
        const ui::LayerTableModel* layers = window->views().model->layerModel();
        QVERIFY(layers->graph() != nullptr);
        // GPT-3 XL: 24 blocks of 10 ops, embedding, positions, final norm, head and loss.
        QCOMPARE(layers->rowCount(), 24 * 10 + 5);
        QCOMPARE(layers->graph()->totalParams, std::int64_t(1'315'723'264)); // closed form in the sample's header
        QVERIFY(window->views().model->summaryText().contains(QStringLiteral("1,315,723,264")));
        QVERIFY(window->windowTitle().startsWith(QStringLiteral("gpt3_xl.yaml")));
    }

    void refusedFileKeepsThePreviousModel()
    {
        auto window = makeWindow();
        QSignalSpy settled(window.get(), &ui::MainWindow::settled);
        QSignalSpy failed(window->document(), &ui::Document::loadFailed);
        window->openFile(QStringLiteral(WAFERSCOPE_SOURCE_DIR "/samples/fc_mnist.yaml"));
        QVERIFY(settled.wait(20000)); // loaded and compiled: no message still on its way
        const auto plan = window->document()->plan();
        QVERIFY(plan != nullptr);
        const QString bad
            = QStringLiteral(WAFERSCOPE_SOURCE_DIR "/tests/data/bad/legacy_num_heads_not_dividing_hidden.yaml");
        const int before = window->views().messages->count();
        window->openFile(bad);
        QVERIFY(failed.wait(20000));
        QCOMPARE(window->views().messages->text(before),
            bad + QStringLiteral(":15:16: error: num_heads must divide hidden_size (got 4096 and 30)"));
        QCOMPARE(window->views().model->layerModel()->graph()->config.family, core::ModelConfig::Family::FcMnist);
        QVERIFY(window->views().model->statusText().contains(QStringLiteral("unchanged")));
        QCOMPARE(window->document()->plan(), plan); // and so does its placement
    }

    void droppedDirectoryAndMissingFileAreLocatedErrors()
    {
        auto window = makeWindow();
        QTemporaryDir dir;
        QSignalSpy failed(window->document(), &ui::Document::loadFailed);
        const int before = window->views().messages->count();
        window->openFile(dir.path());
        QVERIFY(failed.wait(20000));
        window->openFile(dir.filePath("gone.yaml"));
        QVERIFY(failed.wait(20000));
        QCOMPARE(window->views().messages->count(), before + 2);
        QCOMPARE(window->views().messages->text(before),
            dir.path() + QStringLiteral(":1:1: error: is a directory, expected a Model Zoo params YAML file"));
        QCOMPARE(window->views().messages->text(before + 1),
            dir.filePath("gone.yaml") + QStringLiteral(":1:1: error: no such file"));
    }

    void onlyTheNewestRequestIsDelivered()
    {
        auto window = makeWindow();
        QSignalSpy loaded(window->document(), &ui::Document::modelChanged);
        window->openFile(QStringLiteral(WAFERSCOPE_SOURCE_DIR "/samples/gpt_1t_synthetic.yaml"));
        window->openFile(QStringLiteral(WAFERSCOPE_SOURCE_DIR "/samples/fc_mnist.yaml"));
        QVERIFY(loaded.wait(20000));
        // Every job finishes and delivers what it may: the first load's result must be dropped.
        QThreadPool::globalInstance()->waitForDone();
        QCoreApplication::processEvents();
        QCOMPARE(loaded.count(), 1);
        QVERIFY(window->document()->model()->path.endsWith(QStringLiteral("fc_mnist.yaml")));
    }

    void hoverReportsThePeUnderTheMouse()
    {
        auto window = makeWindow();
        QVERIFY(window->document()->selectSystem(QStringLiteral("cs2")));
        ui::WaferView* view = window->views().wafer;
        QSignalSpy spy(view, &ui::WaferView::hoveredPeChanged);
        const QPointF pixel = view->viewport().peToPixel(QPointF(100.5, 200.5));
        QTest::mouseMove(view, pixel.toPoint());
        QVERIFY(!spy.isEmpty());
        const auto pe = spy.last().at(0).value<std::optional<ui::WaferPe>>();
        QVERIFY(pe.has_value());
        QCOMPARE(pe->wafer, 0);
        // One PE is at least half a pixel here, so rounding the pixel can move one PE at most.
        QVERIFY(qAbs(pe->pe.x() - 100) <= 1 && qAbs(pe->pe.y() - 200) <= 1);
    }

    void screenshotShowsTheMesh()
    {
        auto window = makeWindow();
        QVERIFY(window->document()->selectSystem(QStringLiteral("cs2")));
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("shot.png"));
        QCOMPARE(ui::saveScreenshot(window.get(), path), QString());
        const QImage image(path);
        QCOMPARE(image.size(), window->size() * window->devicePixelRatio());
        // The PE at the centre of the usable rectangle is drawn in the usable colour.
        ui::WaferView* view = window->views().wafer;
        const QPoint inView = view->viewport().peToPixel(QPointF(378.5, 497.5)).toPoint();
        const QPoint inWindow = view->mapTo(window.get(), inView);
        QCOMPARE(image.pixelColor(inWindow), ui::MeshPalette().usablePe);
        QVERIFY(!ui::saveScreenshot(window.get(), QStringLiteral("/nonexistent-dir/x.png")).isEmpty());
    }

    // The placement shown is the compiler's plan for the model and system, computed here
    // independently with core::compile; hover and click name the region under the mouse.
    void loadedModelIsPlacedOnTheWafer()
    {
        auto window = makeWindow();
        QVERIFY(window->document()->selectSystem(QStringLiteral("cs2")));
        QSignalSpy settled(window.get(), &ui::MainWindow::settled);
        const QString path = QStringLiteral(WAFERSCOPE_SOURCE_DIR "/samples/gpt2_small.yaml");
        window->openFile(path);
        QVERIFY(settled.wait(30000));
        const auto plan = window->document()->plan();
        QVERIFY(plan != nullptr);

        const core::ModelGraph graph = core::loadModel(path.toStdString()).value();
        const core::ExecutionPlan expected
            = core::compile(graph, window->document()->system(), core::CompileOptions {}).value();
        QCOMPARE(plan->mode, core::ExecutionMode::Pipelined);
        QCOMPARE(plan->regions.size(), expected.regions.size());
        ui::WaferView* view = window->views().wafer;
        QVERIFY(view->scene().regions != nullptr);
        QCOMPARE(view->scene().regions->size(), expected.regions.size());
        QCOMPARE(view->scene().wafers, 1);
        QCOMPARE(window->views().placement->regionModel()->rowCount(), int(expected.regions.size()));
        QVERIFY(window->views().placement->summaryText().contains(QStringLiteral("pipelined")));

        // Hover the middle of the LM head's region: the status bar names it and its SRAM.
        std::size_t head = 0;
        while (head < expected.regions.size() && expected.regions[head].opName != "lm_head")
            ++head;
        QVERIFY(head < expected.regions.size());
        const core::Rect rect = expected.regions[head].rect;
        view->zoomBy(1.0); // stop following the fit so the pixel stays put
        const QPoint pixel
            = view->viewport().peToPixel(QPointF(rect.x + rect.w / 2 + 0.5, rect.y + rect.h / 2 + 0.5)).toPoint();
        QTest::mouseMove(view, pixel);
        QVERIFY2(window->presenter()->hoverText().contains(QStringLiteral("lm_head")),
            qPrintable(window->presenter()->hoverText()));
        QVERIFY(window->presenter()->hoverText().contains(QStringLiteral("SRAM")));

        // A click selects it in the Placement dock and outlines it.
        QTest::mouseClick(view, Qt::LeftButton, Qt::NoModifier, pixel);
        QCOMPARE(view->scene().highlighted, int(head));
        QVERIFY(window->statusBar()->currentMessage().contains(QStringLiteral("lm_head")));

        // The rendered view shows the head's colour in its interior: its upper right, clear of the
        // legend in the view's lower left however the docks size the view.
        window->resize(1600, 1000);
        QCoreApplication::processEvents();
        const QImage image = view->grab().toImage();
        const QColor colour = (*view->scene().regions)[head].color;
        const QPoint inside
            = view->viewport().peToPixel(QPointF(rect.x + 3 * rect.w / 4 + 0.5, rect.y + rect.h / 4 + 0.5)).toPoint();
        QCOMPARE(image.pixelColor(inside * image.devicePixelRatio()).rgb(), colour.rgb());

        // A GEMV region runs on the cycle-level fabric from the Placement dock; the result is
        // checked against the reference by the kernel and its cycles are at least the plan's
        // FMAC bound for one token. Attention has no cycle-level kernel and says so.
        const auto indexOf = [&](const std::string& name) {
            for (std::size_t i = 0; i < expected.regions.size(); ++i)
                if (expected.regions[i].opName == name)
                    return int(i);
            return -1;
        };
        window->presenter()->selectRegion(indexOf("layers.0.attn.core"));
        QVERIFY(!window->views().placement->runButton()->isEnabled());
        QVERIFY(window->views().placement->runButton()->toolTip().contains(QStringLiteral("no cycle-level kernel")));
        const int k = indexOf("layers.0.attn.k");
        window->presenter()->selectRegion(k);
        QVERIFY(window->views().placement->runButton()->isEnabled());
        QSignalSpy ran(window->document()->fabric(), &ui::FabricRuns::kernelFinished);
        QTest::mouseClick(window->views().placement->runButton(), Qt::LeftButton);
        QVERIFY(ran.wait(60000));
        const auto result = ran.first().at(0).value<core::fabric::KernelResult>();
        QVERIFY(result.maxAbsError <= 1e-2);
        const core::KernelPlan& kernel = expected.regions[std::size_t(k)].kernel;
        const int simd = window->document()->system().wafer.fmacPerPePerCycle;
        QVERIFY(double(result.cycles) >= double(kernel.tileCols) * double((kernel.tileRows + simd - 1) / simd));
        QCOMPARE(result.fmacs, std::uint64_t(768) * 768); // GPT-2 small: a 768 x 768 projection
        QVERIFY(window->views().placement->runStatusText().contains(QStringLiteral("layers.0.attn.k")));
    }

    void inferenceShowsEveryWafer()
    {
        auto window = makeWindow();
        QVERIFY(window->document()->selectSystem(QStringLiteral("cs3")));
        window->document()->setMode(core::RunMode::Inference);
        QSignalSpy settled(window.get(), &ui::MainWindow::settled);
        const QString path = QStringLiteral(WAFERSCOPE_SOURCE_DIR "/samples/llama3p1_70b.yaml");
        window->openFile(path);
        QVERIFY(settled.wait(30000));
        QVERIFY(window->document()->plan() != nullptr);
        QCOMPARE(window->document()->plan()->mode, core::ExecutionMode::Inference);
        core::CompileOptions options;
        options.mode = core::RunMode::Inference;
        const core::ExecutionPlan expected
            = core::compile(core::loadModel(path.toStdString()).value(), window->document()->system(), options).value();
        QCOMPARE(window->views().wafer->scene().wafers, expected.numSystems);
        QVERIFY(expected.numSystems > 1);
        // Every region is drawn on its own wafer.
        for (const ui::PlacedRegion& region : *window->views().wafer->scene().regions)
            QCOMPARE(region.wafer, expected.regions[std::size_t(region.planIndex)].system);

        // Activations cross from each wafer to the next; the sampled token id (4 bytes) returns.
        QVERIFY2(window->views().placement->summaryText().contains(
                     QStringLiteral("%1 → 0: 4 B").arg(expected.numSystems - 1)),
            qPrintable(window->views().placement->summaryText()));

        // Back to training: the same model streams its weights, one op on the whole fabric.
        window->document()->setMode(core::RunMode::Train);
        QVERIFY(settled.wait(30000));
        QCOMPARE(window->document()->plan()->mode, core::ExecutionMode::WeightStreaming);
        const ui::MeshScene& scene = window->views().wafer->scene();
        QCOMPARE(scene.wafers, 1);
        QCOMPARE(scene.regions->size(), std::size_t(1));
        QCOMPARE(scene.regions->front().rect, scene.usable);
        const int shown = scene.regions->front().planIndex;
        window->presenter()->selectRegion(shown + 1);
        QCOMPARE(window->views().wafer->scene().regions->front().planIndex, shown + 1);
    }

    void compiledModelRunsIntoTheTimelineAndScalingDocks()
    {
        auto window = makeWindow();
        QVERIFY(window->document()->selectSystem(QStringLiteral("cs2")));
        QVERIFY(window->document()->setNumSystems(16).isEmpty());
        QSignalSpy settled(window.get(), &ui::MainWindow::settled);
        const QString path = QStringLiteral(WAFERSCOPE_SOURCE_DIR "/samples/gpt3_xl.yaml");
        window->openFile(path);
        QVERIFY(settled.wait(30000));
        QVERIFY(window->document()->run() != nullptr);
        // The window shows the engine's own run of the same plan.
        const EngineJob job = engineJob(path, window->document()->system(), 16);
        const core::ModelGraph& graph = job.graph;
        const core::engine::RunResult& expected = job.run;
        QCOMPARE(window->document()->run()->metrics.stepTimeS, expected.metrics.stepTimeS);
        QCOMPARE(window->document()->run()->timeline.events.size(), expected.timeline.events.size());

        // Lanes: the MemoryX -> SwarmX -> CS-X path, the CS-X lanes standing for all 16.
        ui::TimelinePanel* timeline = window->views().timelines->run();
        QCOMPARE(timeline->laneNames(),
            QStringList({ QStringLiteral("MemoryX"), QStringLiteral("SwarmX"), QStringLiteral("CS-X I/O (each of 16)"),
                QStringLiteral("CS-X wafer (each of 16)") }));
        // The bar under a point is the event drawn there: the middle of the longest wafer event.
        timeline->plot()->replot();
        std::size_t longest = 0;
        for (std::size_t i = 0; i < expected.timeline.events.size(); ++i) {
            const core::engine::TimelineEvent& e = expected.timeline.events[i];
            const core::engine::TimelineEvent& best = expected.timeline.events[longest];
            if (e.lane == core::engine::LaneKind::CsxCompute && e.end - e.start > best.end - best.start)
                longest = i;
        }
        const core::engine::TimelineEvent& event = expected.timeline.events[longest];
        const QPointF at(timeline->plot()->xAxis->coordToPixel((event.start + event.end) / 2.0 * 1e3),
            timeline->plot()->yAxis->coordToPixel(3.0));
        QCOMPARE(timeline->eventAt(at), int(longest));
        // A click there moves the stepper to that moment, which shows that op on the wafer.
        QTest::mouseClick(timeline->plot(), Qt::LeftButton, Qt::NoModifier, at.toPoint());
        const int region = expected.metrics.layers[std::size_t(event.layer)].region;
        QTRY_COMPARE_WITH_TIMEOUT(window->views().wafer->scene().regions->front().planIndex, region, 10000);

        // Layers dock: one row per layer; sorted by time, the slowest comes first, and picking it
        // shows its op on the wafer.
        QTableView* layers = window->views().layers->table();
        QCOMPARE(layers->model()->rowCount(), int(expected.metrics.layers.size()));
        layers->sortByColumn(ui::RunLayerTableModel::TimeColumn, Qt::DescendingOrder);
        std::size_t slowest = 0;
        for (std::size_t i = 0; i < expected.metrics.layers.size(); ++i)
            if (expected.metrics.layers[i].timeS > expected.metrics.layers[slowest].timeS)
                slowest = i;
        QCOMPARE(layers->model()->index(0, ui::RunLayerTableModel::NameColumn).data().toString(),
            QString::fromStdString(expected.metrics.layers[slowest].name));
        layers->setCurrentIndex(layers->model()->index(0, 0));
        QTRY_COMPARE_WITH_TIMEOUT(
            window->views().wafer->scene().regions->front().planIndex, expected.metrics.layers[slowest].region, 10000);

        // Scaling: the sweep's figure at 16 systems, as the engine computes it.
        core::sweeps::ScalingOptions sweep;
        sweep.numCsx = { 1, 16 };
        const core::sweeps::ScalingSweep points
            = core::sweeps::scale(graph, window->document()->system(), sweep).value();
        const QString speedup = QString::number(points.points.back().speedup, 'f', 2);
        QVERIFY2(window->views().scaling->summary().contains(QStringLiteral("speedup %1").arg(speedup)),
            qPrintable(window->views().scaling->summary()));

        // Inference: one lane per wafer; no sweep.
        window->document()->setMode(core::RunMode::Inference);
        QVERIFY(settled.wait(30000));
        QVERIFY(window->document()->run() != nullptr);
        QCOMPARE(std::string(core::toString(window->document()->run()->metrics.mode)), std::string("inference"));
        QVERIFY(timeline->laneNames().contains(QStringLiteral("wafer 0")));
        QVERIFY(window->views().scaling->summary().contains(QStringLiteral("for training")));
    }

    void steppingShowsTheEnginesFrames()
    {
        // GPT-3 XL on 4 CS-2 (weight streaming), dropped on the window with the activity overlay:
        // the stepper's frames are the engine's own, pixel for pixel, and every view follows.
        auto window = makeWindow();
        ui::StallWatch watch; // from the drop on
        QVERIFY(window->document()->selectSystem(QStringLiteral("cs2")));
        QVERIFY(window->document()->setNumSystems(4).isEmpty());
        window->presenter()->setOverlay(ui::MeshOverlay::Activity);
        QSignalSpy settled(window.get(), &ui::MainWindow::settled);
        QSignalSpy shown(window.get(), &ui::MainWindow::stepShown);
        const QString path = QStringLiteral(WAFERSCOPE_SOURCE_DIR "/samples/gpt3_xl.yaml");
        drop(window.get(), { QUrl::fromLocalFile(path) });
        QVERIFY(settled.wait(30000));
        QVERIFY(window->document()->run() != nullptr);

        // The engine's frames of the same job, computed here.
        const EngineJob job = engineJob(path, window->document()->system(), 4);
        const core::ExecutionPlan& plan = job.plan;
        const core::engine::RunResult& run = job.run;
        const core::engine::FrameSource frames(plan, job.graph, window->document()->system(), run);
        ui::PlaybackController* playback = window->presenter()->playback();
        QCOMPARE(playback->frameCount(), frames.frameCount());
        QVERIFY(frames.frameCount() > 20);

        const auto waitFor = [&](std::size_t index) {
            for (int tries = 0; tries < 50; ++tries) {
                if (playback->shown() && playback->shown()->index == index && !shown.isEmpty()
                    && shown.last().at(0).value<std::size_t>() == index)
                    return true;
                shown.wait(200);
            }
            return false;
        };
        // A step's frame: pixels of the wafer view against the engine's activity at those PEs.
        const auto checkFrame = [&](std::size_t index) {
            const core::engine::EngineFrame expected = frames.frameAtStep(index);
            const core::engine::FrameStep& step = frames.steps()[index];
            ui::WaferView* view = window->views().wafer;
            const QImage image = view->grab().toImage();
            const core::Rect usable = plan.usable;
            int compared = 0;
            // Away from the region's label (centre), its outline (edges) and the legend (bottom).
            for (const QPoint pe : { QPoint(usable.x + usable.w / 4, usable.y + usable.h / 4),
                     QPoint(usable.x + 3 * usable.w / 4, usable.y + usable.h / 5),
                     QPoint(usable.x + usable.w - 40, usable.y + 60) }) {
                const QPointF pixel = view->viewport().peToPixel(QPointF(pe) + QPointF(0.5, 0.5));
                const float activity = expected.peActivity[std::size_t(pe.y() * plan.fabricWidth + pe.x())];
                QCOMPARE(image.pixel(pixel.toPoint()), ui::heatColor(activity));
                ++compared;
            }
            QCOMPARE(compared, 3);
            // The other views show the same moment.
            QCOMPARE(window->views().timelines->run()->cursorTime(), step.start);
            const int layerRow = window->views().layers->table()->currentIndex().row();
            QVERIFY(layerRow >= 0);
            QCOMPARE(window->views()
                         .layers->table()
                         ->model()
                         ->index(layerRow, ui::RunLayerTableModel::NameColumn)
                         .data()
                         .toString(),
                QString::fromStdString(run.metrics.layers[std::size_t(step.layer)].name));
            QCOMPARE(window->views().wafer->scene().regions->front().planIndex,
                run.metrics.layers[std::size_t(step.layer)].region);
        };
        QVERIFY(waitFor(0));
        checkFrame(0);

        // Forward by a layer, back by a phase (keyboard), forward by an iteration (keyboard).
        window->activateWindow();
        std::size_t expected = core::engine::stepFrame(frames.steps(), 0, core::engine::StepUnit::Layer, +1);
        playback->step(core::engine::StepUnit::Layer, +1);
        QVERIFY(waitFor(expected));
        checkFrame(expected);
        const std::size_t afterLayer = expected;
        playback->seek(afterLayer + 3);
        QVERIFY(waitFor(afterLayer + 3));
        QTest::keyClick(window.get(), Qt::Key_Comma, Qt::ControlModifier);
        QVERIFY(waitFor(afterLayer + 2));
        checkFrame(afterLayer + 2);
        expected = core::engine::stepFrame(frames.steps(), afterLayer + 2, core::engine::StepUnit::Iteration, +1);
        QVERIFY(frames.steps()[expected].iteration == 1);
        QTest::keyClick(window.get(), Qt::Key_BraceRight);
        QVERIFY(waitFor(expected));
        checkFrame(expected);

        // The traffic overlay: each PE's busiest link, on the snapshot's scale, where the engine
        // models the step's link load; "not modelled" (NaN, hatched, said in the legend) where the
        // step is work timed by FLOPs and crossings (this first step of an iteration: a lookup).
        window->presenter()->setOverlay(ui::MeshOverlay::Traffic);
        const QPoint pe(plan.usable.x + 10, plan.usable.y + 10);
        const auto checkTraffic = [&](std::size_t index, bool modelled) {
            const core::engine::EngineFrame links = frames.frameAtStep(index);
            bool inUnmodelled = false;
            for (const core::Rect& rect : links.trafficUnmodelled)
                inUnmodelled
                    |= pe.x() >= rect.x && pe.x() < rect.x + rect.w && pe.y() >= rect.y && pe.y() < rect.y + rect.h;
            QCOMPARE(inUnmodelled, !modelled);
            const ui::MeshScene& scene = window->views().wafer->scene();
            QCOMPARE(scene.scale.hatched.isEmpty(), links.trafficUnmodelled.empty());
            const std::size_t at = std::size_t(pe.y() * plan.fabricWidth + pe.x());
            const float busiest = std::max({ links.linkLoad[at * 4], links.linkLoad[at * 4 + 1],
                links.linkLoad[at * 4 + 2], links.linkLoad[at * 4 + 3] });
            const double top = scene.scale.max;
            QCOMPARE(top, ui::niceScaleMax(*std::max_element(links.linkLoad.begin(), links.linkLoad.end())));
            if (modelled)
                QCOMPARE(scene.valueAt({ 0, pe }).value(), float(busiest / top));
            else
                QVERIFY(std::isnan(scene.valueAt({ 0, pe }).value()));
        };
        checkTraffic(expected, false);
        std::size_t matrixStep = expected + 1; // the next step whose link load is modelled
        while (matrixStep < frames.frameCount() && !frames.frameAtStep(matrixStep).trafficUnmodelled.empty())
            ++matrixStep;
        QVERIFY(matrixStep < frames.frameCount());
        playback->seek(matrixStep);
        QVERIFY(waitFor(matrixStep));
        checkTraffic(matrixStep, true);

        // Utilization dock: drawn up to the cursor.
        QVERIFY(window->views().utilization->pointsUpToCursor() > 0);
        QCOMPARE(window->views().utilization->seriesNames().size(), 5);
        // Under the lines, hatched: the share of PEs on work without a traffic model, bin by bin.
        const core::engine::UtilizationSeries utilization = frames.utilization(ui::Document::kUtilizationBins);
        const QCPGraph* hatched = window->views().utilization->unmodelledArea();
        QCOMPARE(hatched->data()->size(), int(utilization.fabricUnmodelled.size()) + 1);
        double hatchedPeak = 0.0;
        for (int b = 0; b < hatched->data()->size() - 1; ++b) {
            QCOMPARE(hatched->data()->at(b)->value, utilization.fabricUnmodelled[std::size_t(b)] * 100.0);
            hatchedPeak = std::max(hatchedPeak, hatched->data()->at(b)->value);
        }
        QVERIFY(hatchedPeak > 0.0);
        QVERIFY(window->views().utilization->plot()->legend->hasItemWithPlottable(hatched));

        // Play: frames advance on their own, then pause holds.
        playback->setSpeed(60);
        playback->play();
        const std::size_t from = playback->current();
        QTRY_VERIFY_WITH_TIMEOUT(playback->shown()->index >= from + 3, 10000);
        playback->pause();
        const std::size_t held = playback->current();
        QTest::qWait(200);
        QCOMPARE(playback->current(), held);

        // The GUI thread was never blocked long during load, compile, run, sweep and playback.
        // The target (50 ms) is measured by waferscope-bench (gui_max_stall_ms_during_run); this
        // only catches work put back on the GUI thread.
        qInfo("longest GUI stall during the run: %.1f ms", watch.maxGapMs());
        // Under AddressSanitizer everything runs several times slower; the bound grows with it.
        const double stallLimitMs = test::kUnderAsan ? 2000.0 : 400.0;
        QVERIFY2(watch.maxGapMs() < stallLimitMs, qPrintable(QString::number(watch.maxGapMs())));
    }

    void sessionRestoresSettingsLayoutAndRecentFiles()
    {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const QString ini = dir.filePath(QStringLiteral("waferscope.ini"));
        const QString first = QStringLiteral(WAFERSCOPE_SOURCE_DIR "/samples/fc_mnist.yaml");
        const QString last = QStringLiteral(WAFERSCOPE_SOURCE_DIR "/samples/gpt2_small.yaml");
        {
            auto window = makeWindow();
            QVERIFY(window->document()->selectSystem(QStringLiteral("cs3")));
            QVERIFY(window->document()->setNumSystems(8).isEmpty());
            window->presenter()->setOverlay(ui::MeshOverlay::Traffic);
            auto* layers = window->findChild<QDockWidget*>(QStringLiteral("layersDock"));
            QVERIFY(layers);
            window->addDockWidget(Qt::RightDockWidgetArea, layers);
            // Two files dropped at once: the last opens, the first goes to the recent files.
            QSignalSpy settled(window.get(), &ui::MainWindow::settled);
            drop(window.get(), { QUrl::fromLocalFile(first), QUrl::fromLocalFile(last) });
            QVERIFY(window->document()->isBusy());
            QVERIFY(window->windowTitle().contains(QStringLiteral("loading gpt2_small.yaml")));
            QVERIFY(settled.wait(30000));
            QVERIFY(!window->document()->isBusy());
            QCOMPARE(window->recentFiles(),
                QStringList({ QFileInfo(last).absoluteFilePath(), QFileInfo(first).absoluteFilePath() }));
            QVERIFY2(window->windowTitle().startsWith(QStringLiteral("gpt2_small.yaml [")),
                qPrintable(window->windowTitle()));
            QVERIFY(window->windowTitle().contains(QStringLiteral("samples/s on 8 x CS-3")));

            // Export: the timeline as a Chrome trace, the wafer as PNG and SVG.
            const QString trace = dir.filePath(QStringLiteral("trace.json"));
            QCOMPARE(window->document()->exportTimeline(trace), QString());
            QFile file(trace);
            QVERIFY(file.open(QIODevice::ReadOnly));
            const QJsonArray events = QJsonDocument::fromJson(file.readAll()).object().value("traceEvents").toArray();
            int complete = 0;
            for (const QJsonValue& event : events)
                complete += event.toObject().value("ph").toString() == QLatin1String("X");
            QCOMPARE(complete, int(window->document()->run()->timeline.events.size()));
            QCOMPARE(window->saveWaferImage(dir.filePath(QStringLiteral("wafer.png"))), QString());
            QCOMPARE(QImage(dir.filePath(QStringLiteral("wafer.png"))).size(), window->views().wafer->size());
            QCOMPARE(window->saveWaferImage(dir.filePath(QStringLiteral("wafer.svg"))), QString());
            QFile svg(dir.filePath(QStringLiteral("wafer.svg")));
            QVERIFY(svg.open(QIODevice::ReadOnly));
            QVERIFY(svg.readAll().contains("<svg"));
            QVERIFY(window->document()
                        ->exportTimeline(dir.filePath(QStringLiteral("no/such/dir/trace.json")))
                        .contains(QStringLiteral("no/such/dir/trace.json")));

            // Export report: the CLI's run directory plus a PDF, written off the GUI thread.
            QSignalSpy exported(window.get(), &ui::MainWindow::reportExported);
            const QString reportDir = dir.filePath(QStringLiteral("report"));
            window->exportReport(reportDir);
            QVERIFY(exported.wait(60000));
            QCOMPARE(exported.last().at(1).toString(), QString());
            for (const QString& name : ui::reportFileNames())
                QVERIFY2(QFileInfo(reportDir + QLatin1Char('/') + name).size() > 0, qPrintable(name));
            QFile reportFile(reportDir + QStringLiteral("/report.json"));
            QVERIFY(reportFile.open(QIODevice::ReadOnly));
            const QJsonObject report = QJsonDocument::fromJson(reportFile.readAll()).object();
            QCOMPARE(
                report["totals"].toObject()["step_time_s"].toDouble(), window->document()->run()->metrics.stepTimeS);
            QCOMPARE(report["layers"].toArray().size(), qsizetype(window->document()->run()->metrics.layers.size()));
            const QJsonObject manifest = report["manifest"].toObject();
            QCOMPARE(manifest["options"].toObject()["num_csx"].toInt(), 8);
            QFile input(last);
            QVERIFY(input.open(QIODevice::ReadOnly));
            QCOMPARE(manifest["input"].toObject()["sha256"].toString(),
                QString::fromLatin1(QCryptographicHash::hash(input.readAll(), QCryptographicHash::Sha256).toHex()));
            QFile pdf(reportDir + QStringLiteral("/report.pdf"));
            QVERIFY(pdf.open(QIODevice::ReadOnly));
            QVERIFY(pdf.readAll().startsWith("%PDF-"));

            QSettings settings(ini, QSettings::IniFormat);
            window->saveSession(settings);
        }
        {
            // Reopened: the same settings, layout and recent files.
            auto window = makeWindow();
            QSettings settings(ini, QSettings::IniFormat);
            window->restoreSession(settings);
            QCOMPARE(QString::fromStdString(window->document()->system().name), QStringLiteral("cs3"));
            QCOMPARE(window->document()->numSystems(), 8);
            QCOMPARE(window->presenter()->overlay(), ui::MeshOverlay::Traffic);
            QCOMPARE(window->recentFiles().size(), 2);
            auto* layers = window->findChild<QDockWidget*>(QStringLiteral("layersDock"));
            QCOMPARE(window->dockWidgetArea(layers), Qt::RightDockWidgetArea);
        }
        {
            // A damaged session: the defaults, and a message saying why.
            QSettings settings(ini, QSettings::IniFormat);
            settings.setValue(QStringLiteral("session/windowState"), QByteArray("not a layout"));
            settings.setValue(QStringLiteral("session/system"), QStringLiteral("cs9"));
            settings.setValue(QStringLiteral("session/numCsx"), QStringLiteral("lots"));
            settings.setValue(QStringLiteral("session/overlay"), 42);
            auto window = makeWindow();
            const std::string defaultSystem = window->document()->system().name;
            window->restoreSession(settings);
            QCOMPARE(window->document()->system().name, defaultSystem);
            QCOMPARE(window->document()->numSystems(), 1);
            QCOMPARE(window->presenter()->overlay(), ui::MeshOverlay::Placement);
            auto* layers = window->findChild<QDockWidget*>(QStringLiteral("layersDock"));
            QCOMPARE(window->dockWidgetArea(layers), Qt::BottomDockWidgetArea);
            ui::MessagePanel* messages = window->views().messages;
            QVERIFY(messages->text(messages->count() - 1).contains(QStringLiteral("could not be restored")));
        }
    }

    void baselineComparisonShowsTheActivityDifference()
    {
        // GPT-2 small on 1 CS-2 (pipelined) kept as the baseline, then GPT-3 XL (weight streaming):
        // the difference overlay is this run's engine activity minus the baseline's at the step of
        // the same iteration, layer and phase, or else at the same share of the run.
        auto window = makeWindow();
        QVERIFY(window->document()->selectSystem(QStringLiteral("cs2")));
        QVERIFY(window->document()->setNumSystems(1).isEmpty());
        QSignalSpy settled(window.get(), &ui::MainWindow::settled);
        const QString first = QStringLiteral(WAFERSCOPE_SOURCE_DIR "/samples/gpt2_small.yaml");
        const QString path = QStringLiteral(WAFERSCOPE_SOURCE_DIR "/samples/gpt3_xl.yaml");
        window->openFile(first);
        QVERIFY(settled.wait(30000));
        window->document()->keepRunAsBaseline();
        QVERIFY(window->document()->baseline().frames != nullptr);
        QVERIFY(!window->views().timelines->baseline()->isHidden());
        window->openFile(path);
        QVERIFY(settled.wait(30000));
        window->presenter()->setOverlay(ui::MeshOverlay::Difference);
        QSignalSpy shown(window.get(), &ui::MainWindow::stepShown);
        window->presenter()->playback()->seek(7);
        std::shared_ptr<const ui::FrameSnapshot> snapshot;
        for (int tries = 0; tries < 50 && !(snapshot && snapshot->index == 7 && snapshot->difference); ++tries) {
            shown.wait(200);
            snapshot = window->presenter()->playback()->shown();
        }
        QVERIFY(snapshot && snapshot->difference);

        const EngineJob one = engineJob(first, window->document()->system(), 1);
        const EngineJob two = engineJob(path, window->document()->system(), 1);
        const core::engine::FrameSource base(one.plan, one.graph, window->document()->system(), one.run);
        const core::engine::FrameSource now(two.plan, two.graph, window->document()->system(), two.run);
        const core::engine::FrameStep& step = now.steps()[7];
        std::size_t match = base.steps().size();
        for (std::size_t i = 0; i < base.steps().size() && match == base.steps().size(); ++i) {
            const core::engine::FrameStep& b = base.steps()[i];
            if (b.iteration == step.iteration && b.layer == step.layer && b.microBatch == step.microBatch
                && b.phase == step.phase)
                match = i;
        }
        if (match == base.steps().size())
            match = base.stepAt(step.start / now.steps().back().end * base.steps().back().end);
        QCOMPARE(snapshot->baselineIndex, match);
        const std::vector<float> a = now.frameAtStep(7).peActivity;
        const std::vector<float> b = base.frameAtStep(match).peActivity;
        const std::vector<float>& d = snapshot->difference->pe.at(0);
        QCOMPARE(d.size(), a.size());
        double largest = 0.0;
        for (std::size_t pe = 0; pe < a.size(); pe += 97) {
            QVERIFY(std::abs(d[pe] - 0.5f * (a[pe] - b[pe] + 1.0f)) < 1e-6f);
            largest = std::max(largest, std::abs(double(a[pe] - b[pe])));
        }
        QVERIFY(largest > 0.1); // a pipelined region map against a whole-wafer kernel
        QCOMPARE(window->views().wafer->scene().field, snapshot->difference);
        QCOMPARE(ui::divergingColor(0.0f), qRgb(0x21, 0x66, 0xac)); // the baseline busier: blue
        QCOMPARE(ui::divergingColor(1.0f), qRgb(0xb2, 0x18, 0x2b)); // this run busier: red
        QVERIFY(!window->views().timelines->baseline()->laneNames().isEmpty());
        window->document()->clearBaseline();
        QVERIFY(window->views().timelines->baseline()->isHidden());
    }

    void cancelKeepsWhatIsOnScreen()
    {
        auto window = makeWindow();
        QSignalSpy settled(window.get(), &ui::MainWindow::settled);
        window->openFile(QStringLiteral(WAFERSCOPE_SOURCE_DIR "/samples/gpt3_xl.yaml"));
        QVERIFY(window->document()->isBusy());
        window->document()->cancel();
        QVERIFY(!window->document()->isBusy());
        QCOMPARE(settled.count(), 1);
        QVERIFY(window->windowTitle().contains(QStringLiteral("cancelled")));
        // The load's result is dropped: once every job has finished and delivered what it may,
        // nothing got compiled.
        QThreadPool::globalInstance()->waitForDone();
        QCoreApplication::processEvents();
        QVERIFY(window->document()->plan() == nullptr);
        QVERIFY(window->document()->model() == nullptr);
        QCOMPARE(settled.count(), 1);
    }

    void unmappableModelSaysWhyAndShowsNoPlacement()
    {
        auto window = makeWindow();
        QVERIFY(window->document()->selectSystem(QStringLiteral("cs1"))); // no MemoryX: GPT-3 XL cannot stream
        QSignalSpy settled(window.get(), &ui::MainWindow::settled);
        window->openFile(QStringLiteral(WAFERSCOPE_SOURCE_DIR "/samples/gpt3_xl.yaml"));
        QVERIFY(settled.wait(30000));
        QVERIFY(window->document()->plan() == nullptr);
        QVERIFY(window->views().wafer->scene().regions == nullptr);
        QVERIFY(window->views().placement->summaryText().contains(QStringLiteral("cannot be mapped")));
        QVERIFY(
            window->views().messages->text(window->views().messages->count() - 1).contains(QStringLiteral("MemoryX")));
    }

    void launchOptions()
    {
        QString error;
        ui::LaunchOptions options = ui::LaunchOptions::parse(
            { "waferscope", "model.yaml", "--system", "cs3", "--num_csx", "4", "--step", "5", "--screenshot", "a.png" },
            &error);
        QVERIFY2(error.isEmpty(), qPrintable(error));
        QCOMPARE(options.file, QStringLiteral("model.yaml"));
        QCOMPARE(options.system, QStringLiteral("cs3"));
        QCOMPARE(options.numCsx, 4);
        QCOMPARE(options.step, std::optional<int>(5));
        QCOMPARE(options.screenshot, QStringLiteral("a.png"));

        QCOMPARE(options.mode, QStringLiteral("train"));
        options = ui::LaunchOptions::parse({ "waferscope", "--mode", "inference" }, &error);
        QCOMPARE(options.system, QStringLiteral("cs3")); // the CLI's default: the current generation
        QCOMPARE(options.mode, QStringLiteral("inference"));
        ui::LaunchOptions::parse({ "waferscope", "--mode", "eval" }, &error);
        QVERIFY(error.contains(QStringLiteral("--mode")));
        ui::LaunchOptions::parse({ "waferscope", "--num_csx", "zero" }, &error);
        QVERIFY(error.contains(QStringLiteral("--num_csx")));
        ui::LaunchOptions::parse({ "waferscope", "--step", "-1" }, &error);
        QVERIFY(error.contains(QStringLiteral("--step")));
        // Several files: the last is opened, the others go to the recent files.
        options = ui::LaunchOptions::parse({ "waferscope", "a.yaml", "b.yaml", "--num_csx", "2" }, &error);
        QVERIFY(error.isEmpty());
        QCOMPARE(options.file, QStringLiteral("b.yaml"));
        QCOMPARE(options.files, QStringList({ QStringLiteral("a.yaml"), QStringLiteral("b.yaml") }));
        QCOMPARE(options.given, QStringList({ QStringLiteral("num_csx") }));
        ui::LaunchOptions::parse({ "waferscope", "--overlay", "heat" }, &error);
        QVERIFY(error.contains(QStringLiteral("--overlay expects placement, activity, sram, traffic")));
        ui::LaunchOptions::parse({ "waferscope", "--frobnicate" }, &error);
        QVERIFY(!error.isEmpty());
    }
};

QTEST_MAIN(TestMainWindow)
#include "test_mainwindow.moc"
