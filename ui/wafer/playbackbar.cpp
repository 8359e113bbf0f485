#include "ui/wafer/playbackbar.h"

#include "ui/wafer/playbackcontroller.h"

#include <QAction>
#include <QComboBox>
#include <QLabel>
#include <QMainWindow>
#include <QStyle>

namespace waferscope::ui {

PlaybackBar::PlaybackBar(PlaybackController* playback, QMainWindow* window)
    : QToolBar(tr("Playback"), window)
    , m_playback(playback)
    , m_stepUnitBox(new QComboBox(this))
    , m_speedBox(new QComboBox(this))
    , m_stepLabel(new QLabel(tr("no run yet"), this))
{
    setObjectName(QStringLiteral("playbackToolBar"));
    setMovable(false);
    addAction(style()->standardIcon(QStyle::SP_MediaSkipBackward), tr("Reset"), QKeySequence(Qt::Key_Home), m_playback,
        &PlaybackController::reset)
        ->setToolTip(tr("Back to the first step (Home)"));
    addAction(style()->standardIcon(QStyle::SP_MediaSeekBackward), tr("Step back"), QKeySequence(Qt::Key_Comma), this,
        [this] { m_playback->step(stepUnit(), -1); })
        ->setToolTip(tr("One step back by the unit chosen (,); one layer phase: Ctrl+,"));
    m_playAction = addAction(style()->standardIcon(QStyle::SP_MediaPlay), tr("Run"), QKeySequence(Qt::Key_Space), this,
        [this] { m_playback->isPlaying() ? m_playback->pause() : m_playback->play(); });
    m_playAction->setToolTip(tr("Play the run step by step at the speed chosen, or pause it (Space)"));
    addAction(style()->standardIcon(QStyle::SP_MediaSeekForward), tr("Step forward"), QKeySequence(Qt::Key_Period),
        this, [this] { m_playback->step(stepUnit(), +1); })
        ->setToolTip(tr("One step forward by the unit chosen (.); one layer phase: Ctrl+."));
    const auto shortcut = [this, window](QKeySequence keys, core::engine::StepUnit unit, int direction) {
        auto* action = new QAction(window);
        action->setShortcut(keys);
        connect(action, &QAction::triggered, this, [this, unit, direction] { m_playback->step(unit, direction); });
        window->addAction(action);
    };
    shortcut(QKeySequence(Qt::CTRL | Qt::Key_Comma), core::engine::StepUnit::Phase, -1);
    shortcut(QKeySequence(Qt::CTRL | Qt::Key_Period), core::engine::StepUnit::Phase, +1);
    shortcut(QKeySequence(Qt::Key_BracketLeft), core::engine::StepUnit::Layer, -1);
    shortcut(QKeySequence(Qt::Key_BracketRight), core::engine::StepUnit::Layer, +1);
    shortcut(QKeySequence(Qt::Key_BraceLeft), core::engine::StepUnit::Iteration, -1);
    shortcut(QKeySequence(Qt::Key_BraceRight), core::engine::StepUnit::Iteration, +1);
    addWidget(new QLabel(tr(" by "), this));
    m_stepUnitBox->addItem(tr("layer phase"), int(core::engine::StepUnit::Phase));
    m_stepUnitBox->addItem(tr("layer"), int(core::engine::StepUnit::Layer));
    m_stepUnitBox->addItem(tr("iteration"), int(core::engine::StepUnit::Iteration));
    m_stepUnitBox->setToolTip(tr("How far Step goes: one layer phase (a frame), one layer ([ ]), one iteration ({ })"));
    addWidget(m_stepUnitBox);
    addWidget(new QLabel(tr("  speed "), this));
    for (int perSecond : { 1, 2, 5, 10, 30, 60 })
        m_speedBox->addItem(tr("%1 steps/s").arg(perSecond), perSecond);
    m_speedBox->setCurrentIndex(m_speedBox->findData(int(m_playback->speed())));
    connect(m_speedBox, &QComboBox::currentIndexChanged, this,
        [this](int) { m_playback->setSpeed(m_speedBox->currentData().toDouble()); });
    addWidget(m_speedBox);
    addSeparator();
    addWidget(m_stepLabel);
    connect(m_playback, &PlaybackController::playingChanged, this, [this](bool playing) {
        m_playAction->setIcon(style()->standardIcon(playing ? QStyle::SP_MediaPause : QStyle::SP_MediaPlay));
        m_playAction->setText(playing ? tr("Pause") : tr("Run"));
    });
}

core::engine::StepUnit PlaybackBar::stepUnit() const
{
    return core::engine::StepUnit(m_stepUnitBox->currentData().toInt());
}

void PlaybackBar::setStepUnit(core::engine::StepUnit unit)
{
    if (const int index = m_stepUnitBox->findData(int(unit)); index >= 0)
        m_stepUnitBox->setCurrentIndex(index);
}

void PlaybackBar::setSpeed(double stepsPerSecond)
{
    m_playback->setSpeed(stepsPerSecond);
    if (const int index = m_speedBox->findData(int(stepsPerSecond)); index >= 0)
        m_speedBox->setCurrentIndex(index);
}

void PlaybackBar::setStepText(const QString& text)
{
    m_stepLabel->setText(text);
}

} // namespace waferscope::ui
