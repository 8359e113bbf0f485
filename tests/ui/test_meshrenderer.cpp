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
};

QTEST_MAIN(TestMeshRenderer)
#include "test_meshrenderer.moc"
