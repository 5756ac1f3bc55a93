// Documents generated from the command tree itself, so they cannot drift from it: the man page
// (clustermax.1) and the bash and zsh completion scripts. `clustermax completion bash|zsh` prints a
// script; the build writes the man page with the hidden `clustermax manpage`.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

namespace clustermax::cli {

std::string BashCompletion(const CLI::App& app);
std::string ZshCompletion(const CLI::App& app);
// roff (man(7) macros); `version` goes in the page's footer.
std::string ManPage(const CLI::App& app, const std::string& version);

}  // namespace clustermax::cli
