#include "ui/stallwatch.h"

#include <algorithm>

namespace waferscope::ui {

StallWatch::StallWatch(int intervalMs, QObject* parent)
    : QObject(parent)
{
    m_timer.setInterval(intervalMs);
    m_timer.setTimerType(Qt::PreciseTimer);
    connect(&m_timer, &QTimer::timeout, this, [this] {
        m_maxGapMs = std::max(m_maxGapMs, double(m_clock.nsecsElapsed()) / 1e6);
        m_clock.restart();
    });
    restart();
    m_timer.start();
}

void StallWatch::restart()
{
    m_maxGapMs = 0.0;
    m_clock.restart();
}

} // namespace waferscope::ui
