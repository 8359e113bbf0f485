// The GUI shell on the offscreen platform: system selection, cluster limits, drag and drop,
// hover, the screenshot path and the launch options.
#include "ui/hardwaretablemodel.h"
#include "ui/launchoptions.h"
#include "ui/layertablemodel.h"
#include "ui/mainwindow.h"
#include "ui/messagepanel.h"
#include "ui/modelloadcontroller.h"
#include "ui/modelpanel.h"
#include "ui/screenshot.h"
#include "ui/systempanel.h"
#include "ui/waferview.h"

#include "core/hardware/builtinpresets.h"

#include <QMimeData>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>
#include <QUrl>

using namespace waferscope;

class TestMainWindow : public QObject {
    Q_OBJECT

    std::unique_ptr<ui::MainWindow> makeWindow()
    {
        core::Expected<std::vector<core::SystemSpec>> systems = core::loadBuiltinPresets();
        if (!systems)
            qFatal("%s", systems.error().format().c_str());
        auto window = std::make_unique<ui::MainWindow>(std::move(systems).value());
        window->resize(1400, 900);
        window->show();
        if (!QTest::qWaitForWindowExposed(window.get()))
            qWarning("window not exposed");
        return window;
    }

    static void drop(QWidget* target, const QList<QUrl>& urls)
    {
        auto* mime = new QMimeData;
        mime->setUrls(urls);
        const QPointF at(target->width() / 2.0, target->height() / 2.0);
        QDragEnterEvent enter(at.toPoint(), Qt::CopyAction, mime, Qt::LeftButton, Qt::NoModifier);
        QApplication::sendEvent(target, &enter);
        QVERIFY(enter.isAccepted());
        QDropEvent dropEvent(at, Qt::CopyAction, mime, Qt::LeftButton, Qt::NoModifier);
        QApplication::sendEvent(target, &dropEvent);
        QVERIFY(dropEvent.isAccepted());
        delete mime;
    }

private Q_SLOTS:
    void systemSelectionDrivesViewAndPanel()
    {
        auto window = makeWindow();
        QVERIFY(window->selectSystem(QStringLiteral("cs2")));
        QCOMPARE(window->waferView()->scene().fabricWidth, 757);
        QCOMPARE(window->waferView()->scene().fabricHeight, 996);
        QCOMPARE(window->waferView()->scene().usable, QRect(4, 1, 750, 994));
        QVERIFY(window->selectSystem(QStringLiteral("cs3")));
        QCOMPARE(window->waferView()->scene().fabricWidth, 762);
        QCOMPARE(window->waferView()->scene().fabricHeight, 1172);
        const ui::HardwareTableModel* model = window->systemPanel()->model();
        QVERIFY(model->rowCount() > 10);
        QCOMPARE(model->index(0, ui::HardwareTableModel::ValueColumn).data().toString(), QStringLiteral("WSE-3"));
        QVERIFY(!window->selectSystem(QStringLiteral("cs9")));
        QCOMPARE(window->currentSystem().name, std::string("cs3"));
    }

    void clusterSizeFollowsTheGeneration()
    {
        auto window = makeWindow();
        QVERIFY(window->selectSystem(QStringLiteral("cs2")));
        QVERIFY(window->setNumSystems(192).isEmpty());
        QCOMPARE(window->numSystems(), 192);
        QVERIFY(!window->setNumSystems(193).isEmpty());
        QVERIFY(window->selectSystem(QStringLiteral("cs1")));
        QCOMPARE(window->numSystems(), 1); // clamped: CS-1 has no SwarmX
        QVERIFY(window->setNumSystems(2).contains(QStringLiteral("no SwarmX")));
    }

