#pragma once

#include "ui/waferviewport.h"

#include <QColor>
#include <QImage>
#include <QRect>

namespace waferscope::ui {

// What the wafer view draws before any model is placed: the fabric, its usable rectangle and
// the I/O margins around it. Later overlays (placement, activity, traffic) extend this scene.
struct MeshScene {
    int fabricWidth = 0; // PEs
    int fabricHeight = 0; // PEs
    QRect usable; // usable rectangle in PE coordinates
};

// The colours of the mesh, named so tests can compare pixels against them.
struct MeshPalette {
    QColor background { 0x1d, 0x21, 0x27 };
    QColor usablePe { 0x4a, 0x6f, 0x8f };
    QColor marginPe { 0x6b, 0x55, 0x3f };
    QColor label { 0xe8, 0xec, 0xf1 };
};

// Level of detail: from this zoom on, PEs are drawn as tiles separated by a one-pixel gap;
// from kLabelPixelsPerPe on, each tile carries its coordinate.
inline constexpr double kTilePixelsPerPe = 4.0;
inline constexpr double kLabelPixelsPerPe = 56.0;

// Pure function from scene and viewport to an image of viewport.widgetSize(): every pixel is
// background, a usable PE, a margin PE or (when tiled) the gap between PEs.
QImage renderMesh(const MeshScene& scene, const WaferViewport& viewport, const MeshPalette& palette = {});

} // namespace waferscope::ui
