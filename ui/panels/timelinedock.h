#pragma once

#include <QSplitter>

namespace waferscope::ui {

class TimelinePanel;

// The "Timeline" dock: the run's timeline, with the baseline's above it while there is one
// (Compare menu). GUI thread.
class TimelineDock : public QSplitter {
    Q_OBJECT
public:
    explicit TimelineDock(QWidget* parent = nullptr);

    TimelinePanel* run() const { return m_run; }
    TimelinePanel* baseline() const { return m_baseline; }

private:
    TimelinePanel* m_baseline; // hidden without a baseline
    TimelinePanel* m_run;
};

} // namespace waferscope::ui
