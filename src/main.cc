#include "cli/cli.h"

int main(int argc, char** argv) { return clustermax::cli::Main(argc, argv); }
