// renderMesh() pixel by pixel: which pixel shows which PE class is computed here from the
// viewport arithmetic, independently of the renderer's lookup tables.
#include "ui/meshrenderer.h"

#include <QTest>

using namespace waferscope::ui;

class TestMeshRenderer : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void wholeWaferShowsUsableAndMarginPes()
    {
        // The CS-2 fabric at 1 px per PE: every pixel is one PE.
        const MeshScene scene { 757, 996, QRect(4, 1, 750, 994) };
        WaferViewport viewport;
        viewport.setFabricSize(757, 996);
        viewport.setWidgetSize(QSizeF(789, 1028));
        viewport.fit();
        QCOMPARE(viewport.pixelsPerPe(), 1.0);
        const MeshPalette palette;
        const QImage image = renderMesh(scene, viewport, palette);
        QCOMPARE(image.size(), QSize(789, 1028));
        const QPoint origin(16, 16);
        QCOMPARE(image.pixelColor(origin + QPoint(0, 0)), palette.marginPe); // west I/O column
        QCOMPARE(image.pixelColor(origin + QPoint(3, 500)), palette.marginPe);
        QCOMPARE(image.pixelColor(origin + QPoint(4, 500)), palette.usablePe);
        QCOMPARE(image.pixelColor(origin + QPoint(753, 994)), palette.usablePe);
        QCOMPARE(image.pixelColor(origin + QPoint(754, 500)), palette.marginPe); // east I/O columns
        QCOMPARE(image.pixelColor(origin + QPoint(400, 0)), palette.marginPe); // north row
        QCOMPARE(image.pixelColor(origin + QPoint(400, 995)), palette.marginPe); // south row
        QCOMPARE(image.pixelColor(QPoint(5, 5)), palette.background);
        QCOMPARE(image.pixelColor(QPoint(788, 1027)), palette.background);

        int usable = 0;
        for (int y = 0; y < image.height(); ++y)
            for (int x = 0; x < image.width(); ++x)
                usable += image.pixelColor(x, y) == palette.usablePe;
        QCOMPARE(usable, 750 * 994);
    }

    void zoomedInPesAreTilesWithGaps()
    {
        const MeshScene scene { 4, 3, QRect(1, 0, 2, 3) };
        WaferViewport viewport;
        viewport.setFabricSize(4, 3);
        viewport.setWidgetSize(QSizeF(32 + 4 * 10, 32 + 3 * 10));
        viewport.fit(); // 10 px per PE: 9 px tile + 1 px gap
        QCOMPARE(viewport.pixelsPerPe(), 10.0);
        const MeshPalette palette;
        const QImage image = renderMesh(scene, viewport, palette);
        for (int pe = 0; pe < 4; ++pe) {
            const int left = 16 + pe * 10;
            const QColor expected = (pe == 1 || pe == 2) ? palette.usablePe : palette.marginPe;
            for (int offset = 0; offset < 9; ++offset)
                QCOMPARE(image.pixelColor(left + offset, 20), expected);
            QCOMPARE(image.pixelColor(left + 9, 20), palette.background);
        }
    }

    void placedRegionsCoverExactlyTheirPes()
    {
        // 1 px per PE on a 40 x 30 fabric: every pixel is one PE, so each region's colour must
        // cover exactly its area, unplaced usable PEs the idle colour, margins the margin colour.
        MeshScene scene(40, 30, QRect(2, 1, 36, 28));
        const std::vector<PlacedRegion> regions { { 0, QRect(2, 1, 10, 5), QColor(200, 40, 40), QString(), 0 },
            { 0, QRect(12, 1, 3, 20), QColor(40, 200, 40), QString(), 1 } };
        scene.regions = std::make_shared<const std::vector<PlacedRegion>>(regions);
        WaferViewport viewport;
        viewport.setFabricSize(scene.extent().width(), scene.extent().height());
        viewport.setWidgetSize(QSizeF(40 + 32, 30 + 32));
        viewport.fit();
        QCOMPARE(viewport.pixelsPerPe(), 1.0);
        const MeshPalette palette;
        const QImage image = renderMesh(scene, viewport, palette);
        int red = 0, green = 0, idle = 0, margin = 0;
        for (int y = 0; y < image.height(); ++y)
            for (int x = 0; x < image.width(); ++x) {
                const QRgb pixel = image.pixel(x, y);
                red += pixel == regions[0].color.rgb();
                green += pixel == regions[1].color.rgb();
                idle += pixel == palette.unplacedPe.rgb();
                margin += pixel == palette.marginPe.rgb();
            }
        QCOMPARE(red, 10 * 5);
        QCOMPARE(green, 3 * 20);
        QCOMPARE(idle, 36 * 28 - 10 * 5 - 3 * 20);
        QCOMPARE(margin, 40 * 30 - 36 * 28);
        QCOMPARE(image.pixel(16 + 2, 16 + 1), regions[0].color.rgb()); // region 0's north-west PE
        QCOMPARE(scene.regionAt({ 0, QPoint(14, 20) }), 1);
        QCOMPARE(scene.regionAt({ 0, QPoint(14, 21) }), -1);
    }

    void wafersAreLaidOutInAGridWithGaps()
    {
        // Three CS-3 wafers: a 2 x 2 grid with one empty cell; gaps of 762 / 16 = 47 PEs.
        MeshScene scene(762, 1172, QRect(4, 1, 755, 1170));
        scene.wafers = 3;
        QCOMPARE(scene.columns(), 2);
        QCOMPARE(scene.gap(), 47);
        QCOMPARE(scene.extent(), QSize(2 * 762 + 47, 2 * 1172 + 47));
        QCOMPARE(scene.waferOrigin(1), QPoint(762 + 47, 0));
        QCOMPARE(scene.waferOrigin(2), QPoint(0, 1172 + 47));
        for (int wafer = 0; wafer < 3; ++wafer)
            for (const QPoint pe : { QPoint(0, 0), QPoint(761, 1171), QPoint(300, 500) })
                QCOMPARE(scene.locate(scene.waferOrigin(wafer) + pe), std::optional<WaferPe>(WaferPe { wafer, pe }));
        QVERIFY(!scene.locate(QPoint(762, 10)).has_value()); // the gap east of wafer 0
        QVERIFY(!scene.locate(QPoint(10, 1172 + 20)).has_value()); // the gap under it
        QVERIFY(!scene.locate(QPoint(762 + 47 + 5, 1172 + 47 + 5)).has_value()); // the empty cell
        QVERIFY(!scene.locate(QPoint(-1, 0)).has_value());

        // Rendered, the gap and the empty cell are background; each wafer shows its margins.
        WaferViewport viewport;
        viewport.setFabricSize(scene.extent().width(), scene.extent().height());
        viewport.setWidgetSize(QSizeF(scene.extent().width() + 32, scene.extent().height() + 32));
        viewport.fit();
        QCOMPARE(viewport.pixelsPerPe(), 1.0);
        const MeshPalette palette;
        const QImage image = renderMesh(scene, viewport, palette);
        const QPoint origin(16, 16);
        QCOMPARE(image.pixelColor(origin + QPoint(762 + 10, 500)), palette.background);
        QCOMPARE(image.pixelColor(origin + QPoint(762 + 47 + 100, 1172 + 47 + 100)), palette.background);
        QCOMPARE(image.pixelColor(origin + scene.waferOrigin(1) + QPoint(0, 500)), palette.marginPe);
        QCOMPARE(image.pixelColor(origin + scene.waferOrigin(2) + QPoint(4, 500)), palette.usablePe);
    }
};

QTEST_MAIN(TestMeshRenderer)
#include "test_meshrenderer.moc"
