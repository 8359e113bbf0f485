// A monkey at the window: seeded random sequences of what users do (drops of good and bad files,
// system, cluster size, mode and execution changes while jobs run, play, pause, steps, Stop, dock
// toggles, an export then Stop, a baseline kept and cleared, overlays, region picks). Most
// actions do not wait for the jobs they start; every tenth one lets every job finish first.
// After every action the window must be consistent: the plan and run come from the model's
// current chain (same generation), and every view shows the document's plan and run.
//
// The action list is a function of the seed alone, so a failure is replayed with
//   WAFERSCOPE_MONKEY_SEED=<seed> build/dev/bin/test_monkey
// (WAFERSCOPE_MONKEY_ACTIONS sets how many; default 5000).
#include "ui/mainwindow.h"
#include "ui/models/document.h"
#include "ui/models/fabricruns.h"
#include "ui/models/runlayertablemodel.h"
#include "ui/panels/layerspanel.h"
#include "ui/panels/placementpanel.h"
#include "ui/panels/regiontablemodel.h"
#include "ui/runtoolbar.h"
#include "ui/wafer/playbackcontroller.h"
#include "ui/wafer/waferpresenter.h"
#include "ui/wafer/waferview.h"
#include "windowfixture.h"

#include <QAction>
#include <QComboBox>
#include <QDockWidget>
#include <QElapsedTimer>
#include <QPushButton>
#include <QSortFilterProxyModel>
#include <QSpinBox>
#include <QTableView>
#include <QTemporaryDir>
#include <QTest>
#include <QThreadPool>
#include <QToolButton>

#include <deque>
#include <random>

using namespace waferscope;

namespace {

// Lets every job run to its end and deliver, including the jobs a delivery starts (a compile
// starts a run), so the window is settled without a fixed wait.
bool drain(ui::MainWindow* window)
{
    for (int round = 0; round < 100; ++round) {
        QThreadPool::globalInstance()->waitForDone();
        QCoreApplication::processEvents();
        if (!window->document()->isBusy())
            return true;
    }
    return false;
}

// Empty when the window is consistent, else what is not.
QString inconsistency(ui::MainWindow* window)
{
    const ui::Document* document = window->document();
    const ui::Generations& generations = document->generations();
    const auto plan = document->plan();
    const auto state = document->runState();
    if (plan && !document->model())
        return QStringLiteral("a plan without a model");
    if (plan && (generations.plan != generations.model || generations.model != generations.current))
        return QStringLiteral("plan of generation %1, model %2, chain %3")
            .arg(generations.plan)
            .arg(generations.model)
            .arg(generations.current);
    if (state && !plan)
        return QStringLiteral("a run without a plan");
    if (state && generations.run != generations.plan)
        return QStringLiteral("run of generation %1, plan %2").arg(generations.run).arg(generations.plan);
    if (window->views().placement->regionModel()->plan() != plan.get())
        return QStringLiteral("the Placement dock shows another plan");
    if ((window->views().wafer->scene().regions != nullptr) != (plan != nullptr))
        return QStringLiteral("the wafer view's regions disagree with the plan");
    const ui::RunLayerTableModel* layers = window->findChild<ui::LayersPanel*>()->model();
    if (layers->run() != (state ? state->run.get() : nullptr))
        return QStringLiteral("the Layers dock shows another run");
    if (window->presenter()->playback()->source() != (state ? state->frames.get() : nullptr))
        return QStringLiteral("the stepper steps through another run's frames");
    if (window->presenter()->playback()->frameCount() > 0
        && window->presenter()->playback()->current() >= window->presenter()->playback()->frameCount())
        return QStringLiteral("the stepper is past the last frame");
    const int selected = window->findChild<ui::WaferPresenter*>()->selectedRegion();
    const auto* regions = window->views().placement->findChild<QTableView*>();
    const QModelIndex current = regions->selectionModel()->currentIndex();
    const int picked = current.isValid()
        ? qobject_cast<const QSortFilterProxyModel*>(regions->model())->mapToSource(current).row()
        : -1;
    if (picked != selected)
        return QStringLiteral("the Placement dock picks region %1, the wafer view %2").arg(picked).arg(selected);
    const bool runnable = selected >= 0 && document->fabric()->kernelUnavailableReason(selected).isEmpty();
    if (window->views().placement->runButton()->isEnabled() != runnable)
        return QStringLiteral("Run on fabric is %1 for region %2")
            .arg(runnable ? QStringLiteral("disabled") : QStringLiteral("enabled"))
            .arg(selected);
    // Run token on fabric is not among the actions (a GPT-2 token takes a minute), but whether it
    // is offered follows the plan.
    const QAction* runToken = window->findChild<QAction*>(QStringLiteral("runTokenOnFabric"));
    const bool tokenRunnable
        = document->fabric()->tokenUnavailableReason().isEmpty() && !document->fabric()->isTokenRunning();
    if (!runToken || runToken->isEnabled() != tokenRunnable)
        return QStringLiteral("Run token on fabric is %1 for a plan that %2 run it")
            .arg(runToken && runToken->isEnabled() ? QStringLiteral("enabled") : QStringLiteral("disabled"))
            .arg(tokenRunnable ? QStringLiteral("can") : QStringLiteral("cannot"));
    for (const QToolButton* button : window->findChildren<QToolButton*>())
        if (button->text() == QStringLiteral("Cancel") && button->isHidden() == document->isBusy())
            return document->isBusy() ? QStringLiteral("work runs but Cancel is hidden")
                                      : QStringLiteral("Cancel is shown with nothing to cancel");
    return {};
}

} // namespace

