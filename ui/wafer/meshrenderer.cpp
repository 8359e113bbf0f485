#include "ui/wafer/meshrenderer.h"

#include <QPainter>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <vector>

namespace waferscope::ui {

int MeshScene::columns() const
{
    // A near-square grid: tall wafers side by side, then further rows.
    return int(std::ceil(std::sqrt(double(std::max(1, wafers)))));
}

int MeshScene::gap() const
{
    return wafers > 1 ? std::max(8, fabricWidth / 16) : 0;
}

QSize MeshScene::extent() const
{
    const int across = columns();
    const int down = (std::max(1, wafers) + across - 1) / across;
    return QSize(across * fabricWidth + (across - 1) * gap(), down * fabricHeight + (down - 1) * gap());
}

QPoint MeshScene::waferOrigin(int wafer) const
{
    return QPoint((wafer % columns()) * (fabricWidth + gap()), (wafer / columns()) * (fabricHeight + gap()));
}

std::optional<WaferPe> MeshScene::locate(QPoint view) const
{
    if (fabricWidth <= 0 || fabricHeight <= 0 || view.x() < 0 || view.y() < 0)
        return std::nullopt;
    const int pitchX = fabricWidth + gap();
    const int pitchY = fabricHeight + gap();
    const QPoint pe(view.x() % pitchX, view.y() % pitchY);
    const int wafer = view.y() / pitchY * columns() + view.x() / pitchX;
    if (pe.x() >= fabricWidth || pe.y() >= fabricHeight || view.x() / pitchX >= columns() || wafer >= wafers)
        return std::nullopt;
    return WaferPe { wafer, pe };
}

int MeshScene::regionAt(const WaferPe& pe) const
{
    if (!regions)
        return -1;
    for (std::size_t i = 0; i < regions->size(); ++i)
        if ((*regions)[i].wafer == pe.wafer && (*regions)[i].rect.contains(pe.pe))
            return int(i);
    return -1;
}

int MeshScene::planIndexAt(const WaferPe& pe) const
{
    const int region = regionAt(pe);
    return region >= 0 ? (*regions)[std::size_t(region)].planIndex : -1;
}

std::optional<float> MeshScene::valueAt(const WaferPe& pe) const
{
    if (!heat() || !field || std::size_t(pe.wafer) >= field->pe.size())
        return std::nullopt;
    const std::vector<float>& values = field->pe[std::size_t(pe.wafer)];
    const std::size_t index = std::size_t(pe.pe.y()) * std::size_t(fabricWidth) + std::size_t(pe.pe.x());
    return index < values.size() ? std::optional<float>(values[index]) : std::nullopt;
}

std::optional<float> MeshScene::linkAt(const WaferPe& pe, int direction) const
{
    if (overlay != MeshOverlay::Traffic || !field || std::size_t(pe.wafer) >= field->links.size() || direction < 0
        || direction > 3)
        return std::nullopt;
    const std::vector<float>& values = field->links[std::size_t(pe.wafer)];
    const std::size_t index
        = (std::size_t(pe.pe.y()) * std::size_t(fabricWidth) + std::size_t(pe.pe.x())) * 4 + std::size_t(direction);
    return index < values.size() ? std::optional<float>(values[index]) : std::nullopt;
}

namespace {

struct ColorStop {
    double at;
    int r, g, b;
};

// A 256-entry table from colour stops (value, colour), interpolated linearly in RGB.
template <std::size_t N>
std::array<QRgb, 256> colorTable(const ColorStop (&stops)[N])
{
    std::array<QRgb, 256> out {};
    for (std::size_t i = 0; i < out.size(); ++i) {
        const double v = double(i) / 255.0;
        std::size_t k = 0;
        while (k + 2 < N && v > stops[k + 1].at)
            ++k;
        const ColorStop& a = stops[k];
        const ColorStop& b = stops[k + 1];
        const double t = std::clamp((v - a.at) / (b.at - a.at), 0.0, 1.0);
        out[i] = qRgb(int(std::lround(a.r + t * (b.r - a.r))), int(std::lround(a.g + t * (b.g - a.g))),
            int(std::lround(a.b + t * (b.b - a.b))));
    }
    return out;
}

const std::array<QRgb, 256>& heatTable()
{
    static constexpr ColorStop kStops[]
        = { { 0.00, 0x3a, 0x0f, 0x5c }, { 0.20, 0x41, 0x3d, 0x8a }, { 0.40, 0x2c, 0x72, 0x8e },
              { 0.60, 0x21, 0xa0, 0x86 }, { 0.80, 0x6c, 0xcd, 0x5a }, { 1.00, 0xfd, 0xe7, 0x25 } };
    static const std::array<QRgb, 256> table = colorTable(kStops);
    return table;
}

// Blue through white to red (ColorBrewer RdBu's ends), symmetric about the middle.
const std::array<QRgb, 256>& divergingTable()
{
    static constexpr ColorStop kStops[] = { { 0.00, 0x21, 0x66, 0xac }, { 0.25, 0x92, 0xc5, 0xde },
        { 0.50, 0xf7, 0xf7, 0xf7 }, { 0.75, 0xf4, 0xa5, 0x82 }, { 1.00, 0xb2, 0x18, 0x2b } };
    static const std::array<QRgb, 256> table = colorTable(kStops);
    return table;
}

// For each pixel column (or row): the view coordinate under its centre, or -1 outside the
// grid or in the gap between tiles.
std::vector<int> viewIndexPerPixel(int pixels, double origin, double pixelsPerPe, int pes, bool tiled)
{
    std::vector<int> index(std::size_t(pixels), -1);
    for (int p = 0; p < pixels; ++p) {
        const double pe = (p + 0.5 - origin) / pixelsPerPe;
        const int whole = int(std::floor(pe));
        if (whole < 0 || whole >= pes)
            continue;
        // The last pixel of each tile is the gap.
        if (tiled && (pe - whole) * pixelsPerPe >= pixelsPerPe - 1.0)
            continue;
        index[std::size_t(p)] = whole;
    }
    return index;
}

// The pixels a view rectangle of PEs covers, clipped to the image.
QRect pixelRect(const WaferViewport& viewport, const QRect& view, const QSize& image)
{
    const QPointF topLeft = viewport.peToPixel(QPointF(view.left(), view.top()));
    const QPointF bottomRight = viewport.peToPixel(QPointF(view.right() + 1, view.bottom() + 1));
    const int x0 = std::max(0, int(std::floor(topLeft.x())));
    const int y0 = std::max(0, int(std::floor(topLeft.y())));
    const int x1 = std::min(image.width(), int(std::ceil(bottomRight.x())));
    const int y1 = std::min(image.height(), int(std::ceil(bottomRight.y())));
    return x1 > x0 && y1 > y0 ? QRect(x0, y0, x1 - x0, y1 - y0) : QRect();
}

void drawCoordinates(QImage& image, const MeshScene& scene, const WaferViewport& viewport, const MeshPalette& palette)
{
    QPainter painter(&image);
    QFont font = painter.font();
    font.setPixelSize(std::max(9, int(viewport.pixelsPerPe() / 5)));
    painter.setFont(font);
    painter.setPen(palette.label);
    const QRect visible = viewport.visiblePes();
    for (int y = visible.top(); y <= visible.bottom(); ++y) {
        for (int x = visible.left(); x <= visible.right(); ++x) {
            const std::optional<WaferPe> pe = scene.locate(QPoint(x, y));
            if (!pe)
                continue;
            const QRectF tile = viewport.peRect(x, y).adjusted(0, 0, -1, -1);
            const bool usable = scene.usable.contains(pe->pe);
            painter.drawText(tile, Qt::AlignCenter,
                QStringLiteral("%1,%2%3").arg(pe->pe.x()).arg(pe->pe.y()).arg(usable ? "" : "\nI/O"));
        }
    }
}

// Outlines, labels and the highlight over the filled regions.
void drawRegionDecorations(
    QImage& image, const MeshScene& scene, const WaferViewport& viewport, const MeshPalette& palette)
{
    QPainter painter(&image);
    QFont font = painter.font();
    font.setPixelSize(11);
    painter.setFont(font);
    const QFontMetrics metrics(font);
    const QRect bounds(QPoint(0, 0), image.size());
    for (std::size_t i = 0; i < scene.regions->size(); ++i) {
        const PlacedRegion& region = (*scene.regions)[i];
        const QRect view = region.rect.translated(scene.waferOrigin(region.wafer));
        const QPointF topLeft = viewport.peToPixel(QPointF(view.left(), view.top()));
        const QPointF bottomRight = viewport.peToPixel(QPointF(view.right() + 1, view.bottom() + 1));
        const QRectF onScreen(topLeft, bottomRight);
        if (!onScreen.intersects(bounds) || onScreen.width() < kOutlinePixels || onScreen.height() < kOutlinePixels)
            continue;
        painter.setPen(QPen(region.color.darker(170), 1));
        painter.setBrush(Qt::NoBrush);
        painter.drawRect(onScreen.adjusted(0, 0, -1, -1));
        // The label sits on a dark plate in the middle of the region's visible part, readable
        // over tiles and any region colour.
        const QRectF shown = onScreen.intersected(QRectF(bounds)).adjusted(3, 2, -3, -2);
        const QSizeF text(metrics.horizontalAdvance(region.label) + 8, metrics.height() + 2);
        if (!region.label.isEmpty() && text.width() <= shown.width() && text.height() <= shown.height()) {
            QRectF plate(QPointF(), text);
            plate.moveCenter(shown.center());
            painter.fillRect(plate, QColor(0, 0, 0, 150));
            painter.setPen(palette.label);
            painter.drawText(plate, Qt::AlignCenter, region.label);
        }
    }
    if (scene.highlighted >= 0 && std::size_t(scene.highlighted) < scene.regions->size()) {
        const PlacedRegion& region = (*scene.regions)[std::size_t(scene.highlighted)];
        const QRect view = region.rect.translated(scene.waferOrigin(region.wafer));
        QRectF onScreen(viewport.peToPixel(QPointF(view.left(), view.top())),
            viewport.peToPixel(QPointF(view.right() + 1, view.bottom() + 1)));
        // A region smaller than a few pixels still gets a visible box around it.
        const QPointF centre = onScreen.center();
        onScreen.setWidth(std::max(onScreen.width(), 7.0));
        onScreen.setHeight(std::max(onScreen.height(), 7.0));
        onScreen.moveCenter(centre);
        painter.setPen(QPen(palette.highlight, 2));
        painter.drawRect(onScreen.adjusted(-1, -1, 1, 1));
    }
}

// The colour table's entry for a value; NaN and negatives take 0, values past 1 take 1.
inline std::size_t heatIndex(float value)
{
    const float v = value >= 0.0f ? (value <= 1.0f ? value : 1.0f) : 0.0f;
    return std::size_t(v * 255.0f + 0.5f);
}

// For each pixel column (or row) inside a tile: which third it falls in when the tile is split
// into a strip, the centre and the other strip (0: west or north, 1: centre, 2: east or south).
std::vector<std::uint8_t> stripPerPixel(int pixels, double origin, double pixelsPerPe)
{
    std::vector<std::uint8_t> strip(std::size_t(pixels), 1);
    const double inner = pixelsPerPe - 1.0; // the tile without its gap
    for (int p = 0; p < pixels; ++p) {
        const double pe = (p + 0.5 - origin) / pixelsPerPe;
        const double within = (pe - std::floor(pe)) * pixelsPerPe;
        strip[std::size_t(p)] = within < kLinkStrip * inner ? 0 : within >= (1.0 - kLinkStrip) * inner ? 2 : 1;
    }
    return strip;
}

} // namespace

QRgb heatColor(float value)
{
    return heatTable()[heatIndex(value)];
}

QRgb divergingColor(float value)
{
    return divergingTable()[heatIndex(value)];
}

QImage renderMesh(const MeshScene& scene, const WaferViewport& viewport, const MeshPalette& palette)
{
    const int width = int(std::ceil(viewport.widgetSize().width()));
    const int height = int(std::ceil(viewport.widgetSize().height()));
    QImage image(width, height, QImage::Format_RGB32);
    image.fill(palette.background);
    if (scene.fabricWidth <= 0 || scene.fabricHeight <= 0)
        return image;

    const double scale = viewport.pixelsPerPe();
    const bool tiled = scale >= kTilePixelsPerPe;
    const QPointF origin = viewport.peToPixel(QPointF(0, 0));
    const QSize extent = scene.extent();
    const std::vector<int> columns = viewIndexPerPixel(width, origin.x(), scale, extent.width(), tiled);
    const std::vector<int> rows = viewIndexPerPixel(height, origin.y(), scale, extent.height(), tiled);
    // View coordinate -> PE coordinate on its wafer (-1 between wafers) and the wafer's grid cell.
    const int pitchX = scene.fabricWidth + scene.gap();
    const int pitchY = scene.fabricHeight + scene.gap();
    std::vector<int> localX(columns.size(), -1);
    std::vector<int> cellX(columns.size(), 0);
    for (std::size_t p = 0; p < columns.size(); ++p)
        if (columns[p] >= 0 && columns[p] % pitchX < scene.fabricWidth) {
            localX[p] = columns[p] % pitchX;
            cellX[p] = columns[p] / pitchX;
        }

    const QRgb usable = (scene.regions ? palette.unplacedPe : palette.usablePe).rgb();
    const QRgb margin = palette.marginPe.rgb();
    // Heat overlays colour usable PEs by their value; zoomed in, traffic draws each link.
    const MeshField* field = scene.heat() ? scene.field.get() : nullptr;
    const bool linkDetail = field && scene.overlay == MeshOverlay::Traffic && scale >= kLinkPixelsPerPe;
    const std::vector<std::uint8_t> stripX
        = linkDetail ? stripPerPixel(width, origin.x(), scale) : std::vector<std::uint8_t>();
    const std::vector<std::uint8_t> stripY
        = linkDetail ? stripPerPixel(height, origin.y(), scale) : std::vector<std::uint8_t>();
    const std::array<QRgb, 256>& heat = scene.overlay == MeshOverlay::Difference ? divergingTable() : heatTable();
    const QRgb noData = palette.unplacedPe.rgb();
    const QRgb stripe = palette.hatch.rgb();
    // A value that is not modelled (NaN): stripes over the no-data colour.
    const auto shade = [&](float value, int px, int py) {
        return std::isnan(value) ? (hatchedAt(px, py) ? stripe : noData) : heat[heatIndex(value)];
    };
    const std::size_t fabricPes = std::size_t(scene.fabricWidth) * std::size_t(scene.fabricHeight);
    for (int py = 0; py < height; ++py) {
        const int view = rows[std::size_t(py)];
        if (view < 0 || view % pitchY >= scene.fabricHeight)
            continue;
        const int y = view % pitchY;
        const int firstWafer = view / pitchY * scene.columns();
        const bool rowUsable = y >= scene.usable.top() && y <= scene.usable.bottom();
        auto* line = reinterpret_cast<QRgb*>(image.scanLine(py));
        if (!field) {
            for (int px = 0; px < width; ++px) {
                const int x = localX[std::size_t(px)];
                if (x < 0 || firstWafer + cellX[std::size_t(px)] >= scene.wafers)
                    continue;
                line[px] = (rowUsable && x >= scene.usable.left() && x <= scene.usable.right()) ? usable : margin;
            }
            continue;
        }
        const std::size_t rowBase = std::size_t(y) * std::size_t(scene.fabricWidth);
        for (int px = 0; px < width; ++px) {
            const int x = localX[std::size_t(px)];
            const int wafer = firstWafer + cellX[std::size_t(px)];
            if (x < 0 || wafer >= scene.wafers)
                continue;
            if (!rowUsable || x < scene.usable.left() || x > scene.usable.right()) {
                line[px] = margin;
                continue;
            }
            const std::size_t pe = rowBase + std::size_t(x);
            if (std::size_t(wafer) >= field->pe.size() || field->pe[std::size_t(wafer)].size() != fabricPes) {
                line[px] = noData;
                continue;
            }
            if (linkDetail) {
                const std::uint8_t sx = stripX[std::size_t(px)];
                const std::uint8_t sy = stripY[std::size_t(py)];
                // Sides carry the links; the centre and the corners are the PE itself.
                const int direction = sx == 1 && sy != 1 ? (sy == 0 ? 0 : 1)
                    : sy == 1 && sx != 1                 ? (sx == 2 ? 2 : 3)
                                                         : -1;
                const std::vector<float>& links = std::size_t(wafer) < field->links.size()
                    ? field->links[std::size_t(wafer)]
                    : std::vector<float>();
                // The centre is neutral unless the PE's value is not modelled.
                const float own = field->pe[std::size_t(wafer)][pe];
                line[px] = direction >= 0 && links.size() == fabricPes * 4
                    ? shade(links[pe * 4 + std::size_t(direction)], px, py)
                    : (std::isnan(own) ? shade(own, px, py) : noData);
                continue;
            }
            line[px] = shade(field->pe[std::size_t(wafer)][pe], px, py);
        }
    }

    if (scene.regions && scene.heat()) {
        drawRegionDecorations(image, scene, viewport, palette);
    } else if (scene.regions) {
        for (const PlacedRegion& region : *scene.regions) {
            const QRect view = region.rect.translated(scene.waferOrigin(region.wafer));
            const QRect pixels = pixelRect(viewport, view, image.size());
            const QRgb color = region.color.rgb();
            for (int py = pixels.top(); py <= pixels.bottom(); ++py) {
                const int y = rows[std::size_t(py)];
                if (y < view.top() || y > view.bottom())
                    continue;
                auto* line = reinterpret_cast<QRgb*>(image.scanLine(py));
                for (int px = pixels.left(); px <= pixels.right(); ++px) {
                    const int x = columns[std::size_t(px)];
                    if (x >= view.left() && x <= view.right())
                        line[px] = color;
                }
            }
        }
        drawRegionDecorations(image, scene, viewport, palette);
    }
    if (scale >= kLabelPixelsPerPe)
        drawCoordinates(image, scene, viewport, palette);
    return image;
}

} // namespace waferscope::ui
