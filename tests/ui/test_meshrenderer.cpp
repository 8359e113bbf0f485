// renderMesh() pixel by pixel: which pixel shows which PE class is computed here from the
// viewport arithmetic, independently of the renderer's lookup tables.
#include "ui/wafer/meshrenderer.h"
#include "ui/wafer/placementoverlay.h"

#include <QTest>

#include <cmath>
#include <limits>

using namespace waferscope::ui;

namespace {

// A viewport that fits a fabric of `pes` at `pixelsPerPe`: fit() keeps 16 px of margin on each
// side, so PE (x, y) starts at pixel (16 + x * pixelsPerPe, 16 + y * pixelsPerPe).
WaferViewport fittedViewport(QSize pes, double pixelsPerPe)
{
    WaferViewport viewport;
    viewport.setFabricSize(pes.width(), pes.height());
    viewport.setWidgetSize(QSizeF(32 + pixelsPerPe * pes.width(), 32 + pixelsPerPe * pes.height()));
    viewport.fit();
    return viewport;
}

} // namespace

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
        const WaferViewport viewport = fittedViewport(QSize(4, 3), 10); // 9 px tile + 1 px gap
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
        const WaferViewport viewport = fittedViewport(scene.extent(), 1);
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

    void stackedTiersDrawOnePerBandAndAddTheirSram()
    {
        // A stacked plan on one 10 x 8 wafer: rows 0-3 are a band of tiers 0 and 1 (two regions
        // each, tier 1 mirrored), rows 4-7 a band of tier 2 alone.
        waferscope::core::ExecutionPlan plan;
        plan.mode = waferscope::core::ExecutionMode::Inference;
        plan.stackedLayers = true;
        plan.fabricWidth = 10;
        plan.fabricHeight = 8;
        plan.usable = { 0, 0, 10, 8 };
        plan.sramPerPeBytes = 1000;
        const auto add = [&](int tier, waferscope::core::Rect rect, std::int64_t sram) {
            waferscope::core::Region region;
            region.opName = "op" + std::to_string(plan.regions.size());
            region.layer = tier;
            region.tier = tier;
            region.rect = rect;
            region.sramBytesPerPe = sram;
            plan.regions.push_back(region);
        };
        add(0, { 0, 0, 6, 4 }, 300);
        add(0, { 6, 0, 4, 4 }, 200);
        add(1, { 4, 0, 6, 4 }, 400);
        add(1, { 0, 0, 4, 4 }, 100);
        add(2, { 0, 4, 10, 8 - 4 }, 500);
        const auto drawn = [](const std::vector<PlacedRegion>& placed) {
            std::vector<int> indices;
            for (const PlacedRegion& region : placed)
                indices.push_back(region.planIndex);
            return indices;
        };
        // Each band shows its first tier, or the tier of the region asked for.
        QCOMPARE(drawn(placedRegions(plan, 0)), std::vector<int>({ 0, 1, 4 }));
        QCOMPARE(drawn(placedRegions(plan, 3)), std::vector<int>({ 2, 3, 4 }));
        // The SRAM overlay adds every tier over a PE, drawn or not.
        const MeshField field = sramField(plan, placedRegions(plan, 0), 1);
        const auto at = [&](int x, int y) { return field.pe[0][std::size_t(y * 10 + x)]; };
        QCOMPARE(at(0, 0), 0.3f + 0.1f);
        QCOMPARE(at(5, 2), 0.3f + 0.4f);
        QCOMPARE(at(9, 3), 0.2f + 0.4f);
        QCOMPARE(at(3, 6), 0.5f);
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

    void heatColoursRiseFromDarkToBright()
    {
        // The scale is ordered: luminance grows with the value, the ends are distinct from the
        // background and from each other, and out-of-range values clamp.
        const auto luma = [](QRgb c) { return 0.2126 * qRed(c) + 0.7152 * qGreen(c) + 0.0722 * qBlue(c); };
        for (int i = 1; i <= 20; ++i)
            QVERIFY(luma(heatColor(float(i) / 20.0f)) > luma(heatColor(float(i - 1) / 20.0f)));
        QCOMPARE(heatColor(-3.0f), heatColor(0.0f));
        QCOMPARE(heatColor(7.0f), heatColor(1.0f));
        QCOMPARE(heatColor(std::numeric_limits<float>::quiet_NaN()), heatColor(0.0f));
        QVERIFY(heatColor(0.0f) != MeshPalette().background.rgb());
    }

    void activityColoursEachUsablePeByItsValue()
    {
        // Two wafers of 20 x 10 at 2 px per PE: every pixel's PE follows from the viewport
        // arithmetic, and its colour must be heatColor() of the value set for that PE here.
        MeshScene scene(20, 10, QRect(1, 1, 18, 8));
        scene.wafers = 2;
        scene.overlay = MeshOverlay::Activity;
        auto field = std::make_shared<MeshField>();
        for (int wafer = 0; wafer < 2; ++wafer) {
            std::vector<float> values(200);
            for (int pe = 0; pe < 200; ++pe)
                values[std::size_t(pe)] = float((pe * 7 + wafer * 13) % 101) / 100.0f;
            field->pe.push_back(values);
        }
        scene.field = field;
        const QSize extent = scene.extent();
        const WaferViewport viewport = fittedViewport(extent, 2);
        QCOMPARE(viewport.pixelsPerPe(), 2.0);
        const MeshPalette palette;
        const QImage image = renderMesh(scene, viewport, palette);
        int checked = 0;
        for (int py = 16; py < 16 + 2 * extent.height(); ++py)
            for (int px = 16; px < 16 + 2 * extent.width(); ++px) {
                const QPoint view((px - 16) / 2, (py - 16) / 2);
                const std::optional<WaferPe> pe = scene.locate(view);
                QRgb expected = palette.background.rgb();
                if (pe && scene.usable.contains(pe->pe))
                    expected = heatColor(field->pe[std::size_t(pe->wafer)][std::size_t(pe->pe.y() * 20 + pe->pe.x())]);
                else if (pe)
                    expected = palette.marginPe.rgb();
                if (image.pixel(px, py) != expected)
                    QFAIL(qPrintable(QStringLiteral("pixel (%1, %2)").arg(px).arg(py)));
                ++checked;
            }
        QCOMPARE(checked, 4 * extent.width() * extent.height());
        QCOMPARE(scene.valueAt({ 1, QPoint(3, 2) }), std::optional<float>(field->pe[1][43]));
        // No values for a wafer: its usable PEs are drawn as "no data", not as zero.
        field->pe.pop_back();
        const QImage partial = renderMesh(scene, viewport, palette);
        QCOMPARE(partial.pixel(16 + 2 * (scene.waferOrigin(1).x() + 5), 16 + 2 * 5), palette.unplacedPe.rgb());
    }

    void zoomedInTrafficDrawsEachLinkOnItsSide()
    {
        // One 3 x 3 wafer at 20 px per PE (19 px tile + gap): strips of 0.25 x 19 = 4.75 px on
        // each side carry the load of the PE's link that way; the centre is neutral.
        MeshScene scene(3, 3, QRect(0, 0, 3, 3));
        scene.overlay = MeshOverlay::Traffic;
        auto field = std::make_shared<MeshField>();
        field->pe.push_back(std::vector<float>(9, 0.0f));
        std::vector<float> links(9 * 4, 0.0f);
        const std::size_t centre = 4; // PE (1, 1)
        links[centre * 4 + 0] = 0.1f; // north
        links[centre * 4 + 1] = 0.4f; // south
        links[centre * 4 + 2] = 0.7f; // east
        links[centre * 4 + 3] = 1.0f; // west
        field->links.push_back(links);
        scene.field = field;
        WaferViewport viewport = fittedViewport(QSize(3, 3), 20);
        QCOMPARE(viewport.pixelsPerPe(), 20.0);
        const MeshPalette palette;
        const QImage image = renderMesh(scene, viewport, palette);
        const int left = 16 + 20, top = 16 + 20; // PE (1, 1)'s tile
        QCOMPARE(image.pixel(left + 9, top + 1), heatColor(0.1f)); // north side, middle
        QCOMPARE(image.pixel(left + 9, top + 17), heatColor(0.4f)); // south side
        QCOMPARE(image.pixel(left + 17, top + 9), heatColor(0.7f)); // east side
        QCOMPARE(image.pixel(left + 1, top + 9), heatColor(1.0f)); // west side
        QCOMPARE(image.pixel(left + 9, top + 9), palette.unplacedPe.rgb()); // the PE itself
        QCOMPARE(image.pixel(left + 1, top + 1), palette.unplacedPe.rgb()); // a corner
        QCOMPARE(image.pixel(left + 19, top + 9), palette.background.rgb()); // the gap
        QCOMPARE(image.pixel(16 + 9, 16 + 1), heatColor(0.0f)); // PE (0, 0)'s idle north link
        QCOMPARE(scene.linkAt({ 0, QPoint(1, 1) }, 2), std::optional<float>(0.7f));
        // Zoomed out the same overlay is a heatmap of each PE's busiest link.
        field->pe[0][centre] = 1.0f;
        viewport.zoomAt(QPointF(46, 46), 0.25); // 5 px per PE
        QVERIFY(viewport.pixelsPerPe() < kLinkPixelsPerPe);
        const QImage far = renderMesh(scene, viewport, palette);
        const QPointF middle = viewport.peToPixel(QPointF(1.5, 1.5));
        QCOMPARE(far.pixel(int(middle.x()), int(middle.y())), heatColor(1.0f));
    }

    void trafficThatIsNotModelledIsHatched()
    {
        // A 4 x 4 wafer at 4 px per PE (3 px tile + gap) under the traffic overlay: PE (1, 2)'s
        // load is NaN (its work has no link-load model), so its pixels are stripes, not the
        // heat scale's zero; the measured zero of PE (2, 2) next to it is heatColor(0).
        MeshScene scene(4, 4, QRect(0, 0, 4, 4));
        scene.overlay = MeshOverlay::Traffic;
        auto field = std::make_shared<MeshField>();
        std::vector<float> values(16, 0.0f);
        const float notModelled = std::numeric_limits<float>::quiet_NaN();
        values[2 * 4 + 1] = notModelled;
        field->pe.push_back(values);
        std::vector<float> links(16 * 4, 0.0f);
        std::fill_n(links.begin() + (2 * 4 + 1) * 4, 4, notModelled);
        field->links.push_back(links);
        scene.field = field;
        const MeshPalette palette;
        // The stripes' rule written out here, not taken from the renderer's helper.
        const auto hatched
            = [&](int px, int py) { return ((px + py) % 6 < 2 ? palette.hatch : palette.unplacedPe).rgb(); };
        WaferViewport viewport = fittedViewport(QSize(4, 4), 4);
        QCOMPARE(viewport.pixelsPerPe(), 4.0);
        const QImage image = renderMesh(scene, viewport, palette);
        int stripes = 0;
        for (int py = 16 + 8; py < 16 + 8 + 3; ++py) // PE (1, 2)'s tile
            for (int px = 16 + 4; px < 16 + 4 + 3; ++px) {
                QCOMPARE(image.pixel(px, py), hatched(px, py));
                stripes += hatched(px, py) == palette.hatch.rgb() ? 1 : 0;
            }
        QVERIFY(stripes > 0 && stripes < 9);
        QCOMPARE(image.pixel(16 + 9, 16 + 9), heatColor(0.0f));
        QVERIFY(std::isnan(*scene.valueAt({ 0, QPoint(1, 2) })));
        // Zoomed in to the links, its four sides and its centre are hatched the same way.
        viewport = fittedViewport(QSize(4, 4), 20);
        QCOMPARE(viewport.pixelsPerPe(), 20.0);
        const QImage near = renderMesh(scene, viewport, palette);
        for (const QPoint at : { QPoint(9, 1), QPoint(9, 17), QPoint(17, 9), QPoint(1, 9), QPoint(9, 9) })
            QCOMPARE(near.pixel(16 + 20 + at.x(), 16 + 40 + at.y()), hatched(16 + 20 + at.x(), 16 + 40 + at.y()));
        QCOMPARE(near.pixel(16 + 40 + 9, 16 + 40 + 1), heatColor(0.0f)); // PE (2, 2)'s north link
    }
};

QTEST_MAIN(TestMeshRenderer)
#include "test_meshrenderer.moc"
