// Typed reads of a benchmark result read back from disk (a dashboard, a rating, a re-render): a
// field of the wrong type reads as absent, never throws and never dangles (the empty values are
// static).
#pragma once
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace clustermax::bench {

inline std::string StrOf(const nlohmann::json& o, const char* k) {
  return o.is_object() && o.contains(k) && o[k].is_string() ? o[k].get<std::string>() : "";
}
inline double NumOf(const nlohmann::json& o, const char* k, double def = 0) {
  return o.is_object() && o.contains(k) && o[k].is_number() ? o[k].get<double>() : def;
}
inline std::optional<double> OptNumOf(const nlohmann::json& o, const char* k) {
  if (!o.is_object() || !o.contains(k) || !o[k].is_number()) return std::nullopt;
  return o[k].get<double>();
}
// True only for a boolean true.
inline bool TrueOf(const nlohmann::json& o, const char* k) {
  return o.is_object() && o.contains(k) && o[k].is_boolean() && o[k].get<bool>();
}
inline const nlohmann::json& ObjOf(const nlohmann::json& o, const char* k) {
  static const nlohmann::json empty = nlohmann::json::object();
  return o.is_object() && o.contains(k) && o[k].is_object() ? o[k] : empty;
}
inline const nlohmann::json& ArrOf(const nlohmann::json& o, const char* k) {
  static const nlohmann::json empty = nlohmann::json::array();
  return o.is_object() && o.contains(k) && o[k].is_array() ? o[k] : empty;
}

}  // namespace clustermax::bench
