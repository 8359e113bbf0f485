#pragma once

#include "core/compiler/compiler.h"
#include "core/engine/engine.h"
#include "core/engine/sensitivity.h"
#include "core/hardware/systemspec.h"
#include "core/model/modelgraph.h"

#include <QString>
#include <QWidget>

#include <memory>
#include <optional>

class QCustomPlot;
class QLabel;
class QSplitter;
class QStackedWidget;
class QTableWidget;

namespace waferscope::ui {

class EmptyStatePanel;
class JobRunner;

// "What this result depends on": a tornado chart of the run's headline figure (samples/s, or
// tokens/s per user) with each ranged hardware value and calibration constant varied alone
// (core::engine::runSensitivity), the largest effect on top, and a table with why each factor
// spans its range. The sweep runs on a JobRunner lane of its own, and only while the panel is
// shown: a run that arrives while it is hidden (a tab behind another) is swept when it appears.
// A new run or clear() cancels a sweep in flight and drops its result. GUI thread.
class SensitivityPanel : public QWidget {
    Q_OBJECT
public:
    explicit SensitivityPanel(QWidget* parent = nullptr);

    // Sweeps the run of `graph` compiled with `compile` and run with `run` on `system` with
    // `calibration` (the document's software profile, as its runs use).
    void setRun(std::shared_ptr<const core::ModelGraph> graph, const core::SystemSpec& system,
        const core::CompileOptions& compile, const core::engine::RunOptions& run,
        const core::engine::Calibration& calibration = core::engine::builtinCalibration());
    void clear(const QString& message); // the empty state says `message`

    static constexpr int kMaxRows = 10; // factors drawn (the table lists them all)

    bool isComputing() const;
    // The last sweep shown (empty while none is).
    const std::optional<core::engine::Sensitivity>& sensitivity() const { return m_sensitivity; }
    // Factor names as the chart's rows, top row first.
    QStringList rowNames() const;
    QString summary() const;
    QCustomPlot* plot() const { return m_plot; }
    QTableWidget* table() const { return m_table; }

Q_SIGNALS:
    // A sweep ended: shown (sensitivity() set), or failed (the summary says why).
    void computed();

protected:
    void showEvent(QShowEvent* event) override;

private:
    struct Request {
        std::shared_ptr<const core::ModelGraph> graph;
        core::SystemSpec system;
        core::CompileOptions compile;
        core::engine::RunOptions run;
        core::engine::Calibration calibration;
    };
    void startSweep(Request request);
    void showSweep(core::engine::Sensitivity result);
    void showFailure(const QString& message);
    void showTooltip(const QPoint& position);

    JobRunner* m_jobs;
    QStackedWidget* m_pages;
    EmptyStatePanel* m_empty;
    QLabel* m_summary;
    QSplitter* m_splitter; // the chart and the table, hidden while a sweep runs
    QCustomPlot* m_plot;
    QTableWidget* m_table;
    std::optional<core::engine::Sensitivity> m_sensitivity;
    std::optional<Request> m_pending; // a run not yet swept: the panel was hidden when it came
};

} // namespace waferscope::ui