    void droppedModelLoadsOffTheGuiThreadIntoTheModelPanel()
    {
        auto window = makeWindow();
        const QString path = QStringLiteral(WAFERSCOPE_SOURCE_DIR "/samples/gpt3_xl.yaml");
        QSignalSpy loaded(window->modelLoader(), &ui::ModelLoadController::loaded);
        drop(window.get(), { QUrl::fromLocalFile(path) });
        QVERIFY(loaded.wait(20000));
        const ui::LayerTableModel* layers = window->modelPanel()->layerModel();
        QVERIFY(layers->graph() != nullptr);
        // GPT-3 XL: 24 blocks of 10 ops, embedding, positions, final norm, head and loss.
        QCOMPARE(layers->rowCount(), 24 * 10 + 5);
        QCOMPARE(layers->graph()->totalParams, std::int64_t(1'315'723'264)); // closed form in the sample's header
        QVERIFY(window->modelPanel()->summaryText().contains(QStringLiteral("1,315,723,264")));
        QVERIFY(window->windowTitle().startsWith(QStringLiteral("gpt3_xl.yaml")));
    }

    void refusedFileKeepsThePreviousModel()
    {
        auto window = makeWindow();
        QSignalSpy loaded(window->modelLoader(), &ui::ModelLoadController::loaded);
        QSignalSpy failed(window->modelLoader(), &ui::ModelLoadController::failed);
        window->openFile(QStringLiteral(WAFERSCOPE_SOURCE_DIR "/samples/fc_mnist.yaml"));
        QVERIFY(loaded.wait(20000));
        const QString bad
            = QStringLiteral(WAFERSCOPE_SOURCE_DIR "/tests/data/bad/legacy_num_heads_not_dividing_hidden.yaml");
        const int before = window->messagePanel()->count();
        window->openFile(bad);
        QVERIFY(failed.wait(20000));
        QCOMPARE(window->messagePanel()->text(before),
            bad + QStringLiteral(":15:16: error: num_heads must divide hidden_size (got 4096 and 30)"));
        QCOMPARE(window->modelPanel()->layerModel()->graph()->config.family, core::ModelConfig::Family::FcMnist);
        QVERIFY(window->modelPanel()->statusText().contains(QStringLiteral("unchanged")));
    }

    void droppedDirectoryAndMissingFileAreLocatedErrors()
    {
        auto window = makeWindow();
        QTemporaryDir dir;
        QSignalSpy failed(window->modelLoader(), &ui::ModelLoadController::failed);
        const int before = window->messagePanel()->count();
        window->openFile(dir.path());
        QVERIFY(failed.wait(20000));
        window->openFile(dir.filePath("gone.yaml"));
        QVERIFY(failed.wait(20000));
        QCOMPARE(window->messagePanel()->count(), before + 2);
        QCOMPARE(window->messagePanel()->text(before),
            dir.path() + QStringLiteral(":1:1: error: is a directory, expected a Model Zoo params YAML file"));
        QCOMPARE(window->messagePanel()->text(before + 1),
            dir.filePath("gone.yaml") + QStringLiteral(":1:1: error: no such file"));
    }

    void onlyTheNewestRequestIsDelivered()
    {
        auto window = makeWindow();
        QSignalSpy loaded(window->modelLoader(), &ui::ModelLoadController::loaded);
        window->openFile(QStringLiteral(WAFERSCOPE_SOURCE_DIR "/samples/gpt_1t_synthetic.yaml"));
        window->openFile(QStringLiteral(WAFERSCOPE_SOURCE_DIR "/samples/fc_mnist.yaml"));
        QVERIFY(loaded.wait(20000));
        QTest::qWait(300); // give the first job time to finish; its result must be dropped
        QCOMPARE(loaded.count(), 1);
        QVERIFY(loaded.first().at(1).toString().endsWith(QStringLiteral("fc_mnist.yaml")));
    }

    void hoverReportsThePeUnderTheMouse()
    {
        auto window = makeWindow();
        QVERIFY(window->selectSystem(QStringLiteral("cs2")));
        ui::WaferView* view = window->waferView();
        QSignalSpy spy(view, &ui::WaferView::hoveredPeChanged);
        const QPointF pixel = view->viewport().peToPixel(QPointF(100.5, 200.5));
        QTest::mouseMove(view, pixel.toPoint());
        QVERIFY(!spy.isEmpty());
        const auto pe = spy.last().at(0).value<std::optional<ui::WaferPe>>();
        QVERIFY(pe.has_value());
        QCOMPARE(pe->wafer, 0);
        // One PE is at least half a pixel here, so rounding the pixel can move one PE at most.
        QVERIFY(qAbs(pe->pe.x() - 100) <= 1 && qAbs(pe->pe.y() - 200) <= 1);
    }

    void screenshotShowsTheMesh()
    {
        auto window = makeWindow();
        QVERIFY(window->selectSystem(QStringLiteral("cs2")));
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("shot.png"));
        QCOMPARE(ui::saveScreenshot(window.get(), path), QString());
        const QImage image(path);
        QCOMPARE(image.size(), window->size() * window->devicePixelRatio());
        // The PE at the centre of the usable rectangle is drawn in the usable colour.
        ui::WaferView* view = window->waferView();
        const QPoint inView = view->viewport().peToPixel(QPointF(378.5, 497.5)).toPoint();
        const QPoint inWindow = view->mapTo(window.get(), inView);
        QCOMPARE(image.pixelColor(inWindow), ui::MeshPalette().usablePe);
        QVERIFY(!ui::saveScreenshot(window.get(), QStringLiteral("/nonexistent-dir/x.png")).isEmpty());
    }

    void launchOptions()
    {
        QString error;
        ui::LaunchOptions options = ui::LaunchOptions::parse(
            { "waferscope", "model.yaml", "--system", "cs3", "--num_csx", "4", "--step", "5", "--screenshot", "a.png" },
            &error);
        QVERIFY2(error.isEmpty(), qPrintable(error));
        QCOMPARE(options.file, QStringLiteral("model.yaml"));
        QCOMPARE(options.system, QStringLiteral("cs3"));
        QCOMPARE(options.numCsx, 4);
        QCOMPARE(options.step, std::optional<int>(5));
        QCOMPARE(options.screenshot, QStringLiteral("a.png"));

        ui::LaunchOptions::parse({ "waferscope", "--num_csx", "zero" }, &error);
        QVERIFY(error.contains(QStringLiteral("--num_csx")));
        ui::LaunchOptions::parse({ "waferscope", "--step", "-1" }, &error);
        QVERIFY(error.contains(QStringLiteral("--step")));
        ui::LaunchOptions::parse({ "waferscope", "a.yaml", "b.yaml" }, &error);
        QVERIFY(error.contains(QStringLiteral("at most one FILE")));
        ui::LaunchOptions::parse({ "waferscope", "--frobnicate" }, &error);
        QVERIFY(!error.isEmpty());
    }
};

QTEST_MAIN(TestMainWindow)
#include "test_mainwindow.moc"
