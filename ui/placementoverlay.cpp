#include "ui/placementoverlay.h"

#include "core/common/units.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace waferscope::ui {

QColor layerColor(int layer, int opInLayer)
{
    static constexpr double kValues[] = { 0.86, 0.70, 0.78 };
    const double value = kValues[std::size_t(std::max(0, opInLayer)) % 3];
    if (layer < 0)
        return QColor::fromHsvF(0.6f, 0.08f, float(value - 0.1));
    // Golden-angle steps keep consecutive layers far apart on the colour wheel.
    const double hue = std::fmod(0.58 + 0.381966 * layer, 1.0);
    return QColor::fromHsvF(float(hue), 0.55f, float(value));
}

int wafersShown(const core::ExecutionPlan& plan)
{
    int wafers = 1;
    for (const core::Region& region : plan.regions)
        wafers = std::max(wafers, region.system + 1);
    return wafers;
}

std::vector<QColor> regionColors(const core::ExecutionPlan& plan)
{
    // Weight streaming draws each region alone: every one is the first op of its layer there.
    const bool streaming = plan.mode == core::ExecutionMode::WeightStreaming;
    std::map<std::tuple<int, int, int>, int> seen; // (wafer, copy, layer) -> ops so far
    std::vector<QColor> colors;
    colors.reserve(plan.regions.size());
    for (const core::Region& region : plan.regions)
        colors.push_back(
            layerColor(region.layer, streaming ? 0 : seen[{ region.system, region.replica, region.layer }]++));
    return colors;
}

std::vector<PlacedRegion> placedRegions(const core::ExecutionPlan& plan, int shownStreamedRegion)
{
    const std::vector<QColor> colors = regionColors(plan);
    std::vector<PlacedRegion> placed;
    const auto add = [&](std::size_t index) {
        const core::Region& region = plan.regions[index];
        placed.push_back({ region.system, QRect(region.rect.x, region.rect.y, region.rect.w, region.rect.h),
            colors[index], QString::fromStdString(region.opName), int(index) });
    };
    if (plan.mode == core::ExecutionMode::WeightStreaming) {
        if (shownStreamedRegion >= 0 && std::size_t(shownStreamedRegion) < plan.regions.size())
            add(std::size_t(shownStreamedRegion));
        return placed;
    }
    placed.reserve(plan.regions.size());
    for (std::size_t i = 0; i < plan.regions.size(); ++i)
        add(i);
    return placed;
}

MeshField sramField(const core::ExecutionPlan& plan, const std::vector<PlacedRegion>& shown, int wafers)
{
    MeshField field;
    const std::size_t width = std::size_t(std::max(0, plan.fabricWidth));
    const std::size_t height = std::size_t(std::max(0, plan.fabricHeight));
    field.pe.assign(std::size_t(std::max(1, wafers)), std::vector<float>(width * height, 0.0f));
    const double capacity = double(std::max<std::int64_t>(1, plan.sramPerPeBytes));
    for (const PlacedRegion& placed : shown) {
        if (placed.planIndex < 0 || std::size_t(placed.planIndex) >= plan.regions.size()
            || std::size_t(placed.wafer) >= field.pe.size())
            continue;
        const float share = float(double(plan.regions[std::size_t(placed.planIndex)].sramBytesPerPe) / capacity);
        std::vector<float>& values = field.pe[std::size_t(placed.wafer)];
        const QRect rect = placed.rect.intersected(QRect(0, 0, int(width), int(height)));
        for (int y = rect.top(); y <= rect.bottom(); ++y)
            std::fill_n(values.begin() + std::ptrdiff_t(std::size_t(y) * width + std::size_t(rect.left())),
                rect.width(), share);
    }
    return field;
}

QString formatKib(std::int64_t bytes)
{
    return QStringLiteral("%1 KiB").arg(double(bytes) / 1024.0, 0, 'f', 1);
}

QString describeRegion(const core::ExecutionPlan& plan, const core::ModelGraph* graph, int planIndex)
{
    if (planIndex < 0 || std::size_t(planIndex) >= plan.regions.size())
        return {};
    const core::Region& region = plan.regions[std::size_t(planIndex)];
    QString text = QString::fromStdString(region.opName);
    text += region.layer >= 0 ? QStringLiteral(" · layer %1").arg(region.layer)
                              : QStringLiteral(" · outside the blocks");
    if (graph && !region.fused.empty()) {
        QStringList fused;
        for (int op : region.fused)
            fused << QString::fromStdString(graph->ops[std::size_t(op)].name);
        text += QStringLiteral(" (+ %1)").arg(fused.join(QStringLiteral(", ")));
    }
    if (plan.replicas > 1)
        text += QStringLiteral(" · copy %1 of %2").arg(region.replica + 1).arg(plan.replicas);
    text += QStringLiteral(" · %1 x %2 PEs at (%3, %4)")
                .arg(region.rect.w)
                .arg(region.rect.h)
                .arg(region.rect.x)
                .arg(region.rect.y);
    text += QStringLiteral(" · SRAM %1 of %2 per PE")
                .arg(formatKib(region.sramBytesPerPe), formatKib(plan.sramPerPeBytes));
    const char* per = plan.mode == core::ExecutionMode::Inference ? "token" : "sample";
    text += QStringLiteral(" · %1 cycles per %2 (%3, tile %4 x %5)")
                .arg(QString::fromStdString(core::formatCount(region.computeCycles)), QString::fromLatin1(per),
                    QString::fromLatin1(core::toString(region.kernel.kind)))
                .arg(region.kernel.tileRows)
                .arg(region.kernel.tileCols);
    return text;
}

} // namespace waferscope::ui
