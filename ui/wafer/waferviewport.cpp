#include "ui/wafer/waferviewport.h"

#include <algorithm>
#include <cmath>

namespace waferscope::ui {

namespace {
constexpr double kFitMarginPixels = 16.0;
}

void WaferViewport::setFabricSize(int widthPes, int heightPes)
{
    m_fabricWidth = std::max(1, widthPes);
    m_fabricHeight = std::max(1, heightPes);
}

void WaferViewport::setWidgetSize(QSizeF size)
{
    m_widgetSize = QSizeF(std::max(1.0, size.width()), std::max(1.0, size.height()));
}

double WaferViewport::fitPixelsPerPe() const
{
    const double width = std::max(1.0, m_widgetSize.width() - 2 * kFitMarginPixels);
    const double height = std::max(1.0, m_widgetSize.height() - 2 * kFitMarginPixels);
    return std::min(width / m_fabricWidth, height / m_fabricHeight);
}

void WaferViewport::fit()
{
    m_pixelsPerPe = fitPixelsPerPe();
    m_origin = QPointF((m_widgetSize.width() - m_fabricWidth * m_pixelsPerPe) / 2,
        (m_widgetSize.height() - m_fabricHeight * m_pixelsPerPe) / 2);
}

void WaferViewport::zoomAt(QPointF pixel, double factor)
{
    if (!(factor > 0))
        return;
    const QPointF anchor = pixelToPe(pixel);
    m_pixelsPerPe = std::clamp(m_pixelsPerPe * factor, minPixelsPerPe(), kMaxPixelsPerPe);
    m_origin = pixel - anchor * m_pixelsPerPe;
}

void WaferViewport::panBy(QPointF pixelDelta)
{
    m_origin += pixelDelta;
}

QPointF WaferViewport::peToPixel(QPointF pe) const
{
    return m_origin + pe * m_pixelsPerPe;
}

QPointF WaferViewport::pixelToPe(QPointF pixel) const
{
    return (pixel - m_origin) / m_pixelsPerPe;
}

std::optional<QPoint> WaferViewport::peAt(QPointF pixel) const
{
    const QPointF pe = pixelToPe(pixel);
    const int x = int(std::floor(pe.x()));
    const int y = int(std::floor(pe.y()));
    if (x < 0 || y < 0 || x >= m_fabricWidth || y >= m_fabricHeight)
        return std::nullopt;
    return QPoint(x, y);
}

QRectF WaferViewport::peRect(int x, int y) const
{
    return QRectF(peToPixel(QPointF(x, y)), QSizeF(m_pixelsPerPe, m_pixelsPerPe));
}

QRect WaferViewport::visiblePes() const
{
    const QPointF topLeft = pixelToPe(QPointF(0, 0));
    const QPointF bottomRight = pixelToPe(QPointF(m_widgetSize.width(), m_widgetSize.height()));
    const int left = std::max(0, int(std::floor(topLeft.x())));
    const int top = std::max(0, int(std::floor(topLeft.y())));
    const int right = std::min(m_fabricWidth - 1, int(std::ceil(bottomRight.x())) - 1);
    const int bottom = std::min(m_fabricHeight - 1, int(std::ceil(bottomRight.y())) - 1);
    if (right < left || bottom < top)
        return QRect();
    return QRect(QPoint(left, top), QPoint(right, bottom));
}

} // namespace waferscope::ui
