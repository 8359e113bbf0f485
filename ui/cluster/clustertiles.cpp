#include "ui/cluster/clustertiles.h"

#include <QHelpEvent>
#include <QPainter>
#include <QToolTip>

#include <algorithm>
#include <cmath>

namespace waferscope::ui {

namespace {

constexpr QRgb kJobColours[] = { 0x2b6cb0, 0xdd6b20, 0x38a169, 0x805ad5, 0xc53030, 0x319795, 0xd69e2e, 0xd53f8c,
    0x4a5568, 0x2c7a7b, 0x9c4221, 0x553c9a };

} // namespace

QColor clusterJobColour(std::size_t index)
{
    return QColor(kJobColours[index % std::size(kJobColours)]);
}

ClusterTiles::ClusterTiles(QWidget* parent)
    : QWidget(parent)
{
    setMinimumSize(160, 120);
}

void ClusterTiles::setSchedule(std::shared_ptr<const core::cluster::ClusterResult> result)
{
    m_result = std::move(result);
    rebuildHolders();
}

void ClusterTiles::setTime(double seconds)
{
    m_time = seconds;
    rebuildHolders();
}

int ClusterTiles::jobAt(int system) const
{
    return system >= 0 && std::size_t(system) < m_holder.size() ? m_holder[std::size_t(system)] : -1;
}

void ClusterTiles::rebuildHolders()
{
    m_holder.assign(m_result ? std::size_t(m_result->systems) : 0, -1);
    if (m_result)
        for (std::size_t j = 0; j < m_result->jobs.size(); ++j) {
            const core::cluster::JobResult& job = m_result->jobs[j];
            if (job.startS && *job.startS <= m_time && m_time < *job.endS)
                for (int s : job.systems)
                    if (s >= 0 && std::size_t(s) < m_holder.size())
                        m_holder[std::size_t(s)] = int(j);
        }
    update();
}

QSize ClusterTiles::gridFor(int systems, QSizeF area)
{
    if (systems <= 0)
        return { 0, 0 };
    const double aspect = area.height() > 0.0 ? area.width() / area.height() : 1.0;
    int columns = std::max(1, int(std::ceil(std::sqrt(double(systems) * std::max(aspect, 0.05)))));
    columns = std::min(columns, systems);
    return { columns, (systems + columns - 1) / columns };
}

QRectF ClusterTiles::tileRect(int system, QSize grid) const
{
    const QRectF area = QRectF(rect()).adjusted(4, 4, -4, -4);
    const double side = std::min(area.width() / grid.width(), area.height() / grid.height());
    const QPointF origin = area.topLeft()
        + QPointF((area.width() - side * grid.width()) / 2.0, (area.height() - side * grid.height()) / 2.0);
    const int row = system / grid.width();
    const int column = system % grid.width();
    const double gap = side > 8.0 ? 1.5 : 0.5;
    return { origin.x() + column * side + gap / 2, origin.y() + row * side + gap / 2, side - gap, side - gap };
}

int ClusterTiles::systemAt(QPointF position) const
{
    if (!m_result)
        return -1;
    const QSize grid = gridFor(m_result->systems, QRectF(rect()).adjusted(4, 4, -4, -4).size());
    for (int s = 0; s < m_result->systems; ++s)
        if (tileRect(s, grid).contains(position))
            return s;
    return -1;
}

void ClusterTiles::paintEvent(QPaintEvent*)
{
    QPainter painter(this);
    painter.fillRect(rect(), palette().base());
    if (!m_result || m_result->systems <= 0)
        return;
    const QSize grid = gridFor(m_result->systems, QRectF(rect()).adjusted(4, 4, -4, -4).size());
    const QColor idle(0xe2, 0xe8, 0xf0);
    QFont font = painter.font();
    for (int s = 0; s < m_result->systems; ++s) {
        const QRectF tile = tileRect(s, grid);
        const int job = jobAt(s);
        painter.fillRect(tile, job >= 0 ? clusterJobColour(std::size_t(job)) : idle);
        if (tile.width() >= 22.0) {
            font.setPixelSize(std::clamp(int(tile.height() / 3.2), 7, 12));
            painter.setFont(font);
            painter.setPen(job >= 0 ? Qt::white : QColor(0x4a, 0x55, 0x68));
            painter.drawText(tile, Qt::AlignCenter, QString::number(s));
        }
    }
}

bool ClusterTiles::event(QEvent* event)
{
    if (event->type() == QEvent::ToolTip && m_result) {
        auto* help = static_cast<QHelpEvent*>(event);
        const int system = systemAt(help->pos());
        if (system >= 0) {
            const int job = jobAt(system);
            QToolTip::showText(help->globalPos(),
                job >= 0
                    ? tr("system %1: %2").arg(system).arg(QString::fromStdString(m_result->jobs[std::size_t(job)].name))
                    : tr("system %1: idle").arg(system),
                this);
        } else {
            QToolTip::hideText();
        }
        return true;
    }
    return QWidget::event(event);
}

} // namespace waferscope::ui
