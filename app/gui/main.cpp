// waferscope: the desktop explorer. `waferscope [FILE] [--system cs2] [--num_csx N]
// [--mode train|inference] [--step K] [--screenshot OUT.png]`; with --screenshot the window is rendered, saved and the
// app exits.
#include "ui/launchoptions.h"
#include "ui/mainwindow.h"
#include "ui/modelloadcontroller.h"
#include "ui/screenshot.h"

#include "core/hardware/builtinpresets.h"

#include "waferscope/version.h"

#include <QApplication>
#include <QTimer>

#include <cstdio>

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
    if (!window.selectSystem(options.system))
        return fail(2, QStringLiteral("error: unknown system '%1' (expected cs1, cs2 or cs3)").arg(options.system));
    if (const QString clusterError = window.setNumSystems(options.numCsx); !clusterError.isEmpty())
        return fail(2, QStringLiteral("error: ") + clusterError);
    window.setRunMode(options.mode == QLatin1String("inference") ? waferscope::core::RunMode::Inference
                                                                 : waferscope::core::RunMode::Train);
    if (!options.file.isEmpty())
        window.openFile(options.file);

    window.resize(1600, 1000);
    window.show();
    if (options.screenshot.isEmpty())
        return app.exec();

    // Save once the window shows its final state: the model file (if any) loaded and compiled,
    // or refused.
    int code = 0;
    auto save = [&] {
        const QString problem = waferscope::ui::saveScreenshot(&window, options.screenshot);
        if (!problem.isEmpty())
            code = fail(1, problem);
        app.quit();
    };
    if (options.file.isEmpty())
        QTimer::singleShot(0, &window, save);
    else
        QObject::connect(
            &window, &waferscope::ui::MainWindow::settled, &window, [&] { QTimer::singleShot(0, &window, save); });
    app.exec();
    return code;
}
