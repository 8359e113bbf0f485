#pragma once

#include "core/engine/engine.h"

#include <QWidget>

#include <memory>

class QSortFilterProxyModel;
class QTableView;

namespace waferscope::ui {

class RunLayerTableModel;

// The "Layers" dock: the run's layers (time, utilization, bound) as a sortable table. Picking a
// row says which layer; showLayer() follows the stepper without saying so. GUI thread.
class LayersPanel : public QWidget {
    Q_OBJECT
public:
    explicit LayersPanel(QWidget* parent = nullptr);

    void setRun(std::shared_ptr<const core::engine::RunResult> run);
    // Selects and reveals a layer's row (an index into the run's layers) without emitting layerPicked.
    void showLayer(int layer);
    QTableView* table() const { return m_table; }
    RunLayerTableModel* model() const { return m_model; }

Q_SIGNALS:
    void layerPicked(int layer); // the user picked a row

private:
    RunLayerTableModel* m_model; // the run's layers
    QSortFilterProxyModel* m_sorted; // m_model sorted by the column the user chose
    QTableView* m_table;
    bool m_following = false; // showLayer() is moving the selection
};

} // namespace waferscope::ui
