// Terminal tables for benchmark results (the JSON is the record; this is for people).
#pragma once
#include <string>

#include <nlohmann/json.hpp>

namespace clustermax::bench {

std::string RenderStorage(const nlohmann::json& result);
std::string RenderS3(const nlohmann::json& result);
std::string RenderGrades(const nlohmann::json& grades, const std::string& source = "data/bench-thresholds.json");

}  // namespace clustermax::bench
