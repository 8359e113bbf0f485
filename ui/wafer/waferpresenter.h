#pragma once

#include "ui/wafer/meshrenderer.h"

#include "core/compiler/plan.h"

#include <QObject>
#include <QString>

#include <memory>
#include <optional>
#include <vector>

namespace waferscope::ui {

class Document;
class PlaybackController;
class WaferView;
struct FrameSnapshot;

// What the wafer view shows: the document's wafer(s) and plan, coloured by the chosen overlay
// at the step the stepper (a PlaybackController, owned here) is on, with the selected region
// highlighted (under weight streaming: that op's kernel on the whole fabric). Also the texts
// that describe the view: the step and the PE under the mouse. GUI thread.
class WaferPresenter : public QObject {
    Q_OBJECT
public:
    WaferPresenter(Document* document, WaferView* view, QObject* parent = nullptr);

    PlaybackController* playback() const { return m_playback; }
    void setOverlay(MeshOverlay overlay);
    MeshOverlay overlay() const { return m_overlay; }
    // Selects a region of the plan (-1: none); emits regionSelected when the selection changes.
    void selectRegion(int planIndex);
    int selectedRegion() const { return m_selected; }
    QString stepText() const; // the step on screen, for the caption and the playback bar
    QString hoverText() const; // the PE under the mouse, for the status bar

Q_SIGNALS:
    void overlayChanged(waferscope::ui::MeshOverlay overlay);
    void regionSelected(int planIndex);
    // A step is on screen in the wafer view; the other views follow it.
    void stepShown(std::shared_ptr<const waferscope::ui::FrameSnapshot> snapshot);
    void hoverTextChanged(const QString& text);

private:
    void planChanged();
    void showScene(); // the system's wafer(s) with the plan's regions, overlay and step
    void showSnapshot(const std::shared_ptr<const FrameSnapshot>& snapshot);
    void showHoveredPe(std::optional<WaferPe> pe);
    QString fabricStepText(const FrameSnapshot& snapshot) const; // a frame of a token on the fabric

    Document* m_document; // read only
    WaferView* m_view; // drawn into
    PlaybackController* m_playback; // owned
    MeshOverlay m_overlay = MeshOverlay::Placement;
    int m_selected = -1; // index into the plan's regions
    // The regions drawn for the plan (under weight streaming, for the op shown) and their SRAM
    // field, made on first use: rebuilt when the plan or the op changes, not at every step.
    struct PlacementCache {
        std::shared_ptr<const core::ExecutionPlan> plan; // held, so a new plan never shares its address
        int shown = -1;
        std::shared_ptr<const std::vector<PlacedRegion>> regions;
        std::shared_ptr<const MeshField> sram;
    };
    PlacementCache m_placement;
};

} // namespace waferscope::ui
