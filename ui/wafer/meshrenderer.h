#pragma once

#include "ui/models/optionnames.h"
#include "ui/wafer/waferviewport.h"

#include <QColor>
#include <QImage>
#include <QRect>
#include <QString>

#include <memory>
#include <optional>
#include <vector>

namespace waferscope::ui {

// One PE of one wafer.
struct WaferPe {
    int wafer = 0;
    QPoint pe; // PE coordinates on that wafer
    bool operator==(const WaferPe&) const = default;
};

// A compiled region drawn over the mesh (see placementoverlay.h).
struct PlacedRegion {
    int wafer = 0;
    QRect rect; // PE coordinates on its wafer
    QColor color;
    QString label; // drawn inside the region once it is large enough on screen
    int planIndex = -1; // index into ExecutionPlan::regions
};

// Values of a heat overlay for each wafer shown, on the colour scale's 0..1 range. Each wafer's
// vectors are row-major over its whole fabric (fabricWidth x fabricHeight PEs).
// A NaN value means "not modelled" (traffic: work whose link load the engine has no model for)
// and is drawn hatched.
struct MeshField {
    std::vector<std::vector<float>> pe; // per wafer, per PE (traffic: the busiest of its four links)
    std::vector<std::vector<float>> links; // per wafer, per PE and direction (N, S, E, W): traffic only
};

// The legend of a heat overlay: 0 .. max in `unit`.
struct ColorScale {
    QString title; // "PE compute activity"
    QString unit; // "%"
    double max = 1.0; // the value at the top of the scale
    QString hatched; // what hatched PEs mean, when the field has some (empty: none)
    QString noScale; // non-empty: no value is on the scale, and this replaces the colour bar
};

// What the wafer view draws: one or more wafers of the same generation (multi-wafer
// inference shows each), their usable rectangles and I/O margins, and optionally the
// compiler's placement. Wafers are laid out left to right in a grid with a gap between them,
// all in one "view" coordinate space of PEs that the viewport zooms and pans.
struct MeshScene {
    MeshScene() = default;
    MeshScene(int width, int height, QRect usableRect)
        : fabricWidth(width)
        , fabricHeight(height)
        , usable(usableRect)
    {
    }

    int fabricWidth = 0; // PEs of one wafer
    int fabricHeight = 0; // PEs of one wafer
    QRect usable; // usable rectangle in PE coordinates
    int wafers = 1;
    std::shared_ptr<const std::vector<PlacedRegion>> regions; // null: no placement shown
    int highlighted = -1; // index into *regions, drawn with a bright outline
    MeshOverlay overlay = MeshOverlay::Placement;
    std::shared_ptr<const MeshField> field; // the heat overlay's values (null: drawn as no data)
    ColorScale scale;

    int columns() const; // wafers per grid row
    int gap() const; // PEs of background between wafers
    QSize extent() const; // the whole grid, in PEs
    QPoint waferOrigin(int wafer) const; // view coordinates of the wafer's PE (0, 0)
    // The wafer PE at a view coordinate, or nothing in a gap or outside.
    std::optional<WaferPe> locate(QPoint view) const;
    // The index into *regions of the region holding the PE, or -1.
    int regionAt(const WaferPe& pe) const;
    // The ExecutionPlan region index of that region, or -1.
    int planIndexAt(const WaferPe& pe) const;
    bool heat() const { return overlay != MeshOverlay::Placement; }
    // The heat overlay's value (0..1) at a PE, or nothing without one.
    std::optional<float> valueAt(const WaferPe& pe) const;
    // A link's value (direction N, S, E, W) under the traffic overlay.
    std::optional<float> linkAt(const WaferPe& pe, int direction) const;
};

// The colours of the mesh, named so tests can compare pixels against them.
struct MeshPalette {
    QColor background { 0x1d, 0x21, 0x27 };
    QColor usablePe { 0x4a, 0x6f, 0x8f };
    QColor marginPe { 0x6b, 0x55, 0x3f };
    QColor label { 0xe8, 0xec, 0xf1 };
    QColor unplacedPe { 0x33, 0x3b, 0x45 }; // usable PEs outside every region, under a placement
    QColor highlight { 0xff, 0xff, 0xff };
    QColor hatch { 0x5c, 0x66, 0x73 }; // the stripes over unplacedPe of a heat value that is not modelled
};

// The heat overlays' colour scale (perceptually ordered, dark violet at 0 through teal to
// yellow at 1); values outside 0..1 are clamped.
QRgb heatColor(float value);
// The difference overlay's diverging scale: blue at 0 (the baseline busier), white at 0.5 (the
// same), red at 1 (this run busier); clamped like heatColor.
QRgb divergingColor(float value);

// Level of detail: from this zoom on, PEs are drawn as tiles separated by a one-pixel gap;
// from kLabelPixelsPerPe on, each tile carries its coordinate. Region outlines appear once a
// region spans kOutlinePixels on screen.
inline constexpr double kTilePixelsPerPe = 4.0;
inline constexpr double kLabelPixelsPerPe = 56.0;
inline constexpr int kOutlinePixels = 6;
// Under the traffic overlay, from this zoom on each tile shows its four outgoing links as strips
// along its sides (kLinkStrip of the tile each), coloured by their load, around a neutral centre.
inline constexpr double kLinkPixelsPerPe = 12.0;
inline constexpr double kLinkStrip = 0.25;

// Pure function from scene and viewport to an image of viewport.widgetSize(). The viewport's
// fabric is scene.extent(). Every pixel is background (outside, between wafers, or the gap
// between tiles), a margin PE, a usable PE, or with a placement a region's colour or an
// unplaced usable PE; outlines and labels are drawn over regions that are large enough. Under a
// heat overlay usable PEs take heatColor() of their value (zoomed in, traffic draws each link), a
// NaN value is drawn as diagonal stripes of palette.hatch over palette.unplacedPe (hatchedAt),
// and the regions keep their outlines. Each pixel shows the PE under its centre.
QImage renderMesh(const MeshScene& scene, const WaferViewport& viewport, const MeshPalette& palette = {});
// Whether the pixel (x, y) of a value that is not modelled takes the stripe colour: stripes two
// pixels wide every six, running down to the left.
inline bool hatchedAt(int x, int y)
{
    return (x + y) % 6 < 2;
}

} // namespace waferscope::ui
