// The Markdown check catalogue (docs/checks.md, `checks list --format md`) and one check's
// description (`checks describe ID`), generated from the registry.
#pragma once
#include <string>

#include "core/check.h"

namespace clustermax::report {

std::string RenderChecksMarkdown(const core::Registry& registry);
std::string RenderCheckDescription(const core::CheckInfo& info);

}  // namespace clustermax::report
