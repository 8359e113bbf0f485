#include "ui/wafer/waferview.h"

#include "ui/wafer/placementoverlay.h"

#include <QKeyEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QWheelEvent>

#include <cmath>

namespace waferscope::ui {

namespace {
constexpr int kRulerPixels = 16; // thickness of the PE-coordinate rulers
}

WaferView::WaferView(QWidget* parent)
    : QWidget(parent)
{
    setMouseTracking(true);
    setFocusPolicy(Qt::StrongFocus);
    setAttribute(Qt::WA_OpaquePaintEvent);
    setMinimumSize(200, 150);
}

void WaferView::setScene(const MeshScene& scene, const QString& caption)
{
    const bool resized = scene.extent() != m_scene.extent();
    m_scene = scene;
    m_caption = caption;
    const QSize extent = scene.extent();
    m_viewport.setFabricSize(extent.width(), extent.height());
    if (resized || m_followsFit) {
        m_followsFit = true;
        m_viewport.fit();
    }
    viewportChanged();
}

void WaferView::setHighlighted(int region)
{
    m_scene.highlighted = region;
    if (m_scene.regions && region >= 0 && std::size_t(region) < m_scene.regions->size()) {
        const PlacedRegion& placed = (*m_scene.regions)[std::size_t(region)];
        const QRect view = placed.rect.translated(m_scene.waferOrigin(placed.wafer));
        if (!m_viewport.visiblePes().contains(view.center())) {
            m_followsFit = false;
            const QPointF centre = m_viewport.peToPixel(QRectF(view).center());
            m_viewport.panBy(QPointF(width() / 2.0, height() / 2.0) - centre);
        }
    }
    viewportChanged();
}

void WaferView::zoomBy(double factor)
{
    m_followsFit = false;
    m_viewport.zoomAt(QPointF(width() / 2.0, height() / 2.0), factor);
    viewportChanged();
}

void WaferView::fitToView()
{
    m_followsFit = true;
    m_viewport.fit();
    viewportChanged();
}

void WaferView::viewportChanged()
{
    m_image = QImage();
    update();
    Q_EMIT zoomChanged(m_viewport.pixelsPerPe());
}

void WaferView::paintEvent(QPaintEvent*)
{
    if (m_image.isNull() || m_image.size() != size())
        m_image = renderMesh(m_scene, m_viewport, m_palette);
    QPainter painter(this);
    painter.drawImage(0, 0, m_image);
    drawWaferCaptions(painter);
    drawRulers(painter);
    drawLegend(painter);
}

// Multi-wafer scenes: "wafer k" at the top-left corner of each wafer that is on screen.
void WaferView::drawWaferCaptions(QPainter& painter) const
{
    if (m_scene.wafers <= 1)
        return;
    const QFontMetrics metrics(painter.font());
    for (int wafer = 0; wafer < m_scene.wafers; ++wafer) {
        const QPointF corner = m_viewport.peToPixel(QPointF(m_scene.waferOrigin(wafer)));
        const QString text = tr("wafer %1").arg(wafer);
        const QRect box(
            int(corner.x()) + 4, int(corner.y()) + 4, metrics.horizontalAdvance(text) + 10, metrics.height() + 4);
        if (!rect().intersects(box))
            continue;
        painter.fillRect(box, QColor(0, 0, 0, 170));
        painter.setPen(m_palette.label);
        painter.drawText(box, Qt::AlignCenter, text);
    }
}

void WaferView::drawLegend(QPainter& painter) const
{
    painter.setRenderHint(QPainter::Antialiasing);
    QFont font = painter.font();
    font.setPointSizeF(font.pointSizeF() * 1.05);
    painter.setFont(font);
    const QFontMetrics metrics(font);
    const int pad = 8;
    const int line = metrics.height();

    const QString zoom = m_viewport.pixelsPerPe() >= 1
        ? tr("%1 px per PE").arg(m_viewport.pixelsPerPe(), 0, 'f', 1)
        : tr("1 px = %1 PEs across").arg(1.0 / m_viewport.pixelsPerPe(), 0, 'f', 1);
    QStringList lines = m_caption.split(QLatin1Char('\n'));
    lines << zoom;
    int boxWidth = 0;
    for (const QString& text : lines)
        boxWidth = std::max(boxWidth, metrics.horizontalAdvance(text));
    // With a placement: the layer colours, the usable PEs no region holds, and the margins.
    std::vector<std::pair<QColor, QString>> swatches;
    // A heat overlay: its title and a colour bar from 0 to the scale's top, in its unit.
    const bool heat = m_scene.heat();
    const int barWidth = 180;
    const bool diverging = m_scene.overlay == MeshOverlay::Difference;
    const QString low = diverging ? QStringLiteral("-%1").arg(m_scene.scale.max, 0, 'g', 3) : QStringLiteral("0");
    const QString high = QStringLiteral("%1%2 %3")
                             .arg(diverging ? QStringLiteral("+") : QString())
                             .arg(m_scene.scale.max, 0, 'g', 3)
                             .arg(m_scene.scale.unit);
    if (heat) {
        lines << m_scene.scale.title;
        if (!m_scene.field)
            lines << tr("(no frame yet: the run's frames appear once it has run)");
    } else if (m_scene.regions) {
        swatches = { { layerColor(0, 0), QString() }, { layerColor(1, 0), QString() }, { layerColor(2, 0), QString() },
            { layerColor(3, 0), tr("layers") }, { layerColor(-1, 0), tr("outside blocks") },
            { m_palette.unplacedPe, tr("idle PE") }, { m_palette.marginPe, tr("I/O margin") } };
    } else {
        swatches = { { m_palette.usablePe, tr("usable PE") }, { m_palette.marginPe, tr("I/O margin") } };
    }
    int swatchRowWidth = pad;
    for (const auto& swatch : swatches)
        swatchRowWidth += line + (swatch.second.isEmpty() ? 0 : metrics.horizontalAdvance(swatch.second) + pad);
    // A scale with nothing on it (every value hatched) gives its row to a sentence instead.
    const bool bar = heat && m_scene.scale.noScale.isEmpty();
    if (bar)
        swatchRowWidth = metrics.horizontalAdvance(low) + barWidth + metrics.horizontalAdvance(high) + 3 * pad;
    else if (heat)
        swatchRowWidth = metrics.horizontalAdvance(m_scene.scale.noScale) + 2 * pad;
    boxWidth = std::max(boxWidth, swatchRowWidth);
    // Under the colour bar, what hatched PEs mean, when there are some.
    const bool hatchRow = heat && m_scene.field && !m_scene.scale.hatched.isEmpty();
    if (hatchRow)
        boxWidth = std::max(boxWidth, line + metrics.horizontalAdvance(m_scene.scale.hatched));
    const int boxHeight = int(lines.size() + (hatchRow ? 2 : 1)) * line + 2 * pad;
    const QRect box(kRulerPixels + pad, height() - boxHeight - pad, boxWidth + 2 * pad, boxHeight);
    painter.setPen(Qt::NoPen);
    painter.setBrush(QColor(0, 0, 0, 160));
    painter.drawRoundedRect(box, 6, 6);

    painter.setPen(m_palette.label);
    int y = box.top() + pad;
    for (const QString& text : lines) {
        painter.drawText(QRect(box.left() + pad, y, boxWidth, line), Qt::AlignLeft | Qt::AlignVCenter, text);
        y += line;
    }
    int x = box.left() + pad;
    if (heat && !bar) {
        painter.drawText(QRect(x, y, boxWidth, line), Qt::AlignLeft | Qt::AlignVCenter, m_scene.scale.noScale);
    } else if (heat) {
        painter.drawText(QRect(x, y, metrics.horizontalAdvance(low) + 2, line), Qt::AlignLeft | Qt::AlignVCenter, low);
        x += metrics.horizontalAdvance(low) + pad;
        for (int i = 0; i < barWidth; ++i)
            painter.fillRect(QRect(x + i, y + 3, 1, line - 6),
                QColor::fromRgb(
                    diverging ? divergingColor(float(i) / (barWidth - 1)) : heatColor(float(i) / (barWidth - 1))));
        x += barWidth + pad;
        painter.drawText(
            QRect(x, y, metrics.horizontalAdvance(high) + 2, line), Qt::AlignLeft | Qt::AlignVCenter, high);
    }
    if (hatchRow) {
        y += line;
        const int left = box.left() + pad;
        const int side = line - 6;
        QImage swatch(side, side, QImage::Format_RGB32);
        for (int sy = 0; sy < side; ++sy)
            for (int sx = 0; sx < side; ++sx)
                swatch.setPixel(sx, sy, (hatchedAt(sx, sy) ? m_palette.hatch : m_palette.unplacedPe).rgb());
        painter.drawImage(QPoint(left, y + 3), swatch);
        painter.drawText(
            QRect(left + line, y, boxWidth - line, line), Qt::AlignLeft | Qt::AlignVCenter, m_scene.scale.hatched);
    }
    for (const auto& [color, text] : swatches) {
        painter.fillRect(QRect(x, y + 3, line - 6, line - 6), color);
        x += line;
        if (text.isEmpty())
            continue;
        painter.drawText(
            QRect(x, y, metrics.horizontalAdvance(text) + 2, line), Qt::AlignLeft | Qt::AlignVCenter, text);
        x += metrics.horizontalAdvance(text) + pad;
    }
}

// PE-coordinate rulers along the top and left edges, with ticks at 1, 2 or 5 x 10^k PEs so that
// labels stay at least kMinTickPixels apart at any zoom.
void WaferView::drawRulers(QPainter& painter) const
{
    constexpr double kMinTickPixels = 64.0;
    double step = 1.0;
    for (double decade = 1.0; step * m_viewport.pixelsPerPe() < kMinTickPixels; decade *= 10) {
        for (double mantissa : { 1.0, 2.0, 5.0 }) {
            step = mantissa * decade;
            if (step * m_viewport.pixelsPerPe() >= kMinTickPixels)
                break;
        }
    }
    painter.save();
    painter.setRenderHint(QPainter::Antialiasing, false);
    const QColor band(0, 0, 0, 170);
    painter.fillRect(QRect(0, 0, width(), kRulerPixels), band);
    painter.fillRect(QRect(0, kRulerPixels, kRulerPixels, height() - kRulerPixels), band);
    QFont font = painter.font();
    font.setPixelSize(10);
    painter.setFont(font);
    painter.setPen(m_palette.label);
    const QRect visible = m_viewport.visiblePes();
    if (visible.isValid() && m_scene.fabricWidth > 0 && m_scene.fabricHeight > 0) {
        // Ticks in each wafer's own PE coordinates.
        const auto firstTick = [step](int first) { return std::ceil(first / step) * step; };
        const int pitchX = m_scene.fabricWidth + m_scene.gap();
        const int pitchY = m_scene.fabricHeight + m_scene.gap();
        const int gridRows = (m_scene.wafers + m_scene.columns() - 1) / m_scene.columns();
        for (int cell = 0; cell < m_scene.columns(); ++cell) {
            const int base = cell * pitchX;
            const int last = std::min(visible.right() - base, m_scene.fabricWidth - 1);
            for (double x = firstTick(std::max(0, visible.left() - base)); x <= last + 1; x += step) {
                const int px = int(std::round(m_viewport.peToPixel(QPointF(base + x, 0)).x()));
                if (px < kRulerPixels)
                    continue;
                painter.drawLine(px, kRulerPixels - 5, px, kRulerPixels - 1);
                painter.drawText(px + 2, 0, 60, kRulerPixels - 3, Qt::AlignLeft | Qt::AlignBottom, QString::number(x));
            }
        }
        for (int cell = 0; cell < gridRows; ++cell) {
            const int base = cell * pitchY;
            const int last = std::min(visible.bottom() - base, m_scene.fabricHeight - 1);
            for (double y = firstTick(std::max(0, visible.top() - base)); y <= last + 1; y += step) {
                const int py = int(std::round(m_viewport.peToPixel(QPointF(0, base + y)).y()));
                if (py < kRulerPixels)
                    continue;
                painter.drawLine(kRulerPixels - 5, py, kRulerPixels - 1, py);
                painter.save();
                painter.translate(kRulerPixels - 3, py + 2);
                painter.rotate(-90);
                painter.drawText(
                    -60, -kRulerPixels + 3, 60, kRulerPixels - 3, Qt::AlignRight | Qt::AlignBottom, QString::number(y));
                painter.restore();
            }
        }
    }
    painter.restore();
}

void WaferView::resizeEvent(QResizeEvent*)
{
    m_viewport.setWidgetSize(size());
    if (m_followsFit)
        m_viewport.fit();
    viewportChanged();
}

void WaferView::wheelEvent(QWheelEvent* event)
{
    const double steps = event->angleDelta().y() / 120.0;
    if (steps == 0)
        return;
    m_followsFit = false;
    m_viewport.zoomAt(event->position(), std::pow(1.25, steps));
    viewportChanged();
    event->accept();
}

void WaferView::mousePressEvent(QMouseEvent* event)
{
    if (event->button() == Qt::LeftButton) {
        m_dragStart = event->position().toPoint();
        m_dragged = false;
    }
}

void WaferView::mouseMoveEvent(QMouseEvent* event)
{
    const QPoint position = event->position().toPoint();
    if (m_dragStart && (m_dragged || (position - *m_dragStart).manhattanLength() >= 3)) {
        m_dragged = true;
        m_followsFit = false;
        m_viewport.panBy(position - *m_dragStart);
        m_dragStart = position;
        viewportChanged();
    }
    std::optional<WaferPe> pe;
    if (const std::optional<QPoint> view = m_viewport.peAt(event->position()))
        pe = m_scene.locate(*view);
    if (pe != m_hovered) {
        m_hovered = pe;
        Q_EMIT hoveredPeChanged(pe);
    }
}

void WaferView::mouseReleaseEvent(QMouseEvent* event)
{
    if (m_dragStart && !m_dragged && event->button() == Qt::LeftButton)
        if (const std::optional<QPoint> view = m_viewport.peAt(event->position()))
            if (const std::optional<WaferPe> pe = m_scene.locate(*view))
                Q_EMIT peClicked(*pe);
    m_dragStart.reset();
}

void WaferView::mouseDoubleClickEvent(QMouseEvent*)
{
    fitToView();
}

void WaferView::keyPressEvent(QKeyEvent* event)
{
    const double step = 48.0;
    switch (event->key()) {
    case Qt::Key_Plus:
    case Qt::Key_Equal:
        zoomBy(1.25);
        return;
    case Qt::Key_Minus:
        zoomBy(0.8);
        return;
    case Qt::Key_0:
        fitToView();
        return;
    case Qt::Key_Left:
    case Qt::Key_Right:
    case Qt::Key_Up:
    case Qt::Key_Down: {
        const QPointF delta = event->key() == Qt::Key_Left ? QPointF(step, 0)
            : event->key() == Qt::Key_Right                ? QPointF(-step, 0)
            : event->key() == Qt::Key_Up                   ? QPointF(0, step)
                                                           : QPointF(0, -step);
        m_followsFit = false;
        m_viewport.panBy(delta);
        viewportChanged();
        return;
    }
    default:
        QWidget::keyPressEvent(event);
    }
}

void WaferView::leaveEvent(QEvent*)
{
    if (m_hovered) {
        m_hovered.reset();
        Q_EMIT hoveredPeChanged(std::nullopt);
    }
}

} // namespace waferscope::ui
