// The window against bad input and faults: whatever is dropped on it (a directory, a binary
// file, a 100 MB YAML, a file deleted while it loads) it says what is wrong and keeps the model
// it had; an old or damaged saved layout gives the default one; Stop during a report export
// replaces nothing.
#include "core/report/rundirectorylock.h"
#include "ui/mainwindow.h"
#include "ui/models/document.h"
#include "ui/models/layertablemodel.h"
#include "ui/models/reportexporter.h"
#include "ui/models/sessionstate.h"
#include "ui/panels/messagepanel.h"
#include "ui/panels/modelpanel.h"
#include "windowfixture.h"

#include <QCryptographicHash>
#include <QDir>
#include <QDockWidget>
#include <QElapsedTimer>
#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QSemaphore>
#include <QSettings>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>
#include <QThreadPool>

#include <sys/stat.h>

using namespace waferscope;

class TestGuiFaults : public QObject {
    Q_OBJECT

    // A window showing fc_mnist, loaded, compiled and run.
    static std::unique_ptr<ui::MainWindow> windowWithModel()
    {
        auto window = test::makeWindow();
        QSignalSpy settled(window.get(), &ui::MainWindow::settled);
        window->openFile(QStringLiteral(WAFERSCOPE_SOURCE_DIR "/samples/fc_mnist.yaml"));
        if (!settled.wait(30000))
            qFatal("fc_mnist did not settle");
        return window;
    }

    // Drops `path`, waits for the refusal, and checks that the previous model and plan stay.
    static QString dropRefused(ui::MainWindow* window, const QString& path)
    {
        const auto graph = window->views().model->layerModel()->graph();
        const auto plan = window->document()->plan();
        QSignalSpy failed(window->document(), &ui::Document::loadFailed);
        const int before = window->views().messages->count();
        if (!test::dropUrls(window, { QUrl::fromLocalFile(path) }))
            return QStringLiteral("drop not accepted");
        if (!failed.wait(30000))
            return QStringLiteral("no refusal");
        if (window->views().model->layerModel()->graph() != graph || window->document()->plan() != plan)
            return QStringLiteral("the previous model was replaced");
        if (window->document()->isBusy())
            return QStringLiteral("still busy");
        return window->views().messages->text(before);
    }

private Q_SLOTS:
    void droppedBadFilesKeepThePreviousModel()
    {
        auto window = windowWithModel();
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        // A directory.
        QCOMPARE(dropRefused(window.get(), dir.path()),
            dir.path() + QStringLiteral(":1:1: error: is a directory, expected a Model Zoo params YAML file"));
        // A FIFO no one writes to: refused at once, the window never waits on it (a blocking
        // open would hang this test until its watchdog).
        const QString fifo = dir.filePath(QStringLiteral("pipe.yaml"));
        QCOMPARE(::mkfifo(QFile::encodeName(fifo).constData(), 0600), 0);
        QCOMPARE(dropRefused(window.get(), fifo),
            fifo + QStringLiteral(":1:1: error: is a FIFO (named pipe), expected a Model Zoo params YAML file"));
        // A binary file (NUL bytes and invalid UTF-8).
        const QString binary = QStringLiteral(WAFERSCOPE_SOURCE_DIR "/tests/data/bad/binary_garbage.yaml");
        const QString binaryError = dropRefused(window.get(), binary);
        QVERIFY2(binaryError.startsWith(binary + QStringLiteral(":")) && binaryError.contains(QStringLiteral("error")),
            qPrintable(binaryError));
        // 100 MB of valid YAML: a real params file followed by comments. Refused by its size
        // before it is read.
        const QString large = dir.filePath(QStringLiteral("large.yaml"));
        {
            QFile file(large);
            QVERIFY(file.open(QIODevice::WriteOnly));
            QFile sample(QStringLiteral(WAFERSCOPE_SOURCE_DIR "/samples/gpt2_small.yaml"));
            QVERIFY(sample.open(QIODevice::ReadOnly));
            file.write(sample.readAll());
            const QByteArray comments = QByteArray("# padding\n").repeated(100000);
            while (file.size() < 100'000'000)
                file.write(comments);
        }
        const QString largeError = dropRefused(window.get(), large);
        QVERIFY2(largeError.startsWith(large + QStringLiteral(":1:1: error: file is 10")), qPrintable(largeError));
        QVERIFY2(largeError.contains(QStringLiteral("is at most")), qPrintable(largeError));
        QCOMPARE(window->views().model->layerModel()->graph()->config.family, core::ModelConfig::Family::FcMnist);
    }

