#include "ui/meshrenderer.h"

#include <QPainter>

#include <cmath>
#include <vector>

namespace waferscope::ui {

namespace {

// For each pixel column (or row): the PE index under its centre, or -1 outside the fabric or
// in the gap between tiles.
std::vector<int> peIndexPerPixel(int pixels, double origin, double pixelsPerPe, int pes, bool tiled)
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

void drawLabels(QImage& image, const MeshScene& scene, const WaferViewport& viewport, const MeshPalette& palette)
{
    QPainter painter(&image);
    QFont font = painter.font();
    font.setPixelSize(std::max(9, int(viewport.pixelsPerPe() / 5)));
    painter.setFont(font);
    painter.setPen(palette.label);
    const QRect visible = viewport.visiblePes();
    for (int y = visible.top(); y <= visible.bottom(); ++y) {
        for (int x = visible.left(); x <= visible.right(); ++x) {
            const QRectF tile = viewport.peRect(x, y).adjusted(0, 0, -1, -1);
            const bool usable = scene.usable.contains(x, y);
            painter.drawText(tile, Qt::AlignCenter, QStringLiteral("%1,%2%3").arg(x).arg(y).arg(usable ? "" : "\nI/O"));
        }
    }
}

} // namespace

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
    const std::vector<int> columns = peIndexPerPixel(width, origin.x(), scale, scene.fabricWidth, tiled);
    const std::vector<int> rows = peIndexPerPixel(height, origin.y(), scale, scene.fabricHeight, tiled);

    const QRgb usable = palette.usablePe.rgb();
    const QRgb margin = palette.marginPe.rgb();
    for (int py = 0; py < height; ++py) {
        const int y = rows[std::size_t(py)];
        if (y < 0)
            continue;
        const bool rowUsable = y >= scene.usable.top() && y <= scene.usable.bottom();
        auto* line = reinterpret_cast<QRgb*>(image.scanLine(py));
        for (int px = 0; px < width; ++px) {
            const int x = columns[std::size_t(px)];
            if (x < 0)
                continue;
            line[px] = (rowUsable && x >= scene.usable.left() && x <= scene.usable.right()) ? usable : margin;
        }
    }
    if (scale >= kLabelPixelsPerPe)
        drawLabels(image, scene, viewport, palette);
    return image;
}

} // namespace waferscope::ui
