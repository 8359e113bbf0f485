#pragma once

#include <QByteArray>
#include <QString>
#include <QStringList>

class QSettings;

namespace waferscope::ui {

// What the window keeps between sessions (QSettings): the recent files, the run settings and
// the window's geometry and dock layout. Values of the wrong type or shape read as absent, so a
// damaged settings file never stops the window from opening.
struct SessionState {
    QStringList recentFiles; // newest first
    QString system; // preset key; empty: not saved
    int numCsx = 0; // 0: not saved
    QString mode; // train, inference
    QString execution; // auto, pipelined, weight_streaming
    QString overlay; // placement, activity, sram, traffic
    double speed = 0.0; // steps per second; 0: not saved
    int stepUnit = -1; // StepUnit; -1: not saved
    QByteArray geometry; // QMainWindow::saveGeometry()
    QByteArray windowState; // QMainWindow::saveState(kLayoutVersion)
};

inline constexpr int kLayoutVersion = 3; // bump when the docks change: older layouts are ignored
inline constexpr int kMaxRecentFiles = 10;

SessionState readSession(QSettings& settings);
void writeSession(QSettings& settings, const SessionState& state);
// `path` first (made absolute), without duplicates, at most kMaxRecentFiles.
QStringList withRecent(QStringList recent, const QString& path);

} // namespace waferscope::ui