    void fileDeletedWhileLoadingLoadsOrIsRefusedCleanly()
    {
        auto window = windowWithModel();
        QTemporaryDir dir;
        const QString sample = QStringLiteral(WAFERSCOPE_SOURCE_DIR "/samples/gpt3_xl.yaml");
        {
            // Deleted after the load was asked for and before its worker reads it (the pool's
            // threads are held until then): a located error, and the old model stays.
            const QString path = dir.filePath(QStringLiteral("queued.yaml"));
            QVERIFY(QFile::copy(sample, path));
            QThreadPool* pool = QThreadPool::globalInstance();
            QSemaphore started;
            QSemaphore release;
            for (int i = 0; i < pool->maxThreadCount(); ++i)
                pool->start([&] {
                    started.release();
                    release.acquire();
                });
            started.acquire(pool->maxThreadCount());
            QSignalSpy failed(window->document(), &ui::Document::loadFailed);
            const auto graph = window->views().model->layerModel()->graph();
            window->openFile(path);
            QVERIFY(QFile::remove(path));
            release.release(pool->maxThreadCount());
            QVERIFY(failed.wait(30000));
            QCOMPARE(failed.first().at(1).toString(), path + QStringLiteral(":1:1: error: no such file"));
            QCOMPARE(window->views().model->layerModel()->graph(), graph);
            QCOMPARE(window->views().model->layerModel()->graph()->config.family, core::ModelConfig::Family::FcMnist);
        }
        // Deleted at times spread over the load: either the load read it first (and the model
        // is the new one) or it is a located error and the old model stays; never a crash or a
        // half-loaded model.
        for (int delayMs : { 0, 1, 5, 20 }) {
            const QString path = dir.filePath(QStringLiteral("gpt3_xl_%1.yaml").arg(delayMs));
            QVERIFY(QFile::copy(sample, path));
            const auto graph = window->views().model->layerModel()->graph();
            QSignalSpy loaded(window->document(), &ui::Document::modelChanged);
            QSignalSpy failed(window->document(), &ui::Document::loadFailed);
            QSignalSpy settled(window.get(), &ui::MainWindow::settled);
            window->openFile(path);
            QTest::qWait(delayMs);
            QVERIFY(QFile::remove(path));
            QVERIFY(settled.count() > 0 || settled.wait(30000)); // it may have settled during the wait
            if (loaded.count() == 1) {
                QCOMPARE(window->views().model->layerModel()->graph()->config.family, core::ModelConfig::Family::Gpt3);
            } else {
                QCOMPARE(failed.count(), 1);
                QCOMPARE(window->views().model->layerModel()->graph(), graph);
                QVERIFY(failed.first().at(1).toString().startsWith(path + QStringLiteral(":1:1: error: ")));
            }
        }
    }

