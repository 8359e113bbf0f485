#include "ui/wafer/placementoverlay.h"

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

std::vector<PlacedRegion> placedRegions(const core::ExecutionPlan& plan, int shown)
{
    const std::vector<QColor> colors = regionColors(plan);
    std::vector<PlacedRegion> placed;
    const auto add = [&](std::size_t index) {
        const core::Region& region = plan.regions[index];
        placed.push_back({ region.system, QRect(region.rect.x, region.rect.y, region.rect.w, region.rect.h),
            colors[index], QString::fromStdString(region.opName), int(index) });
    };
    const bool valid = shown >= 0 && std::size_t(shown) < plan.regions.size();
    if (plan.mode == core::ExecutionMode::WeightStreaming) {
        if (valid)
            add(std::size_t(shown));
        return placed;
    }
    // A band of a stacked wafer: its tiers' regions share one row range.
    std::map<std::pair<int, int>, int> tierOfBand; // (wafer, first row) -> the tier shown
    if (plan.stackedLayers) {
        for (const core::Region& region : plan.regions) {
            const auto [at, fresh] = tierOfBand.try_emplace({ region.system, region.rect.y }, region.tier);
            if (!fresh)
                at->second = std::min(at->second, region.tier);
        }
        if (valid) {
            const core::Region& chosen = plan.regions[std::size_t(shown)];
            tierOfBand[{ chosen.system, chosen.rect.y }] = chosen.tier;
        }
    }
    placed.reserve(plan.regions.size());
    for (std::size_t i = 0; i < plan.regions.size(); ++i) {
        const core::Region& region = plan.regions[i];
        if (!plan.stackedLayers || tierOfBand[{ region.system, region.rect.y }] == region.tier)
            add(i);
    }
    return placed;
}

MeshField sramField(const core::ExecutionPlan& plan, const std::vector<PlacedRegion>& shown, int wafers)
{
    MeshField field;
    const std::size_t width = std::size_t(std::max(0, plan.fabricWidth));
    const std::size_t height = std::size_t(std::max(0, plan.fabricHeight));
    field.pe.assign(std::size_t(std::max(1, wafers)), std::vector<float>(width * height, 0.0f));
    const double capacity = double(std::max<std::int64_t>(1, plan.sramPerPeBytes));
    const auto fill = [&](int wafer, const QRect& placed, std::int64_t bytes) {
        if (wafer < 0 || std::size_t(wafer) >= field.pe.size())
            return;
        const float share = float(double(bytes) / capacity);
        std::vector<float>& values = field.pe[std::size_t(wafer)];
        const QRect rect = placed.intersected(QRect(0, 0, int(width), int(height)));
        for (int y = rect.top(); y <= rect.bottom(); ++y) {
            const auto row = values.begin() + std::ptrdiff_t(std::size_t(y) * width + std::size_t(rect.left()));
            for (int x = 0; x < rect.width(); ++x)
                row[x] += share; // stacked tiers add up; other regions do not overlap
        }
    };
    if (plan.stackedLayers) {
        for (const core::Region& region : plan.regions)
            fill(region.system, QRect(region.rect.x, region.rect.y, region.rect.w, region.rect.h),
                region.sramBytesPerPe);
        return field;
    }
    for (const PlacedRegion& placed : shown)
        if (placed.planIndex >= 0 && std::size_t(placed.planIndex) < plan.regions.size())
            fill(placed.wafer, placed.rect, plan.regions[std::size_t(placed.planIndex)].sramBytesPerPe);
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
    if (plan.stackedLayers)
        text += QStringLiteral(" · SRAM tier %1 (its PEs also hold the other tiers of their band)").arg(region.tier);
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
