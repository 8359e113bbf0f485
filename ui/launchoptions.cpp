#include "ui/launchoptions.h"

#include "ui/models/optionnames.h"

#include "core/hardware/builtinpresets.h"

#include <QCommandLineParser>
#include <QCoreApplication>

namespace waferscope::ui {

QStringList dockNames()
{
    return { QStringLiteral("messages"), QStringLiteral("timeline"), QStringLiteral("utilization"),
        QStringLiteral("scaling"), QStringLiteral("layers"), QStringLiteral("sensitivity"), QStringLiteral("cluster") };
}

LaunchOptions LaunchOptions::parse(const QStringList& arguments, QString* error, bool* helpShown)
{
    QCommandLineParser parser;
    parser.setApplicationDescription(
        QStringLiteral("WaferScope: explore and simulate Cerebras-style wafer-scale systems."));
    const QCommandLineOption helpOption = parser.addHelpOption();
    const QCommandLineOption versionOption = parser.addVersionOption();
    const QCommandLineOption systemOption(QStringLiteral("system"),
        QStringLiteral("System generation: %1 (default %2).")
            .arg(QString::fromStdString(core::builtinPresetChoices()), QString::fromUtf8(core::defaultPresetName())),
        "name");
    const QCommandLineOption numCsxOption(
        QStringLiteral("num_csx"), QStringLiteral("Number of CS-X systems in the cluster (default 1)."), "N");
    const QCommandLineOption stepOption(
        QStringLiteral("step"), QStringLiteral("Run to frame K before showing or saving the window."), "K");
    const QCommandLineOption runTokenOption(QStringLiteral("run-token"),
        QStringLiteral("Once the model is compiled, run a token of it on the cycle-level fabric (Run > Run token on "
                       "fabric); with --screenshot, save when it has run."));
    const QCommandLineOption screenshotOption(QStringLiteral("screenshot"),
        QStringLiteral("Render the window, save it as a PNG and exit (works offscreen)."), "OUT.png");
    const QCommandLineOption modeOption(QStringLiteral("mode"),
        QStringLiteral("Compile the model for training or inference: train or inference (default train)."), "mode");
    const QCommandLineOption executionOption(QStringLiteral("execution"),
        QStringLiteral("Training execution: auto, pipelined or weight_streaming (default auto)."), "E");
    const QCommandLineOption calibrationOption(QStringLiteral("calibration"),
        QStringLiteral("The engine's software profile: a built-in one's name (default 2024-08-launch) or a "
                       "calibration file, FILE#PROFILE for one of its profiles (Run > Software profile)."),
        "NAME|FILE");
    const QCommandLineOption overlayOption(QStringLiteral("overlay"),
        QStringLiteral("Wafer view: placement, activity, sram or traffic (default placement; activity with --step)."),
        "O");
    const QCommandLineOption dockOption(QStringLiteral("dock"),
        QStringLiteral("Bring a bottom dock to the front: %1 (default timeline).")
            .arg(dockNames().join(QStringLiteral(", "))),
        "D");
    parser.addOptions({ systemOption, numCsxOption, modeOption, executionOption, calibrationOption, overlayOption,
        stepOption, runTokenOption, dockOption, screenshotOption });
    parser.addPositionalArgument(QStringLiteral("FILE"),
        QStringLiteral("Model Zoo params YAMLs: the last is opened, the others go to the recent files."), "[FILE...]");

    LaunchOptions options;
    if (!parser.parse(arguments)) {
        *error = parser.errorText() + QStringLiteral(" (see --help)");
        return options;
    }
    if (parser.isSet(helpOption) || parser.isSet(versionOption)) {
        if (helpShown)
            *helpShown = true;
        *error = parser.isSet(helpOption) ? parser.helpText()
                                          : QCoreApplication::applicationName() + QLatin1Char(' ')
                + QCoreApplication::applicationVersion() + QLatin1Char('\n');
        return options;
    }
    const QStringList positional = parser.positionalArguments();
    options.files = positional;
    if (!positional.isEmpty())
        options.file = positional.back();
    if (parser.isSet(systemOption))
        options.system = parser.value(systemOption);
    if (parser.isSet(numCsxOption)) {
        bool ok = false;
        options.numCsx = parser.value(numCsxOption).toInt(&ok);
        if (!ok || options.numCsx < 1) {
            *error = QStringLiteral("--num_csx expects a positive integer, got '%1'").arg(parser.value(numCsxOption));
            return options;
        }
    }
    if (parser.isSet(modeOption)) {
        options.mode = parser.value(modeOption);
        if (!runModeFromName(options.mode)) {
            *error = QStringLiteral("--mode expects train or inference, got '%1'").arg(options.mode);
            return options;
        }
    }
    const auto oneOf = [&](const QCommandLineOption& option, QStringList allowed, QString* out) {
        if (!parser.isSet(option))
            return true;
        *out = parser.value(option);
        if (allowed.contains(*out))
            return true;
        *error = QStringLiteral("--%1 expects %2, got '%3'")
                     .arg(option.names().front(), allowed.join(QStringLiteral(", ")), *out);
        return false;
    };
    if (!oneOf(executionOption, executionNames(), &options.execution)
        || !oneOf(overlayOption, overlayNames(), &options.overlay) || !oneOf(dockOption, dockNames(), &options.dock))
        return options;
    if (parser.isSet(stepOption)) {
        bool ok = false;
        const int step = parser.value(stepOption).toInt(&ok);
        if (!ok || step < 0) {
            *error = QStringLiteral("--step expects a non-negative integer, got '%1'").arg(parser.value(stepOption));
            return options;
        }
        options.step = step;
    }
    if (parser.isSet(calibrationOption))
        options.calibration = parser.value(calibrationOption);
    options.runToken = parser.isSet(runTokenOption);
    if (parser.isSet(screenshotOption))
        options.screenshot = parser.value(screenshotOption);
    for (const QCommandLineOption* option : { &systemOption, &numCsxOption, &modeOption, &executionOption,
             &calibrationOption, &overlayOption, &stepOption, &dockOption, &screenshotOption })
        if (parser.isSet(*option))
            options.given << option->names().front();
    error->clear();
    return options;
}

} // namespace waferscope::ui
