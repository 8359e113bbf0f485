#pragma once

#include "ui/wafer/meshrenderer.h"
#include "ui/wafer/waferviewport.h"

#include <QImage>
#include <QWidget>

#include <optional>

namespace waferscope::ui {

// The central view: the selected system's PE mesh with zoom (wheel, +/-), pan (drag, arrows)
// and fit (double-click, 0). Lives on the GUI thread; draws an image cached until the scene or
// the viewport changes.
class WaferView : public QWidget {
    Q_OBJECT
public:
    explicit WaferView(QWidget* parent = nullptr);

    // `caption` is drawn in the corner ("CS-2 · WSE-2 · 757 x 996 PEs").
    void setScene(const MeshScene& scene, const QString& caption);
    // Outlines one region of the scene's placement (-1: none) and, when it is off screen,
    // pans to it.
    void setHighlighted(int region);
    const MeshScene& scene() const { return m_scene; }
    const WaferViewport& viewport() const { return m_viewport; }
    std::optional<WaferPe> hovered() const { return m_hovered; }

    void zoomBy(double factor); // about the widget centre
    void fitToView();

    QSize sizeHint() const override { return QSize(900, 700); }

Q_SIGNALS:
    // The PE under the mouse, or nothing when it leaves the wafers.
    void hoveredPeChanged(std::optional<waferscope::ui::WaferPe> pe);
    // A click (press and release without dragging) on a PE.
    void peClicked(waferscope::ui::WaferPe pe);
    void zoomChanged(double pixelsPerPe);

protected:
    void paintEvent(QPaintEvent* event) override;
    void resizeEvent(QResizeEvent* event) override;
    void wheelEvent(QWheelEvent* event) override;
    void mousePressEvent(QMouseEvent* event) override;
    void mouseMoveEvent(QMouseEvent* event) override;
    void mouseReleaseEvent(QMouseEvent* event) override;
    void mouseDoubleClickEvent(QMouseEvent* event) override;
    void keyPressEvent(QKeyEvent* event) override;
    void leaveEvent(QEvent* event) override;

private:
    void viewportChanged();
    void drawLegend(QPainter& painter) const;
    void drawRulers(QPainter& painter) const;
    void drawWaferCaptions(QPainter& painter) const;

    MeshScene m_scene;
    QString m_caption;
    MeshPalette m_palette;
    WaferViewport m_viewport;
    bool m_followsFit = true; // refit on resize until the user zooms or pans
    QImage m_image; // renderMesh() output for the current scene and viewport; null when stale
    std::optional<QPoint> m_dragStart; // pixel where a pan drag started
    bool m_dragged = false; // the mouse moved since the press: not a click
    std::optional<WaferPe> m_hovered;
};

} // namespace waferscope::ui
