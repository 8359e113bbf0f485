#pragma once

#include "ui/meshrenderer.h"
#include "ui/waferviewport.h"

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
    const MeshScene& scene() const { return m_scene; }
    const WaferViewport& viewport() const { return m_viewport; }

    void zoomBy(double factor); // about the widget centre
    void fitToView();

    QSize sizeHint() const override { return QSize(900, 700); }

Q_SIGNALS:
    // The PE under the mouse, or nothing when it leaves the fabric.
    void hoveredPeChanged(std::optional<QPoint> pe);
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

    MeshScene m_scene;
    QString m_caption;
    MeshPalette m_palette;
    WaferViewport m_viewport;
    bool m_followsFit = true; // refit on resize until the user zooms or pans
    QImage m_image; // renderMesh() output for the current scene and viewport; null when stale
    std::optional<QPoint> m_dragStart; // pixel where a pan drag started
    std::optional<QPoint> m_hovered;
};

} // namespace waferscope::ui
