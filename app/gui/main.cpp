// No header of its own: the GUI executable's main().
// waferscope: the desktop explorer. `waferscope [FILE] [--system cs3] [--num_csx N]
// [--mode train|inference] [--execution E] [--calibration NAME|FILE] [--overlay O] [--step K] [--run-token]
// [--dock D] [--screenshot OUT.png]`; with --step the run is stepped to frame K once it has run; with
// --run-token a token runs on the fabric once compiled (and --step picks a frame of it); with
// --screenshot the window is rendered, saved and the app exits.
#include "ui/launchoptions.h"
#include "ui/mainwindow.h"
#include "ui/models/document.h"
#include "ui/models/fabricruns.h"
#include "ui/models/optionnames.h"
#include "ui/models/sensitivitymodel.h"
#include "ui/screenshot.h"
#include "ui/wafer/playbackcontroller.h"

#include "core/hardware/builtinpresets.h"

#include "waferscope/version.h"

#include <QApplication>
#include <QSettings>
#include <QTimer>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <memory>
#include <optional>

namespace {

using waferscope::ui::MainWindow;

int fail(int code, const QString& message)
{
    std::fprintf(stderr, "waferscope: %s\n", qPrintable(message));
    return code;
}

// What main() and the handlers below share while the window runs: the options, and how the
// window is saved (--screenshot) once it shows its final state.
struct Launch {
    Launch(QApplication& application, MainWindow& mainWindow, const waferscope::ui::LaunchOptions& launchOptions)
        : app(application)
        , window(mainWindow)
        , options(launchOptions)
    {
    }
    QApplication& app;
    MainWindow& window;
    const waferscope::ui::LaunchOptions& options;
    std::function<void()> save; // set when the window is to be saved
    int code = 0;
    bool stepped = false; // --step applied (or not asked for)
    bool tokenAsked = false;
    bool tokenDone = false;
    std::function<void()> saveWhenTokenShown = [] {};
};

// The run settings given on the command line (all of them for a screenshot, which must not
// depend on the last session) as one transaction, and the software profile. Returns the exit
// code of a bad value (with its message printed), or 0.
int applyLaunchSettings(MainWindow& window, const waferscope::ui::LaunchOptions& options, bool interactive)
{
    waferscope::ui::Document* document = window.document();
    const auto given = [&](const char* name) { return !interactive || options.given.contains(QLatin1String(name)); };
    waferscope::ui::Settings settings = document->settings();
    if (given("system")) {
        const std::optional<std::size_t> index = document->systemIndexOf(options.system);
        if (!index)
            return fail(2,
                QStringLiteral("error: unknown system '%1' (expected %2)")
                    .arg(options.system, QString::fromStdString(waferscope::core::builtinPresetChoices())));
        settings = document->withSystem(*index);
    }
    if (given("num_csx"))
        settings.numSystems = options.numCsx;
    // The names were checked by LaunchOptions::parse.
    if (given("mode"))
        settings.mode = waferscope::ui::runModeFromName(options.mode).value();
    if (given("execution"))
        settings.execution = waferscope::ui::executionFromName(options.execution).value();
    if (const QString clusterError = document->applySettings(settings); !clusterError.isEmpty())
        return fail(2, QStringLiteral("error: ") + clusterError);
    if (!options.calibration.isEmpty())
        if (const QString calibrationError = document->setCalibration(options.calibration); !calibrationError.isEmpty())
            return fail(2, QStringLiteral("error: ") + calibrationError);
    // --step shows the run's activity unless another overlay is asked for.
    const QString overlay = !options.overlay.isEmpty() ? options.overlay
        : options.step                                 ? QStringLiteral("activity")
                                                       : QStringLiteral("placement");
    if (given("overlay") || options.step)
        window.presenter()->setOverlay(waferscope::ui::overlayFromName(overlay).value());
    return 0;
}

// --step K: once the run is on screen, step to frame K (clamped to the run's frames).
void connectStep(Launch& launch)
{
    launch.stepped = !launch.options.step.has_value() || launch.options.runToken; // --run-token steps the token
    QObject::connect(&launch.window, &MainWindow::settled, &launch.window, [&launch] {
        if (launch.stepped)
            return;
        launch.stepped = true;
        waferscope::ui::PlaybackController* playback = launch.window.presenter()->playback();
        const int step = *launch.options.step;
        if (!launch.window.document()->run() || playback->frameCount() == 0) {
            std::fprintf(stderr, "waferscope: --step %d: there is no run to step through\n", step);
            if (launch.save)
                QTimer::singleShot(0, &launch.window, launch.save);
            return;
        }
        const std::size_t last = playback->frameCount() - 1;
        if (std::size_t(step) > last)
            std::fprintf(stderr, "waferscope: --step %d is past the run's last frame; showing frame %zu\n", step, last);
        playback->seek(std::min(std::size_t(step), last));
    });
}

// --run-token: once the model is compiled, a token of it on the fabric; saved once the run ended
// and its last frame (or frame K of --step) is on screen.
void connectRunToken(Launch& launch)
{
    launch.tokenDone = !launch.options.runToken;
    if (!launch.options.runToken)
        return;
    MainWindow& window = launch.window;
    waferscope::ui::FabricRuns* fabric = window.document()->fabric();
    waferscope::ui::PlaybackController* playback = window.presenter()->playback();
    QObject::connect(&window, &MainWindow::settled, &window, [&launch, fabric] {
        if (launch.tokenAsked)
            return;
        launch.tokenAsked = true;
        const QString why = fabric->tokenUnavailableReason();
        if (!why.isEmpty()) {
            std::fprintf(stderr, "waferscope: --run-token: %s\n", qPrintable(why));
            launch.tokenDone = true;
            if (launch.save)
                QTimer::singleShot(0, &launch.window, launch.save);
            return;
        }
        fabric->runToken();
    });
    launch.saveWhenTokenShown = [&launch, playback] {
        const bool last = playback->frameCount() == 0 || launch.options.step
            || (playback->shown() && playback->shown()->index + 1 >= playback->frameCount());
        const bool asked
            = !launch.options.step || !playback->shown() || playback->shown()->index == playback->current();
        // The result can arrive just after the recording finished, before the playback's pull tick
        // has seen it and stopped following: the final state is once it has.
        const bool settled = !playback->isFollowing();
        if (launch.tokenDone && launch.save && last && asked && settled)
            QTimer::singleShot(0, &launch.window, launch.save);
    };
    QObject::connect(fabric, &waferscope::ui::FabricRuns::tokenFinished, &window, [&launch, playback] {
        launch.tokenDone = true;
        // With --step K, frame K of the token (clamped) rather than its last.
        if (launch.options.step && playback->frameCount() > 0)
            playback->seek(std::min(std::size_t(*launch.options.step), playback->frameCount() - 1));
        launch.saveWhenTokenShown();
    });
    QObject::connect(&window, &MainWindow::stepShown, &window, [&launch] { launch.saveWhenTokenShown(); });
    // Queued: a seek that stops following (--step) says so before it moves to its frame.
    QObject::connect(
        playback, &waferscope::ui::PlaybackController::playingChanged, &window,
        [&launch] { launch.saveWhenTokenShown(); }, Qt::QueuedConnection);
}

// --screenshot: saves the window once it shows its final state (the model file, if any, loaded
// and compiled, or refused; with --step, the frame asked for; otherwise the run's sweep shown)
// and quits. Returns the exit code.
int runScreenshot(Launch& launch)
{
    MainWindow& window = launch.window;
    launch.save = [&launch] {
        const QString problem = waferscope::ui::saveScreenshot(&launch.window, launch.options.screenshot);
        if (!problem.isEmpty())
            launch.code = fail(1, problem);
        launch.app.quit();
    };
    if (launch.options.file.isEmpty()) {
        QTimer::singleShot(0, &window, launch.save);
    } else if (launch.options.runToken) {
        // saveWhenTokenShown saves it
    } else if (launch.options.step) {
        QObject::connect(&window, &MainWindow::stepShown, &window, [&launch](std::size_t index) {
            if (index == launch.window.presenter()->playback()->current())
                QTimer::singleShot(0, &launch.window, launch.save);
        });
    } else {
        // Settled, and the "What this result depends on" sweep of the run (if any) is shown.
        auto settled = std::make_shared<bool>(false);
        auto saved = std::make_shared<bool>(false);
        const auto saveWhenFinal = [&launch, settled, saved] {
            if (!*settled || *saved || launch.window.sensitivity()->isComputing())
                return;
            *saved = true;
            QTimer::singleShot(0, &launch.window, launch.save);
        };
        QObject::connect(&window, &MainWindow::settled, &window, [settled, saveWhenFinal] {
            *settled = true;
            saveWhenFinal();
        });
        QObject::connect(window.sensitivity(), &waferscope::ui::SensitivityModel::computed, &window, saveWhenFinal);
    }
    launch.app.exec();
    return launch.code;
}

} // namespace

