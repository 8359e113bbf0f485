#pragma once

#include "core/model/modelgraph.h"

#include <QWidget>

#include <memory>

class QLabel;
class QSortFilterProxyModel;
class QTableView;

namespace waferscope::ui {

class LayerTableModel;

// The "Model" dock: the loaded model's totals and its ops as a sortable table. GUI thread.
class ModelPanel : public QWidget {
    Q_OBJECT
public:
    explicit ModelPanel(QWidget* parent = nullptr);

    void setGraph(const QString& path, std::shared_ptr<const core::ModelGraph> graph);
    // A line under the summary: "loading …", or why the last file was refused (the model shown
    // stays the previous one).
    void setStatus(const QString& status);
    QString statusText() const;
    QString summaryText() const;
    LayerTableModel* layerModel() const { return m_model; }

private:
    QLabel* m_summary;
    QLabel* m_status;
    QTableView* m_table;
    LayerTableModel* m_model;
    QSortFilterProxyModel* m_sorted;
};

} // namespace waferscope::ui
