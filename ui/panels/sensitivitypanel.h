#pragma once

#include <QString>
#include <QWidget>

class QCustomPlot;
class QLabel;
class QSplitter;
class QStackedWidget;
class QTableWidget;

namespace waferscope::ui {

class EmptyStatePanel;
class SensitivityModel;

// "What this result depends on", the view of a SensitivityModel: a tornado chart of the run's
// headline figure (samples/s, or tokens/s per user) with each ranged value varied alone, the
// largest effect on top, and a table with why each factor spans its range. The model is active
// only while the panel is shown: a run that arrives while it is hidden (a tab behind another) is
// swept when it appears. GUI thread.
class SensitivityPanel : public QWidget {
    Q_OBJECT
public:
    explicit SensitivityPanel(SensitivityModel* model, QWidget* parent = nullptr);

    static constexpr int kMaxRows = 10; // factors drawn (the table lists them all)

    SensitivityModel* model() const { return m_model; }
    // Factor names as the chart's rows, top row first.
    QStringList rowNames() const;
    QString summary() const;
    QCustomPlot* plot() const { return m_plot; }
    QTableWidget* table() const { return m_table; }

protected:
    void showEvent(QShowEvent* event) override;
    void hideEvent(QHideEvent* event) override;

private:
    void showEmpty(const QString& message);
    void showWaiting();
    void showSweep();
    void showTooltip(const QPoint& position);

    SensitivityModel* m_model; // not owned
    QStackedWidget* m_pages;
    EmptyStatePanel* m_empty;
    QLabel* m_summary;
    QSplitter* m_splitter; // the chart and the table, hidden while a sweep runs
    QCustomPlot* m_plot;
    QTableWidget* m_table;
};

} // namespace waferscope::ui