    void oldOrDamagedLayoutGivesTheDefault()
    {
        QTemporaryDir dir;
        const QString ini = dir.filePath(QStringLiteral("waferscope.ini"));
        QByteArray oldLayout;
        {
            // A layout saved by an older WaferScope (the previous layout version), with a dock
            // moved, and the geometry of a window.
            auto window = test::makeWindow();
            auto* layers = window->findChild<QDockWidget*>(QStringLiteral("layersDock"));
            QVERIFY(layers);
            window->addDockWidget(Qt::RightDockWidgetArea, layers);
            oldLayout = window->saveState(ui::kLayoutVersion - 1);
        }
        const QList<QPair<QByteArray, QString>> layouts { { oldLayout, QStringLiteral("an older version") },
            { QByteArray("\x00\x01garbage", 9), QStringLiteral("damaged") },
            { oldLayout.left(oldLayout.size() / 2), QStringLiteral("truncated") } };
        for (const auto& [state, what] : layouts) {
            QSettings settings(ini, QSettings::IniFormat);
            settings.clear();
            settings.setValue(QStringLiteral("session/windowState"), state);
            settings.setValue(QStringLiteral("session/geometry"), QByteArray("nonsense"));
            auto window = test::makeWindow();
            window->restoreSession(settings);
            auto* layers = window->findChild<QDockWidget*>(QStringLiteral("layersDock"));
            QVERIFY2(window->dockWidgetArea(layers) == Qt::BottomDockWidgetArea, qPrintable(what));
            ui::MessagePanel* messages = window->views().messages;
            QVERIFY2(messages->count() > 0
                    && messages->text(messages->count() - 1).contains(QStringLiteral("using the default layout")),
                qPrintable(what));
        }
    }

