#pragma once

#include "core/engine/framesource.h"

#include <QToolBar>

class QAction;
class QComboBox;
class QLabel;
class QMainWindow;

namespace waferscope::ui {

class PlaybackController;

// The "Playback" toolbar over a PlaybackController: reset, step back and forward by the unit
// chosen, play and pause, the speed, and the step on screen. Its fixed-unit shortcuts (Ctrl+, .
// for a phase, [ ] for a layer, { } for an iteration) go on the window. GUI thread.
class PlaybackBar : public QToolBar {
    Q_OBJECT
public:
    PlaybackBar(PlaybackController* playback, QMainWindow* window);

    core::engine::StepUnit stepUnit() const;
    void setStepUnit(core::engine::StepUnit unit);
    void setSpeed(double stepsPerSecond); // the box and the player; a speed not offered is ignored
    void setStepText(const QString& text);

private:
    PlaybackController* m_playback;
    QComboBox* m_stepUnitBox;
    QComboBox* m_speedBox;
    QLabel* m_stepLabel;
    QAction* m_playAction;
};

} // namespace waferscope::ui
