#pragma once

#include "core/cluster/cluster.h"

#include <QWidget>

#include <memory>

namespace waferscope::ui {

// The cluster's systems as a grid of tiles at one moment of a schedule: each tile in the colour
// of the job holding that system then, light grey when idle. Hovering a tile names its system and
// job. GUI thread.
class ClusterTiles : public QWidget {
    Q_OBJECT
public:
    explicit ClusterTiles(QWidget* parent = nullptr);

    void setSchedule(std::shared_ptr<const core::cluster::ClusterResult> result);
    void setTime(double seconds);
    double time() const { return m_time; }
    // The job (index into the result's jobs) holding `system` at the current time; -1 when idle.
    int jobAt(int system) const;
    // Columns and rows of the grid for `systems` tiles in a `width` x `height` area: as square as
    // the area allows.
    static QSize gridFor(int systems, QSizeF area);

    QSize sizeHint() const override { return { 320, 260 }; }

protected:
    void paintEvent(QPaintEvent* event) override;
    bool event(QEvent* event) override; // tooltips

private:
    QRectF tileRect(int system, QSize grid) const;
    int systemAt(QPointF position) const;
    void rebuildHolders();

    std::shared_ptr<const core::cluster::ClusterResult> m_result;
    double m_time = 0.0;
    std::vector<int> m_holder; // per system, the job holding it at m_time (-1: idle)
};

// The colour of job `index` in every cluster view (tiles, Gantt chart, table).
QColor clusterJobColour(std::size_t index);

} // namespace waferscope::ui
