// The GUI's figures, on the offscreen platform: rendering a full WSE-3 activity frame to a
// 1600 x 1000 image, and the longest the GUI thread is blocked while a model loads, compiles,
// runs (with its scaling sweep) and plays back.
#include "benchgui.h"

#include "ui/mainwindow.h"
#include "ui/stallwatch.h"
#include "ui/wafer/meshrenderer.h"
#include "ui/wafer/playbackcontroller.h"

#include "core/compiler/compiler.h"
#include "core/engine/framesource.h"
#include "core/hardware/builtinpresets.h"
#include "core/model/modelloader.h"

#include <QApplication>
#include <QEventLoop>
#include <QTemporaryDir>
#include <QTimer>

#include <chrono>
#include <memory>

namespace {

using Clock = std::chrono::steady_clock;

double heatmapRenderMs(bool quick, int rounds, bool* ok)
{
    namespace core = waferscope::core;
    namespace ui = waferscope::ui;
    const core::Expected<core::ModelGraph> graph = core::loadModel(WAFERSCOPE_SOURCE_DIR "/samples/gpt3_xl.yaml");
    const core::Expected<core::SystemSpec> cs3 = core::loadBuiltinPreset("cs3");
    if (!graph || !cs3)
        return *ok = false, 0.0;
    const core::Expected<core::ExecutionPlan> plan = core::compile(*graph, *cs3, core::CompileOptions {});
    if (!plan)
        return *ok = false, 0.0;
    const core::Expected<core::engine::RunResult> run
        = core::engine::run(*plan, *graph, *cs3, core::engine::RunOptions {});
    if (!run)
        return *ok = false, 0.0;
    const core::engine::FrameSource frames(*plan, *graph, *cs3, *run);
    const ui::FrameSnapshot snapshot = ui::makeSnapshot(frames, frames.frameCount() / 2);
    const core::WaferSpec& wafer = cs3->wafer;
    ui::MeshScene scene(wafer.fabricWidth, wafer.fabricHeight,
        QRect(wafer.usableX, wafer.usableY, wafer.usableWidth, wafer.usableHeight));
    scene.overlay = ui::MeshOverlay::Activity;
    scene.field = snapshot.activity;
    ui::WaferViewport viewport;
    viewport.setFabricSize(scene.extent().width(), scene.extent().height());
    viewport.setWidgetSize(QSizeF(1600, 1000));
    viewport.fit();
    double best = 1e300;
    const int iterations = quick ? 3 : 30;
    for (int round = 0; round < rounds; ++round) {
        const auto start = Clock::now();
        for (int i = 0; i < iterations; ++i)
            *ok = *ok && renderMesh(scene, viewport).width() == 1600;
        best = std::min(best, std::chrono::duration<double, std::milli>(Clock::now() - start).count() / iterations);
    }
    return best;
}

// Opens GPT-3 XL on 4 CS-2 (weight streaming) in a 1600 x 1000 window with the activity overlay,
// waits for the run and its sweep, then plays the frames at 60 steps/s for a while.
double maxStallMs(bool quick, bool* ok)
{
    namespace ui = waferscope::ui;
    waferscope::core::Expected<std::vector<waferscope::core::SystemSpec>> systems
        = waferscope::core::loadBuiltinPresets();
    if (!systems)
        return *ok = false, 0.0;
    ui::MainWindow window(std::move(systems).value());
    window.resize(1600, 1000);
    window.show();
    window.document()->selectSystem(QStringLiteral("cs2"));
    window.document()->setNumSystems(4);
    window.presenter()->setOverlay(ui::MeshOverlay::Activity);
    QEventLoop loop;
    QTimer::singleShot(300, &loop, &QEventLoop::quit); // the window's first layout and paint
    loop.exec();

    ui::StallWatch watch;
    QObject::connect(&window, &ui::MainWindow::settled, &loop, &QEventLoop::quit);
    QTimer::singleShot(60000, &loop, &QEventLoop::quit);
    window.openFile(QStringLiteral(WAFERSCOPE_SOURCE_DIR "/samples/gpt3_xl.yaml"));
    loop.exec();
    if (!window.document()->run())
        return *ok = false, 0.0;
    window.presenter()->playback()->setSpeed(60);
    window.presenter()->playback()->play();
    QTimer::singleShot(quick ? 500 : 3000, &loop, &QEventLoop::quit);
    loop.exec();
    *ok = *ok && window.presenter()->playback()->current() > 0;
    return watch.maxGapMs();
}

} // namespace

bool guiFigures(nlohmann::ordered_json& figures, bool quick, int rounds, int argc, char** argv)
{
    // The offscreen platform and a private runtime directory, unless the caller chose.
    if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM"))
        qputenv("QT_QPA_PLATFORM", "offscreen");
    QTemporaryDir runtime;
    if (qEnvironmentVariableIsEmpty("XDG_RUNTIME_DIR") && runtime.isValid()) {
        QFile::setPermissions(runtime.path(), QFileDevice::ReadOwner | QFileDevice::WriteOwner | QFileDevice::ExeOwner);
        qputenv("XDG_RUNTIME_DIR", runtime.path().toLocal8Bit());
    }
    qputenv("QT_LOGGING_RULES", "qt.qpa.*=false");
    QApplication app(argc, argv);
    bool ok = true;
    figures["heatmap_render_ms_full_wafer"] = heatmapRenderMs(quick, rounds, &ok);
    figures["gui_max_stall_ms_during_run"] = maxStallMs(quick, &ok);
    return ok;
}