int main(int argc, char** argv)
{
    QApplication app(argc, argv);
    QApplication::setApplicationName(QStringLiteral("WaferScope"));
    QApplication::setOrganizationName(QStringLiteral("WaferScope"));
    QApplication::setApplicationVersion(QString::fromLatin1(waferscope::core::kVersion));
    // Matches the installed .desktop file, so Wayland shells show its name and icon (the window
    // icon itself comes from the resource file, set by MainWindow).
    QApplication::setDesktopFileName(QStringLiteral("io.github.waferscope.WaferScope"));

    QString error;
    bool helpShown = false;
    const waferscope::ui::LaunchOptions options
        = waferscope::ui::LaunchOptions::parse(app.arguments(), &error, &helpShown);
    if (helpShown) {
        std::fputs(qPrintable(error), stdout);
        return 0;
    }
    if (!error.isEmpty())
        return fail(2, QStringLiteral("error: ") + error);

    waferscope::core::Expected<std::vector<waferscope::core::SystemSpec>> systems
        = waferscope::core::loadBuiltinPresets();
    if (!systems)
        return fail(1, QString::fromStdString(systems.error().format()));

    MainWindow window(std::move(systems).value());
    // The last session's settings and layout, unless rendering a screenshot (which must not
    // depend on who ran the app before); options given on the command line win over them.
    const bool interactive = options.screenshot.isEmpty();
    QSettings settings;
    if (interactive) {
        window.resize(1600, 1000);
        window.restoreSession(settings);
        QObject::connect(&app, &QApplication::aboutToQuit, &window, [&] { window.saveSession(settings); });
    }
    if (const int code = applyLaunchSettings(window, options, interactive); code != 0)
        return code;
    Launch launch(app, window, options);
    connectStep(launch);
    connectRunToken(launch);
    if (!options.dock.isEmpty())
        window.raiseDock(options.dock); // the name was checked by LaunchOptions::parse
    window.openFiles(options.files);

    if (!interactive)
        window.resize(1600, 1000);
    window.show();
    if (options.screenshot.isEmpty())
        return app.exec();
    return runScreenshot(launch);
}
