#pragma once

#include "core/compiler/compiler.h"
#include "core/engine/calibration.h"
#include "core/engine/engine.h"
#include "core/hardware/systemspec.h"
#include "core/model/modelgraph.h"
#include "core/sweeps/sensitivity.h"

#include <QObject>
#include <QString>

#include <memory>
#include <optional>

namespace waferscope::ui {

class JobRunner;

// "What this result depends on", without a widget: the sweep of a run's headline figure with
// each ranged hardware value and calibration constant varied alone
// (core::sweeps::runSensitivity), on a JobRunner lane of its own. A new run or clear() cancels a
// sweep in flight and drops its result. While inactive (its view is hidden) a run is kept and
// swept once the model is made active, so no work is done for a dock nobody sees; a model
// without a view is active. Lives on the GUI thread; every signal is emitted there.
class SensitivityModel : public QObject {
    Q_OBJECT
public:
    explicit SensitivityModel(QObject* parent = nullptr);
    ~SensitivityModel() override;

    // Sweeps the run of `graph` compiled with `compile` and run with `run` on `system` with
    // `calibration` (the document's software profile, as its runs use).
    void setRun(std::shared_ptr<const core::ModelGraph> graph, const core::SystemSpec& system,
        const core::CompileOptions& compile, const core::engine::RunOptions& run,
        const core::engine::Calibration& calibration = core::engine::builtinCalibration());
    void clear(const QString& message); // cleared(message) follows
    // Active: a kept run is swept now, and later ones at once. Inactive: runs wait.
    void setActive(bool active);
    bool isActive() const { return m_active; }

    bool isComputing() const;
    // A run waits for its sweep (kept while inactive) or is being swept.
    bool isPending() const { return m_pending.has_value() || isComputing(); }
    // The last sweep (empty while none is).
    const std::optional<core::sweeps::Sensitivity>& sensitivity() const { return m_sensitivity; }

Q_SIGNALS:
    void requested(); // a run came: its sweep waits or runs
    void progress(double fraction);
    // Nothing to show, and why (a new model, no run, or the sweep failed).
    void cleared(const QString& message);
    // A sweep ended: sensitivity() is set, or it failed (cleared() said why first).
    void computed();

private:
    struct Request {
        std::shared_ptr<const core::ModelGraph> graph;
        core::SystemSpec system;
        core::CompileOptions compile;
        core::engine::RunOptions run;
        core::engine::Calibration calibration;
    };
    void startSweep(Request request);

    JobRunner* m_jobs; // the sweep's lane
    bool m_active = true;
    std::optional<core::sweeps::Sensitivity> m_sensitivity;
    std::optional<Request> m_pending; // a run not yet swept: the model was inactive when it came
};

} // namespace waferscope::ui
