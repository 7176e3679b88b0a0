// What the checks run inside the QEMU guest (vfio_guest_test) share: one PASS/FAIL line per
// check, hex, the kernel log, sysfs reads and the expected-error helper.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "driver/backends/hex.h"
#include "driver/backends/vfio/vfio_transport.h"

namespace guest {

// The IOMMU interface every suite opens its functions through (--iommu=type1|iommufd;
// automatic by default).
pcie::VfioIommuKind iommu_kind();
void set_iommu_kind(pcie::VfioIommuKind kind);

void check(bool ok, const std::string& what);
void info(const std::string& what);  // an INFO line: what the device offers, not a verdict
int failures();

using backends::hex;
std::string kernel_log();
// How many times `needle` occurs in the kernel log.
size_t kernel_log_count(const std::string& needle);
// The first line of a sysfs attribute ("" when absent).
std::string sysfs(const std::string& path);

// Passes when `fn` throws (PciTransportError, or DmaPool's std::invalid_argument) with a
// message that holds `needle`; the message is printed with the verdict.
void expect_error(const std::string& what, const std::string& needle, const std::function<void()>& fn);

// The MSI-X capability as config space states it (present = false when there is none).
struct MsixCap {
  bool present = false;
  unsigned vectors = 0;
  uint32_t table_bar = 0, table_offset = 0;
  uint32_t pba_bar = 0, pba_offset = 0;
};
MsixCap read_msix_cap(pcie::PciTransport& t);

// DEVICE_RESET by `method` (the kernel's reset_method: "flr", "pm", ...) where the function
// offers it, then `was_reset` must hold (null: nothing to see; QEMU ignores power states,
// so its PM reset leaves every register as it was); elsewhere the reset must be refused
// clearly.
void reset_checks(pcie::VfioTransport& t, const std::string& method, const std::function<bool()>& was_reset,
                  const std::string& what);

// Region and irq infos of the device as VFIO reports them, one INFO line each.
void print_infos(pcie::PciTransport& t);

// The per-device suites. Each opens the function itself and closes it before returning.
void edu_checks(const std::string& bdf);
void edu_in_shared_group_checks(const std::string& bdf);
void e1000e_checks(const std::string& bdf);
void nvme_checks(const std::string& bdf);
// Errors a bring-up engineer meets: run with every function closed.
void memlock_checks(const std::string& edu_bdf);
void address_checks();
void iommu_off_checks(const std::string& bdf);
// The interface this kernel lacks, asked for by name: refused saying so.
void missing_interface_checks(const std::string& edu_bdf);

}  // namespace guest
