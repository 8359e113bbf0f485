#pragma once

#include "core/compiler/plan.h"
#include "core/model/modelgraph.h"

#include <QWidget>

#include <memory>

class QLabel;
class QPushButton;
class QSortFilterProxyModel;
class QTableView;

namespace waferscope::ui {

class RegionTableModel;

// The "Placement" dock: how the compiler mapped the model (mode, wafers, regions, PE and SRAM
// use, load imbalance, the notes that explain its choices) and the regions as a sortable table.
// Selecting a row selects that region in the wafer view, and the other way round; a GEMV region
// can be run on the cycle-level fabric from here. GUI thread.
class PlacementPanel : public QWidget {
    Q_OBJECT
public:
    explicit PlacementPanel(QWidget* parent = nullptr);

    void setPlan(std::shared_ptr<const core::ExecutionPlan> plan, std::shared_ptr<const core::ModelGraph> graph);
    // No plan: `status` says why (compiling…, cannot be mapped: reason, no model).
    void clearPlan(const QString& status);
    void selectRegion(int planIndex); // -1 clears the selection
    QString summaryText() const;
    // The "Run on fabric" button: enabled when the selected region has a cycle-level kernel;
    // its tooltip says why not otherwise. `status` is the last run's outcome (or "running …").
    void setRunnable(bool runnable, const QString& reason);
    void setRunStatus(const QString& status);
    QString runStatusText() const;
    QPushButton* runButton() const { return m_runButton; }
    RegionTableModel* regionModel() const { return m_model; }

Q_SIGNALS:
    void regionSelected(int planIndex); // -1 when the selection is cleared
    void runRequested(); // run the selected region's kernel on the cycle-level fabric

private:
    QLabel* m_summary;
    QTableView* m_table;
    QPushButton* m_runButton;
    QLabel* m_runStatus;
    RegionTableModel* m_model;
    QSortFilterProxyModel* m_sorted;
    bool m_selecting = false; // selectRegion() is moving the table's selection
};

} // namespace waferscope::ui
