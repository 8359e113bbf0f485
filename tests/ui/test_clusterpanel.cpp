// The Cluster dock: a dropped jobs file is scheduled as core schedules it, the tiles show who
// holds each system at the cursor, an edited num_csx reschedules, the jobs save and read back,
// and a clicked job loads its model on its allocation into the other docks.
#include "ui/cluster/clustergantt.h"
#include "ui/cluster/clusterpanel.h"
#include "ui/cluster/clustertiles.h"
#include "ui/mainwindow.h"
#include "ui/models/clustersession.h"
#include "ui/models/document.h"
#include "ui/panels/qcustomplotinclude.h"
#include "windowfixture.h"

#include "core/cluster/cluster.h"

#include <QDockWidget>
#include <QSignalSpy>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTest>

using namespace waferscope;
using waferscope::test::makeWindow;

namespace {

const QString kCondor = QStringLiteral(WAFERSCOPE_SOURCE_DIR "/samples/cluster/condor_galaxy.yaml");

// The schedule core gives for the file, with these num_csx changes.
core::cluster::ClusterResult expected(const std::vector<std::pair<std::string, int>>& changes = {})
{
    core::cluster::JobsFile file = core::cluster::readJobsFile(kCondor.toStdString()).value();
    file = core::cluster::withNumCsx(file, changes).value();
    core::cluster::TimingCache cache;
    return core::cluster::scheduleCluster(file, {}, cache).value();
}

} // namespace

