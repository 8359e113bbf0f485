#pragma once

#include "core/hardware/builtinpresets.h"

#include <QString>
#include <QStringList>

#include <optional>

namespace waferscope::ui {

// `waferscope [FILE] [--system cs3] [--num_csx N] [--mode train|inference] [--execution E]
// [--calibration NAME|FILE] [--overlay O] [--step K] [--run-token] [--dock D] [--screenshot OUT.png]`, parsed
// with QCommandLineParser. Parsing only checks the shape of values; whether a system exists is
// decided against the loaded presets by the caller.
struct LaunchOptions {
    QString file; // model params YAML to open (the last of `files`), empty for none
    QStringList files; // every FILE given: the others are listed in the recent files
    QString system = QString::fromUtf8(core::defaultPresetName()); // the same default as the CLI's
    int numCsx = 1;
    QString mode = QStringLiteral("train"); // what the model is compiled for: train or inference
    QString execution = QStringLiteral("auto"); // auto, pipelined or weight_streaming
    QString calibration; // software profile (name or file, as the CLI's --calibration); empty: the default
    QString overlay; // placement, activity, sram or traffic; empty: activity with --step, else placement
    std::optional<int> step; // frame index to run to before showing (or saving)
    bool runToken = false; // run a token on the fabric once compiled (and save when it has run)
    QString dock; // a bottom dock to bring to the front (dockNames()), empty for the default
    QString screenshot; // PNG path; when set the window is rendered, saved, and the app exits
    QStringList given; // the options set on the command line ("system", "num_csx", ...): they win over the session

    // Returns the options, or an error message (already including "--help" advice). `arguments`
    // starts with the program name, as QCoreApplication::arguments() does.
    static LaunchOptions parse(const QStringList& arguments, QString* error, bool* helpShown = nullptr);
};

// The tabbed bottom docks --dock can bring to the front: "messages", "timeline", "utilization",
// "scaling", "layers", "sensitivity", "cluster" (MainWindow::raiseDock).
QStringList dockNames();

} // namespace waferscope::ui