    void exportHashesTheBytesThatWereLoaded()
    {
        // The file is edited and then deleted after loading: the report is still written, and
        // its manifest hashes the bytes that were simulated, not what the disk holds now.
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("fc_mnist.yaml"));
        QVERIFY(QFile::copy(QStringLiteral(WAFERSCOPE_SOURCE_DIR "/samples/fc_mnist.yaml"), path));
        QFile original(path);
        QVERIFY(original.open(QIODevice::ReadOnly));
        const QByteArray loadedHash = QCryptographicHash::hash(original.readAll(), QCryptographicHash::Sha256).toHex();
        original.close();
        auto window = test::makeWindow();
        QSignalSpy settled(window.get(), &ui::MainWindow::settled);
        window->openFile(path);
        QVERIFY(settled.wait(30000));
        QVERIFY(window->document()->run() != nullptr);
        QFile edited(path);
        QVERIFY(edited.open(QIODevice::WriteOnly | QIODevice::Append));
        edited.write("# edited after loading\n");
        edited.close();
        QVERIFY(QFile::remove(path));
        const QString target = dir.filePath(QStringLiteral("report"));
        QSignalSpy exported(window.get(), &ui::MainWindow::reportExported);
        window->exportReport(target);
        QVERIFY(exported.wait(60000));
        QCOMPARE(exported.first().at(1).toString(), QString());
        QFile report(target + QStringLiteral("/report.json"));
        QVERIFY(report.open(QIODevice::ReadOnly));
        const QJsonObject input
            = QJsonDocument::fromJson(report.readAll())[QStringLiteral("manifest")][QStringLiteral("input")].toObject();
        QCOMPARE(input[QStringLiteral("sha256")].toString().toLatin1(), loadedHash);
        QCOMPARE(input[QStringLiteral("path")].toString(), path);
    }

    void exportToADirectoryAnotherRunWritesIsRefusedAtOnce()
    {
        auto window = test::makeWindow();
        QSignalSpy settled(window.get(), &ui::MainWindow::settled);
        window->openFile(QStringLiteral(WAFERSCOPE_SOURCE_DIR "/samples/fc_mnist.yaml"));
        QVERIFY(settled.wait(30000));
        QTemporaryDir dir;
        const QString target = dir.filePath(QStringLiteral("report"));
        QVERIFY(QDir().mkpath(target));
        QFile old(target + QStringLiteral("/report.json"));
        QVERIFY(old.open(QIODevice::WriteOnly));
        old.write("{\"old\": true}");
        old.close();
        // Another writer (here a lock this process takes, as `run --model_dir` would) holds the
        // directory: the export is refused before it sweeps or stages anything.
        core::Expected<core::report::RunDirectoryLock> held
            = core::report::RunDirectoryLock::acquire(target.toStdString());
        QVERIFY(held);
        const int messagesBefore = window->views().messages->count();
        QSignalSpy exported(window.get(), &ui::MainWindow::reportExported);
        window->exportReport(target);
        QVERIFY(exported.wait(30000));
        const QString refusal = exported.first().at(1).toString();
        QVERIFY2(
            refusal.startsWith(target + QStringLiteral(": error: another WaferScope run is writing this directory")),
            qPrintable(refusal));
        QCOMPARE(window->views().messages->count(), messagesBefore + 1);
        QCOMPARE(window->views().messages->text(messagesBefore), refusal);
        QVERIFY(!window->document()->isBusy());
        QCOMPARE(QDir(target).entryList(QDir::Files | QDir::Hidden),
            (QStringList { QStringLiteral(".waferscope.lock"), QStringLiteral("report.json") }));
        QVERIFY(old.open(QIODevice::ReadOnly));
        QCOMPARE(old.readAll(), QByteArray("{\"old\": true}"));
        old.close();
        // Once the other writer is done, the same export writes the directory.
        std::move(held).value().release();
        exported.clear();
        window->exportReport(target);
        QVERIFY(exported.wait(60000));
        QCOMPARE(exported.first().at(1).toString(), QString());
        QVERIFY(QDir(target).exists(QStringLiteral("report.pdf")));
        QVERIFY(!QDir(target).exists(QStringLiteral(".waferscope.lock")));
    }

    void stopDuringExportReplacesNothing()
    {
        // GPT-3 XL on 16 CS-2: the trace alone is tens of MB, so Stop lands while it is written.
        auto window = test::makeWindow();
        QVERIFY(window->document()->selectSystem(QStringLiteral("cs2")));
        QVERIFY(window->document()->setNumSystems(16).isEmpty());
        QSignalSpy settled(window.get(), &ui::MainWindow::settled);
        window->openFile(QStringLiteral(WAFERSCOPE_SOURCE_DIR "/samples/gpt3_xl.yaml"));
        QVERIFY(settled.wait(60000));
        QTemporaryDir dir;
        const QString target = dir.filePath(QStringLiteral("report"));
        QVERIFY(QDir().mkpath(target));
        QFile old(target + QStringLiteral("/report.json"));
        QVERIFY(old.open(QIODevice::WriteOnly));
        old.write("{\"old\": true}");
        old.close();

        QSignalSpy exported(window.get(), &ui::MainWindow::reportExported);
        window->exportReport(target);
        QVERIFY(window->document()->isBusy());
        QElapsedTimer stopped;
        stopped.start();
        window->document()->cancel();
        QVERIFY(exported.wait(30000));
        qInfo("export stopped %lld ms after Stop", static_cast<long long>(stopped.elapsed()));
        QCOMPARE(exported.first().at(1).toString(), ui::reportCancelledMessage(target));
        QVERIFY(!window->document()->isBusy());
        // Only the old file, unchanged, and no temporary.
        QCOMPARE(QDir(target).entryList(QDir::Files | QDir::Hidden), QStringList { QStringLiteral("report.json") });
        QVERIFY(old.open(QIODevice::ReadOnly));
        QCOMPARE(old.readAll(), QByteArray("{\"old\": true}"));

        // Exported again without Stop, it writes all seven files, a TensorBoard event file among them.
        exported.clear();
        window->exportReport(target);
        QVERIFY(exported.wait(60000));
        QCOMPARE(exported.first().at(1).toString(), QString());
        QCOMPARE(QDir(target).entryList(QDir::Files | QDir::Hidden).size(), 7);
        QCOMPARE(QDir(target).entryList({ QStringLiteral("events.out.tfevents.*.waferscope") }, QDir::Files).size(), 1);
    }
};

QTEST_MAIN(TestGuiFaults)
#include "test_guifaults.moc"
