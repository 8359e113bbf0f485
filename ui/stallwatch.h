#pragma once

#include <QElapsedTimer>
#include <QObject>
#include <QTimer>

namespace waferscope::ui {

// Watches the GUI thread: a precise timer ticking every few milliseconds notes the longest gap
// between two ticks, which is the longest the event loop was blocked while it ran. Used by the
// GUI tests and by waferscope-bench (gui_max_stall_ms_during_run).
class StallWatch : public QObject {
public:
    explicit StallWatch(int intervalMs = 5, QObject* parent = nullptr);
    double maxGapMs() const { return m_maxGapMs; }
    void restart(); // forget what was seen so far

private:
    QTimer m_timer;
    QElapsedTimer m_clock;
    double m_maxGapMs = 0.0;
};

} // namespace waferscope::ui
