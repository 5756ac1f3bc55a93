// Force-included into every translation unit (CMakeLists.txt), before nlohmann/json.hpp.
// nlohmann::json's internal assertions (for example const operator[] on a missing key, otherwise
// undefined behaviour) become exceptions in every build type: a judge that meets evidence of an
// unexpected shape then fails as a tool fault (audit/engine.cc) instead of reading past a map.
#pragma once
#include <stdexcept>

#define JSON_ASSERT(x) \
  ((x) ? static_cast<void>(0) : throw std::logic_error("JSON access outside the document (missing key or wrong type)"))
