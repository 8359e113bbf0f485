// waferscope: the desktop explorer. `waferscope [FILE] [--system cs2] [--num_csx N]
// [--mode train|inference] [--execution E] [--calibration NAME|FILE] [--overlay O] [--step K] [--run-token]
// [--dock D] [--screenshot OUT.png]`; with --step the run is stepped to frame K once it has run; with
// --run-token a token runs on the fabric once compiled (and --step picks a frame of it); with
// --screenshot the window is rendered, saved and the app exits.
#include "ui/document.h"
#include "ui/launchoptions.h"
#include "ui/mainwindow.h"
#include "ui/optionnames.h"
#include "ui/playbackcontroller.h"
#include "ui/screenshot.h"
#include "ui/sensitivitypanel.h"

#include "core/hardware/builtinpresets.h"

#include "waferscope/version.h"

#include <QApplication>
#include <QSettings>
#include <QTimer>

#include <algorithm>
#include <cstdio>
#include <functional>

namespace {

int fail(int code, const QString& message)
{
    std::fprintf(stderr, "waferscope: %s\n", qPrintable(message));
    return code;
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

    waferscope::ui::MainWindow window(std::move(systems).value());
    // The last session's settings and layout, unless rendering a screenshot (which must not
    // depend on who ran the app before); options given on the command line win over them.
    const bool interactive = options.screenshot.isEmpty();
    QSettings settings;
    if (interactive) {
        window.resize(1600, 1000);
        window.restoreSession(settings);
        QObject::connect(&app, &QApplication::aboutToQuit, &window, [&] { window.saveSession(settings); });
    }
    const auto given = [&](const char* name) { return !interactive || options.given.contains(QLatin1String(name)); };
    if (given("system") && !window.selectSystem(options.system))
        return fail(2,
            QStringLiteral("error: unknown system '%1' (expected %2)")
                .arg(options.system, QString::fromStdString(waferscope::core::builtinPresetChoices())));
    if (given("num_csx"))
        if (const QString clusterError = window.setNumSystems(options.numCsx); !clusterError.isEmpty())
            return fail(2, QStringLiteral("error: ") + clusterError);
    // The names were checked by LaunchOptions::parse.
    if (given("mode"))
        window.setRunMode(waferscope::ui::runModeFromName(options.mode).value());
    if (given("execution"))
        window.setExecution(waferscope::ui::executionFromName(options.execution).value());
    if (!options.calibration.isEmpty())
        if (const QString calibrationError = window.document()->setCalibration(options.calibration);
            !calibrationError.isEmpty())
            return fail(2, QStringLiteral("error: ") + calibrationError);
    // --step shows the run's activity unless another overlay is asked for.
    const QString overlay = !options.overlay.isEmpty() ? options.overlay
        : options.step                                 ? QStringLiteral("activity")
                                                       : QStringLiteral("placement");
    if (given("overlay") || options.step)
        window.setOverlay(waferscope::ui::overlayFromName(overlay).value());
    // --step K: once the run is on screen, step to frame K (clamped to the run's frames).
    bool stepped = !options.step.has_value() || options.runToken; // --run-token steps through the token
    std::function<void()> save; // set below when the window is saved
    QObject::connect(&window, &waferscope::ui::MainWindow::settled, &window, [&] {
        if (stepped)
            return;
        stepped = true;
        if (!window.run() || window.playback()->frameCount() == 0) {
            std::fprintf(stderr, "waferscope: --step %d: there is no run to step through\n", *options.step);
            if (save)
                QTimer::singleShot(0, &window, save);
            return;
        }
        const std::size_t last = window.playback()->frameCount() - 1;
        if (std::size_t(*options.step) > last)
            std::fprintf(
                stderr, "waferscope: --step %d is past the run's last frame; showing frame %zu\n", *options.step, last);
        window.playback()->seek(std::min(std::size_t(*options.step), last));
    });
    // --run-token: once the model is compiled, a token of it on the fabric.
    bool tokenAsked = false;
    bool tokenDone = !options.runToken;
    std::function<void()> saveWhenTokenShown = [] {};
    if (options.runToken) {
        QObject::connect(&window, &waferscope::ui::MainWindow::settled, &window, [&] {
            if (tokenAsked)
                return;
            tokenAsked = true;
            const QString why = window.document()->tokenUnavailableReason();
            if (!why.isEmpty()) {
                std::fprintf(stderr, "waferscope: --run-token: %s\n", qPrintable(why));
                tokenDone = true;
                if (save)
                    QTimer::singleShot(0, &window, save);
                return;
            }
            window.document()->runTokenOnFabric();
        });
        // Saved once the run ended and its last frame is on screen.
        saveWhenTokenShown = [&] {
            waferscope::ui::PlaybackController* playback = window.playback();
            const bool last = playback->frameCount() == 0 || options.step
                || (playback->shown() && playback->shown()->index + 1 >= playback->frameCount());
            const bool asked = !options.step || !playback->shown() || playback->shown()->index == playback->current();
            if (tokenDone && save && last && asked)
                QTimer::singleShot(0, &window, save);
        };
        QObject::connect(window.document(), &waferscope::ui::Document::tokenFinished, &window, [&] {
            tokenDone = true;
            // With --step K, frame K of the token (clamped) rather than its last.
            if (options.step && window.playback()->frameCount() > 0)
                window.playback()->seek(std::min(std::size_t(*options.step), window.playback()->frameCount() - 1));
            saveWhenTokenShown();
        });
        QObject::connect(&window, &waferscope::ui::MainWindow::stepShown, &window, [&] { saveWhenTokenShown(); });
    }
    if (!options.dock.isEmpty())
        window.raiseDock(options.dock); // the name was checked by LaunchOptions::parse
    window.openFiles(options.files);

    if (!interactive)
        window.resize(1600, 1000);
    window.show();
    if (options.screenshot.isEmpty())
        return app.exec();

    // Save once the window shows its final state: the model file (if any) loaded and compiled,
    // or refused.
    int code = 0;
    save = [&] {
        const QString problem = waferscope::ui::saveScreenshot(&window, options.screenshot);
        if (!problem.isEmpty())
            code = fail(1, problem);
        app.quit();
    };
    // With --step, the window is final once the frame asked for is on screen.
    if (options.file.isEmpty())
        QTimer::singleShot(0, &window, save);
    else if (options.runToken) {
        // saveWhenTokenShown saves it
    } else if (options.step)
        QObject::connect(&window, &waferscope::ui::MainWindow::stepShown, &window, [&](std::size_t index) {
            if (index == window.playback()->current())
                QTimer::singleShot(0, &window, save);
        });
    else {
        // Settled, and the "What this result depends on" sweep of the run (if any) is shown.
        bool settled = false;
        bool saved = false;
        const auto saveWhenFinal = [&] {
            if (!settled || saved || window.sensitivityPanel()->isComputing())
                return;
            saved = true;
            QTimer::singleShot(0, &window, save);
        };
        QObject::connect(&window, &waferscope::ui::MainWindow::settled, &window, [&] {
            settled = true;
            saveWhenFinal();
        });
        QObject::connect(
            window.sensitivityPanel(), &waferscope::ui::SensitivityPanel::computed, &window, saveWhenFinal);
        app.exec();
        return code;
    }
    app.exec();
    return code;
}
