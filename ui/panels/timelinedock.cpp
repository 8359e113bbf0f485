#include "ui/panels/timelinedock.h"

#include "ui/panels/timelinepanel.h"

namespace waferscope::ui {

TimelineDock::TimelineDock(QWidget* parent)
    : QSplitter(Qt::Vertical, parent)
    , m_baseline(new TimelinePanel(this))
    , m_run(new TimelinePanel(this))
{
    m_baseline->setObjectName(QStringLiteral("baselineTimeline"));
    m_baseline->hide();
    addWidget(m_baseline);
    addWidget(m_run);
}

} // namespace waferscope::ui
