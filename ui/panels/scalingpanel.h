#pragma once

#include "core/sweeps/scaling.h"

#include <QString>
#include <QWidget>

#include <memory>

class QChart;
class QChartView;
class QLabel;

namespace waferscope::ui {

// Training throughput against the number of systems (Qt Charts): the simulated samples/s, the
// ideal line (one system times N), the parallel efficiency on a second axis, the first count
// where the stream path instead of the wafer binds, and the current num_csx highlighted.
class ScalingPanel : public QWidget {
    Q_OBJECT
public:
    explicit ScalingPanel(QWidget* parent = nullptr);

    void setSweep(std::shared_ptr<const core::sweeps::ScalingSweep> sweep, int currentNumCsx, const QString& title);
    void clear(const QString& message);
    QChartView* chartView() const { return m_view; }
    QString summary() const;

private:
    void showChart(QChart* chart);

    QChartView* m_view;
    QLabel* m_summary;
    std::shared_ptr<const core::sweeps::ScalingSweep> m_sweep;
};

} // namespace waferscope::ui
