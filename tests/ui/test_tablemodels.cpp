// Every table model of the GUI under QAbstractItemModelTester (Qt's consistency checks of row
// and column counts, indexes, parents, data roles and the signals around a reset), empty, filled
// with a real model, plan and run, refilled and emptied again, directly and behind the sort proxy
// the docks use. Row counts are checked against the core's own lists.
#include "ui/models/hardwaretablemodel.h"
#include "ui/models/layertablemodel.h"
#include "ui/models/runlayertablemodel.h"
#include "ui/panels/regiontablemodel.h"

#include "core/compiler/compiler.h"
#include "core/engine/engine.h"
#include "core/hardware/builtinpresets.h"
#include "core/model/modelloader.h"

#include <QAbstractItemModelTester>
#include <QSortFilterProxyModel>
#include <QTest>

#include <memory>

using namespace waferscope;

class TestTableModels : public QObject {
    Q_OBJECT

    struct Job {
        std::shared_ptr<const core::ModelGraph> graph;
        std::shared_ptr<const core::ExecutionPlan> plan;
        std::shared_ptr<const core::engine::RunResult> run;
    };

    static Job makeJob(const char* sample, const core::SystemSpec& system)
    {
        Job job;
        core::Expected<core::ModelGraph> graph
            = core::loadModel(std::string(WAFERSCOPE_SOURCE_DIR "/samples/") + sample);
        if (!graph)
            qFatal("%s", graph.error().format().c_str());
        job.graph = std::make_shared<const core::ModelGraph>(std::move(graph).value());
        core::Expected<core::ExecutionPlan> plan = core::compile(*job.graph, system, {});
        if (!plan)
            qFatal("%s", plan.error().format().c_str());
        job.plan = std::make_shared<const core::ExecutionPlan>(std::move(plan).value());
        core::Expected<core::engine::RunResult> run = core::engine::run(*job.plan, *job.graph, system, {});
        if (!run)
            qFatal("%s", run.error().format().c_str());
        job.run = std::make_shared<const core::engine::RunResult>(std::move(run).value());
        return job;
    }

    // The model and a sort proxy over it, both watched by a tester for the model's whole life.
    template <typename Model>
    struct Watched {
        Model model;
        QSortFilterProxyModel sorted;
        QAbstractItemModelTester direct { &model, QAbstractItemModelTester::FailureReportingMode::QtTest };
        QAbstractItemModelTester proxy { &sorted, QAbstractItemModelTester::FailureReportingMode::QtTest };
        Watched()
        {
            sorted.setSourceModel(&model);
            sorted.setSortRole(Qt::UserRole);
            sorted.sort(1, Qt::DescendingOrder);
        }
    };

private Q_SLOTS:
    void layerTableModel()
    {
        const core::SystemSpec system = core::loadBuiltinPreset("cs2").value();
        const Job small = makeJob("gpt2_small.yaml", system);
        const Job mnist = makeJob("fc_mnist.yaml", system);
        Watched<ui::LayerTableModel> watched;
        QCOMPARE(watched.model.rowCount(), 0);
        watched.model.setGraph(small.graph);
        QCOMPARE(watched.model.rowCount(), int(small.graph->ops.size()));
        watched.model.setGraph(mnist.graph);
        QCOMPARE(watched.model.rowCount(), int(mnist.graph->ops.size()));
        watched.model.setGraph(nullptr);
        QCOMPARE(watched.sorted.rowCount(), 0);
    }

    void regionTableModel()
    {
        const core::SystemSpec system = core::loadBuiltinPreset("cs2").value();
        const Job small = makeJob("gpt2_small.yaml", system);
        const Job mnist = makeJob("fc_mnist.yaml", system);
        Watched<ui::RegionTableModel> watched;
        watched.model.setPlan(small.plan, small.graph);
        QCOMPARE(watched.model.rowCount(), int(small.plan->regions.size()));
        watched.model.setPlan(mnist.plan, mnist.graph);
        QCOMPARE(watched.sorted.rowCount(), int(mnist.plan->regions.size()));
        watched.model.setPlan(nullptr, nullptr);
        QCOMPARE(watched.model.rowCount(), 0);
    }

    void runLayerTableModel()
    {
        const core::SystemSpec system = core::loadBuiltinPreset("cs3").value();
        const Job small = makeJob("gpt2_small.yaml", system);
        const Job mnist = makeJob("fc_mnist.yaml", system);
        Watched<ui::RunLayerTableModel> watched;
        watched.model.setRun(small.run);
        QCOMPARE(watched.model.rowCount(), int(small.run->metrics.layers.size()));
        QCOMPARE(watched.model.columnCount(), int(ui::RunLayerTableModel::ColumnCount));
        watched.model.setRun(mnist.run);
        QCOMPARE(watched.sorted.rowCount(), int(mnist.run->metrics.layers.size()));
        watched.model.setRun(nullptr);
        QCOMPARE(watched.model.rowCount(), 0);
    }

    void hardwareTableModel()
    {
        Watched<ui::HardwareTableModel> watched;
        for (const char* name : { "cs1", "cs2", "cs3", "cs2" }) {
            watched.model.setSystem(core::loadBuiltinPreset(name).value());
            QVERIFY(watched.model.rowCount() > 10);
            QCOMPARE(watched.sorted.rowCount(), watched.model.rowCount());
        }
    }
};

QTEST_MAIN(TestTableModels)
#include "test_tablemodels.moc"