class TestClusterPanel : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void aDroppedJobsFileIsScheduledInTheClusterDock()
    {
        auto window = makeWindow();
        ui::ClusterPanel* panel = window->views().cluster;
        QSignalSpy scheduled(window->cluster(), &ui::ClusterSession::scheduled);
        QVERIFY(test::dropUrls(window.get(), { QUrl::fromLocalFile(kCondor) }));
        QVERIFY(scheduled.wait(60000));
        // Routed here, not to the document: no model was loaded.
        QVERIFY(!window->document()->model());
        auto* dock = window->findChild<QDockWidget*>(QStringLiteral("clusterDock"));
        QVERIFY(dock && dock->isVisible());
        const core::cluster::ClusterResult want = expected();
        const auto shown = window->cluster()->schedule();
        QVERIFY(shown);
        QCOMPARE(shown->jobs.size(), want.jobs.size());
        for (std::size_t j = 0; j < want.jobs.size(); ++j) {
            QCOMPARE(shown->jobs[j].startS, want.jobs[j].startS);
            QCOMPARE(shown->jobs[j].endS, want.jobs[j].endS);
        }
        QCOMPARE(panel->table()->rowCount(), int(want.jobs.size()));
        QVERIFY(window->cluster()->summary().contains(QStringLiteral("7 of 7 jobs run")));
        // The tiles at a moment: each system in the colour of the job that holds it then.
        const double at = *want.jobs[4].startS + 1.0; // gpt3-6.7b-long has started
        panel->setTime(at);
        for (int s = 0; s < want.systems; ++s) {
            int holder = -1;
            for (std::size_t j = 0; j < want.jobs.size(); ++j)
                if (want.jobs[j].startS && *want.jobs[j].startS <= at && at < *want.jobs[j].endS
                    && std::count(want.jobs[j].systems.begin(), want.jobs[j].systems.end(), s))
                    holder = int(j);
            QCOMPARE(panel->tiles()->jobAt(s), holder);
        }
        // The Gantt chart: a bar per job that runs and one per wait, and the queue lane.
        QVERIFY(panel->gantt()->plot()->itemCount() >= 8);
    }

    void editingNumCsxReschedulesAndSaves()
    {
        auto window = makeWindow();
        ui::ClusterPanel* panel = window->views().cluster;
        QSignalSpy scheduled(window->cluster(), &ui::ClusterSession::scheduled);
        window->openFile(kCondor);
        QVERIFY(scheduled.wait(60000));
        // The table's num_csx cell, edited as a user does: llama2-70b on 16 systems.
        scheduled.clear();
        panel->table()->item(1, 2)->setData(Qt::EditRole, 16);
        QVERIFY(scheduled.wait(60000));
        const core::cluster::ClusterResult want = expected({ { "llama2-70b", 16 } });
        QCOMPARE(window->cluster()->schedule()->jobs[1].numCsx, 16);
        QCOMPARE(window->cluster()->schedule()->jobs[1].endS, want.jobs[1].endS);
        QCOMPARE(window->cluster()->schedule()->makespanS, want.makespanS);
        // A count the cluster cannot give is refused and the table shows what is scheduled.
        QVERIFY(!window->cluster()->setNumCsx(1, 65));
        QCOMPARE(panel->table()->item(1, 2)->text(), QStringLiteral("16"));
        // FIFO from the policy box.
        scheduled.clear();
        window->cluster()->setPolicy(core::cluster::Policy::Fifo);
        QVERIFY(scheduled.wait(60000));
        QCOMPARE(window->cluster()->schedule()->policy, core::cluster::Policy::Fifo);
        window->cluster()->setPolicy(core::cluster::Policy::Backfill);
        QVERIFY(scheduled.wait(60000));

        // Saved elsewhere, the edited jobs read back with their params found.
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("sub/edited.yaml"));
        QVERIFY(QDir().mkpath(dir.filePath(QStringLiteral("sub"))));
        QCOMPARE(window->cluster()->saveJobsAs(path), QString());
        const core::cluster::JobsFile saved = core::cluster::readJobsFile(path.toStdString()).value();
        QCOMPARE(saved.jobs[1].numCsx, 16);
        core::cluster::TimingCache cache;
        core::cluster::ClusterOptions fifo;
        fifo.policy = core::cluster::Policy::Fifo;
        const core::cluster::ClusterResult again = core::cluster::scheduleCluster(saved, fifo, cache).value();
        QCOMPARE(again.makespanS, window->cluster()->schedule()->makespanS);
    }

    // The session alone, without a window: the same schedule, and a job asked for by its row.
    void aSessionSchedulesWithoutAWindow()
    {
        ui::ClusterSession session;
        QSignalSpy scheduled(&session, &ui::ClusterSession::scheduled);
        session.open(kCondor);
        QVERIFY(session.isBusy());
        QVERIFY(scheduled.wait(60000));
        const core::cluster::ClusterResult want = expected();
        QVERIFY(session.schedule());
        QCOMPARE(session.schedule()->makespanS, want.makespanS);
        QVERIFY(session.summary().contains(QStringLiteral("7 of 7 jobs run")));
        QSignalSpy activated(&session, &ui::ClusterSession::jobActivated);
        QVERIFY(session.activateJob(0)); // gpt3-xl on 16 CS-2
        QCOMPARE(activated.size(), 1);
        QVERIFY(activated.first().at(0).toString().endsWith(QStringLiteral("gpt3_xl.yaml")));
        QCOMPARE(activated.first().at(1).toString(), QStringLiteral("cs2"));
        QCOMPARE(activated.first().at(2).toInt(), 16);
        QVERIFY(!session.activateJob(7));
        QVERIFY(!session.setNumCsx(0, 0));
    }

    void clickingAJobLoadsItsModelOnItsAllocation()
    {
        auto window = makeWindow();
        ui::Document* document = window->document();
        // A model on screen first (another system, size and file), so the click changes them all.
        QSignalSpy settled(window.get(), &ui::MainWindow::settled);
        window->openFile(QStringLiteral(WAFERSCOPE_SOURCE_DIR "/samples/gpt2_small.yaml"));
        QVERIFY(settled.wait(120000));
        QCOMPARE(document->system().name, std::string("cs3"));
        ui::ClusterPanel* panel = window->views().cluster;
        QSignalSpy scheduled(window->cluster(), &ui::ClusterSession::scheduled);
        window->openFile(kCondor);
        QVERIFY(scheduled.wait(60000));
        // One transaction: the system, the size and the model together compile once.
        QSignalSpy busy(document, &ui::Document::busyChanged);
        QTableWidget* table = panel->table();
        const QRect cell = table->visualItemRect(table->item(0, 0)); // gpt3-xl, 16 CS-2
        QTest::mouseClick(table->viewport(), Qt::LeftButton, {}, cell.center());
        QTRY_VERIFY_WITH_TIMEOUT(document->model() && document->model()->path.endsWith(QStringLiteral("gpt3_xl.yaml"))
                && document->run() != nullptr,
            120000);
        qsizetype compiles = 0;
        for (const QList<QVariant>& call : busy)
            compiles += call.at(0).toString() == QStringLiteral("compiling") ? 1 : 0;
        QCOMPARE(compiles, qsizetype(1));
        QCOMPARE(QString::fromStdString(document->system().name), QStringLiteral("cs2"));
        QCOMPARE(document->numSystems(), 16);
        QCOMPARE(document->plan()->numSystems, 16);
        // The cursor moved to the job's start.
        QCOMPARE(panel->tiles()->time(), *window->cluster()->schedule()->jobs[0].startS);
    }

    void inferenceReplicasAreSizedOnRequest()
    {
        auto window = makeWindow();
        ui::ClusterPanel* panel = window->views().cluster;
        QSignalSpy scheduled(window->cluster(), &ui::ClusterSession::scheduled);
        const QString path = QStringLiteral(WAFERSCOPE_SOURCE_DIR "/samples/cluster/inference.yaml");
        window->openFile(path);
        QVERIFY(scheduled.wait(60000));
        QCOMPARE(window->cluster()->schedule()->jobs[1].replicas, 8); // as filed
        scheduled.clear();
        // Sizing shows its progress in the summary, a percent at a time, never going back.
        QList<QPair<int, QString>> progress;
        connect(window->cluster(), &ui::ClusterSession::progressed, this, [&](int percent) {
            progress.append({ percent, panel->shownSummary() });
        });
        window->cluster()->setSizeInference(true);
        QVERIFY(scheduled.wait(60000));
        QVERIFY(progress.size() >= 2);
        for (qsizetype i = 0; i < progress.size(); ++i) {
            QVERIFY(progress[i].first >= 0 && progress[i].first <= 100);
            QVERIFY(i == 0 || progress[i].first > progress[i - 1].first);
            QVERIFY2(progress[i].second.startsWith(QStringLiteral("Rescheduling …"))
                    && progress[i].second.endsWith(QStringLiteral(" %1 %").arg(progress[i].first)),
                qPrintable(progress[i].second));
        }
        QVERIFY(progress.first().first < 50); // sizing is the first half
        QCOMPARE(progress.last().first, 100);
        core::cluster::ClusterOptions sized;
        sized.sizeInference = true;
        core::cluster::TimingCache cache;
        const core::cluster::ClusterResult want
            = core::cluster::scheduleCluster(core::cluster::readJobsFile(path.toStdString()).value(), sized, cache)
                  .value();
        QCOMPARE(window->cluster()->schedule()->jobs[1].replicas, want.jobs[1].replicas);
        QVERIFY(want.jobs[1].replicasNeeded.has_value());
        QCOMPARE(panel->table()->item(1, 3)->text(), QString::number(want.jobs[1].replicas));
    }

    void aBadJobsFileIsLocatedAndKeepsTheSchedule()
    {
        auto window = makeWindow();
        QSignalSpy scheduled(window->cluster(), &ui::ClusterSession::scheduled);
        window->openFile(kCondor);
        QVERIFY(scheduled.wait(60000));
        QTemporaryDir dir;
        const QString bad = dir.filePath(QStringLiteral("bad.yaml"));
        QFile file(bad);
        QVERIFY(file.open(QIODevice::WriteOnly));
        file.write("cluster: {system: cs2, systems: 4}\njobs:\n  - {name: a, params: x.yaml, max_stepz: 1}\n");
        file.close();
        QSignalSpy failed(window->cluster(), &ui::ClusterSession::failed);
        scheduled.clear();
        window->openFile(bad);
        QVERIFY(scheduled.wait(60000));
        QCOMPARE(failed.size(), 1);
        QVERIFY(failed.first().at(0).toString().contains(bad + QStringLiteral(":3:31: error: unknown key")));
        QCOMPARE(window->cluster()->schedule()->jobs.size(), std::size_t(7)); // the last schedule stays
    }
};

QTEST_MAIN(TestClusterPanel)
#include "test_clusterpanel.moc"