class TestMonkey : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void randomUserActionsLeaveTheWindowConsistent()
    {
        const unsigned seed = qEnvironmentVariableIsSet("WAFERSCOPE_MONKEY_SEED")
            ? qEnvironmentVariable("WAFERSCOPE_MONKEY_SEED").toUInt()
            : 20261126u;
        const int actions = qEnvironmentVariableIsSet("WAFERSCOPE_MONKEY_ACTIONS")
            ? qEnvironmentVariable("WAFERSCOPE_MONKEY_ACTIONS").toInt()
            : 5000;
        qInfo("seed %u, %d actions", seed, actions);
        std::mt19937 random(seed);
        const auto pick
            = [&random](int count) { return int(std::uniform_int_distribution<int>(0, count - 1)(random)); };

        auto window = test::makeWindow();
        window->resize(800, 520); // every action repaints what changed: a smaller window paints less
        ui::RunToolBar* toolBar = window->findChild<ui::RunToolBar*>();
        QVERIFY(toolBar);
        const QList<QComboBox*> boxes = toolBar->findChildren<QComboBox*>(); // system, mode, execution, overlay
        QCOMPARE(boxes.size(), 4);
        QSpinBox* numSystems = toolBar->findChild<QSpinBox*>();
        const QList<QDockWidget*> docks = window->findChildren<QDockWidget*>();
        const QStringList files { QStringLiteral(WAFERSCOPE_SOURCE_DIR "/samples/fc_mnist.yaml"),
            QStringLiteral(WAFERSCOPE_SOURCE_DIR "/samples/gpt2_small.yaml"),
            QStringLiteral(WAFERSCOPE_SOURCE_DIR "/tests/data/bad/legacy_num_heads_not_dividing_hidden.yaml") };
        QTemporaryDir exports;
        // What the sequence got to see, so that it cannot pass by never reaching a state.
        int plans = 0, runsWithFrames = 0, baselines = 0, exportsFinished = 0;
        QObject::connect(window.get(), &ui::MainWindow::reportExported, window.get(),
            [&exportsFinished](const QString&, const QString& error) { exportsFinished += error.isEmpty() ? 1 : 0; });
        std::deque<QString> recent; // the last actions, for the failure message
        QElapsedTimer clock;
        clock.start();

        for (int index = 0; index < actions; ++index) {
            QString action;
            int choice = 0;
            switch (pick(14)) {
            case 0:
            case 1: {
                const QString& file = files[qsizetype(pick(int(files.size())))];
                action = QStringLiteral("drop %1").arg(file.section(QLatin1Char('/'), -1));
                QVERIFY(test::dropUrls(window.get(), { QUrl::fromLocalFile(file) }));
                break;
            }
            case 2:
                choice = pick(boxes[0]->count());
                action = QStringLiteral("system box %1").arg(choice);
                boxes[0]->setCurrentIndex(choice);
                break;
            case 3:
                choice = 1 + pick(std::min(8, numSystems->maximum()));
                action = QStringLiteral("num_csx %1").arg(choice);
                numSystems->setValue(choice);
                break;
            case 4:
                choice = pick(boxes[1]->count());
                action = QStringLiteral("mode box %1").arg(choice);
                boxes[1]->setCurrentIndex(choice);
                break;
            case 5:
                choice = pick(boxes[2]->count());
                action = QStringLiteral("execution box %1").arg(choice);
                boxes[2]->setCurrentIndex(choice);
                break;
            case 6:
                choice = pick(boxes[3]->count());
                action = QStringLiteral("overlay box %1").arg(choice);
                boxes[3]->setCurrentIndex(choice);
                break;
            case 7:
                action = QStringLiteral("play or pause");
                window->presenter()->playback()->isPlaying() ? window->presenter()->playback()->pause()
                                                             : window->presenter()->playback()->play();
                break;
            case 8: {
                const auto unit = core::engine::StepUnit(pick(3));
                const int direction = pick(2) == 0 ? -1 : 1;
                action = QStringLiteral("step %1 by unit %2").arg(direction).arg(int(unit));
                window->presenter()->playback()->step(unit, direction);
                break;
            }
            case 9:
                action = QStringLiteral("Stop");
                window->document()->cancel();
                break;
            case 10: {
                QDockWidget* dock = docks[qsizetype(pick(int(docks.size())))];
                action = QStringLiteral("toggle %1").arg(dock->objectName());
                dock->toggleViewAction()->trigger();
                break;
            }
            case 11:
                action = QStringLiteral("export, then Stop");
                window->exportReport(exports.filePath(QStringLiteral("report")));
                window->document()->cancel();
                break;
            case 12:
                if (pick(2) == 0) {
                    action = QStringLiteral("keep baseline");
                    window->document()->keepRunAsBaseline();
                } else {
                    action = QStringLiteral("clear baseline");
                    window->document()->clearBaseline();
                }
                break;
            default: {
                const auto plan = window->document()->plan();
                const int region = plan ? pick(int(plan->regions.size()) + 1) - 1 : -1;
                action = QStringLiteral("select region %1").arg(region);
                window->presenter()->selectRegion(region);
                break;
            }
            }
            QCoreApplication::processEvents();
            if (index % 10 == 9) {
                action += QStringLiteral(", then let every job finish");
                QVERIFY2(drain(window.get()), "the window stays busy");
            }
            recent.push_back(QStringLiteral("%1: %2").arg(index).arg(action));
            if (recent.size() > 12)
                recent.pop_front();
            plans += window->document()->plan() ? 1 : 0;
            runsWithFrames += window->document()->runState() && window->document()->runState()->frames ? 1 : 0;
            baselines += (window->document()->baseline().frames != nullptr) ? 1 : 0;
            const QString wrong = inconsistency(window.get());
            if (!wrong.isEmpty())
                QFAIL(qPrintable(QStringLiteral("seed %1, after action %2: %3\nlast actions:\n%4")
                                     .arg(seed)
                                     .arg(index)
                                     .arg(wrong, QStringList(recent.begin(), recent.end()).join(QLatin1Char('\n')))));
        }
        QVERIFY(drain(window.get()));
        QVERIFY(inconsistency(window.get()).isEmpty());
        qInfo("%d actions in %.1f s; seen after an action: a plan %d times, a run with frames %d, a baseline %d; "
              "%d exports finished",
            actions, double(clock.elapsed()) / 1000.0, plans, runsWithFrames, baselines, exportsFinished);
        if (actions >= 1000) {
            QVERIFY(plans > 0);
            QVERIFY(runsWithFrames > 0);
            QVERIFY(baselines > 0);
        }
        // The window closed with work in flight: the jobs finish with nobody to deliver to.
        QVERIFY(test::dropUrls(window.get(), { QUrl::fromLocalFile(files[1]) }));
        window.reset();
        QThreadPool::globalInstance()->waitForDone();
        QCoreApplication::processEvents();
    }
};

QTEST_MAIN(TestMonkey)
#include "test_monkey.moc"
