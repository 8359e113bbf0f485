// The wafer view's coordinate math, checked against hand-computed positions.
#include "ui/wafer/waferviewport.h"

#include <QTest>

using waferscope::ui::WaferViewport;

class TestWaferViewport : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void fitCentresTheWholeFabric()
    {
        WaferViewport viewport;
        viewport.setFabricSize(757, 996);
        viewport.setWidgetSize(QSizeF(1032, 1028)); // 1000 x 996 inside the 16 px margins
        viewport.fit();
        // Height binds: 996 px for 996 PEs.
        QCOMPARE(viewport.pixelsPerPe(), 1.0);
        QCOMPARE(viewport.peToPixel(QPointF(0, 0)), QPointF((1032 - 757) / 2.0, 16));
        QCOMPARE(viewport.visiblePes(), QRect(0, 0, 757, 996));
    }

    void peUnderPixelAndBack()
    {
        WaferViewport viewport;
        viewport.setFabricSize(10, 10);
        viewport.setWidgetSize(QSizeF(132, 132));
        viewport.fit(); // 10 px per PE, origin (16, 16)
        QCOMPARE(viewport.pixelsPerPe(), 10.0);
        QCOMPARE(viewport.peAt(QPointF(16, 16)), std::optional<QPoint>(QPoint(0, 0)));
        QCOMPARE(viewport.peAt(QPointF(35.9, 16)), std::optional<QPoint>(QPoint(1, 0)));
        QCOMPARE(viewport.peAt(QPointF(115.9, 115.9)), std::optional<QPoint>(QPoint(9, 9)));
        QVERIFY(!viewport.peAt(QPointF(15.9, 50)).has_value());
        QVERIFY(!viewport.peAt(QPointF(116, 50)).has_value());
        QCOMPARE(viewport.peRect(3, 4), QRectF(46, 56, 10, 10));
    }

    void zoomKeepsThePointUnderTheCursor()
    {
        WaferViewport viewport;
        viewport.setFabricSize(100, 100);
        viewport.setWidgetSize(QSizeF(232, 232));
        viewport.fit(); // 2 px per PE
        const QPointF cursor(77, 141);
        const QPointF before = viewport.pixelToPe(cursor);
        viewport.zoomAt(cursor, 4.0);
        QCOMPARE(viewport.pixelsPerPe(), 8.0);
        const QPointF after = viewport.pixelToPe(cursor);
        QVERIFY(qAbs(after.x() - before.x()) < 1e-9);
        QVERIFY(qAbs(after.y() - before.y()) < 1e-9);
    }

    void zoomIsClamped()
    {
        WaferViewport viewport;
        viewport.setFabricSize(100, 100);
        viewport.setWidgetSize(QSizeF(232, 232));
        viewport.fit();
        viewport.zoomAt(QPointF(0, 0), 1e6);
        QCOMPARE(viewport.pixelsPerPe(), WaferViewport::kMaxPixelsPerPe);
        viewport.zoomAt(QPointF(0, 0), 1e-6);
        QCOMPARE(viewport.pixelsPerPe(), 1.0); // half the fit scale
    }

    void panShiftsTheVisiblePes()
    {
        WaferViewport viewport;
        viewport.setFabricSize(100, 100);
        viewport.setWidgetSize(QSizeF(232, 232));
        viewport.fit();
        viewport.zoomAt(QPointF(16, 16), 5.0); // 10 px per PE, PE (0,0) stays at (16,16)
        QCOMPARE(viewport.visiblePes(), QRect(0, 0, 22, 22)); // 216 px / 10 = 21.6 -> 22 PEs
        viewport.panBy(QPointF(-100, -50));
        QCOMPARE(viewport.visiblePes().topLeft(), QPoint(8, 3));
    }
};

QTEST_MAIN(TestWaferViewport)
#include "test_waferviewport.moc"
