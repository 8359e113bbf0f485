#pragma once

#include <QPoint>
#include <QPointF>
#include <QRect>
#include <QRectF>
#include <QSizeF>

#include <optional>

namespace waferscope::ui {

// The coordinate math of the wafer view, kept apart from the widget so it is tested without a
// GUI. PE (x, y) covers the continuous square [x, x+1) x [y, y+1) in PE space; x grows east,
// y grows south, as in the Cerebras SDK. A pixel maps to PE space by one scale and one origin.
class WaferViewport {
public:
    void setFabricSize(int widthPes, int heightPes);
    void setWidgetSize(QSizeF size);

    // Whole fabric visible with a margin, centred; resets the zoom limits' reference.
    void fit();
    // Zooms by `factor` keeping the PE-space point under `pixel` fixed (clamped to the limits).
    void zoomAt(QPointF pixel, double factor);
    void panBy(QPointF pixelDelta);

    double pixelsPerPe() const { return m_pixelsPerPe; }
    double fitPixelsPerPe() const;
    double minPixelsPerPe() const { return fitPixelsPerPe() * 0.5; }
    static constexpr double kMaxPixelsPerPe = 96.0;

    QPointF peToPixel(QPointF pe) const;
    QPointF pixelToPe(QPointF pixel) const;
    // The PE under a pixel, or nothing outside the fabric.
    std::optional<QPoint> peAt(QPointF pixel) const;
    QRectF peRect(int x, int y) const;
    // PEs at least partly visible, clipped to the fabric (empty when none).
    QRect visiblePes() const;

    int fabricWidth() const { return m_fabricWidth; }
    int fabricHeight() const { return m_fabricHeight; }
    QSizeF widgetSize() const { return m_widgetSize; }

private:
    int m_fabricWidth = 1; // PEs
    int m_fabricHeight = 1; // PEs
    QSizeF m_widgetSize { 1, 1 }; // pixels
    double m_pixelsPerPe = 1.0;
    QPointF m_origin; // pixel position of the north-west corner of PE (0, 0)
};

} // namespace waferscope::ui
