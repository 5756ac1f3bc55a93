// The proc/sysfs/command-output text parsers of collect/parsers.h (os-release, cpuinfo, ldconfig,
// quota reports, dpkg lists, nvidia-smi -L and boost-slider, tool version banners, the NVIDIA
// driver's /proc file, nccl.h, PCI config space and sysfs device paths, ibstat/ibv_devinfo listings). Every parser gets
// the whole input. The dcgmi JSON parser has its own target (dcgmi.cc).
#include <string>

#include "collect/parsers.h"
#include "fuzz_common.h"

using namespace clustermax;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view t = fuzz::AsText(data, size);
  try {
    collect::ParseOsRelease(t);
    collect::ParseNvccRelease(t);
    collect::ParseRuncVersion(t);
    collect::ParseDockerClientVersion(t);
    collect::ParseBoostSliderList(t);
    collect::ParseNvidiaCtkVersion(t);
    collect::ParsePerfVersion(t);
    collect::ParseToolVersionLine(t);
    collect::ParseBareVersion(t);
    collect::ParseProcNvidiaVersion(t);
    collect::ParseCpuinfo(t);
    collect::ParseLdconfig(t);
    collect::ParseQuotaReport(t);
    collect::ParseNcclHeaderVersion(t);
    collect::VersionFromSoname(t, "libnccl.so");
    collect::VersionFromSoname(t, "libcudnn.so");
    for (const auto& p : collect::ParseDpkgPackageList(t)) collect::KernelReleaseFromPackage(p.package);
    if (auto r = collect::KernelReleaseFromPackage(t)) collect::KernelFlavour(*r);
    collect::KernelFlavour(t);
    collect::ParseNvidiaSmiList(t);
    collect::AcsControl acs = collect::ParseAcsControl(t);
    (void)acs.RedirectsP2p();
    collect::PciChain(t);
    for (const auto& d : collect::ParseRdmaListing(t)) (void)d;  // ibstat / ibstatus / ibv_devinfo
  } catch (const std::exception&) {
  }
  return 0;
}
