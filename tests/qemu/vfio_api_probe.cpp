// The smallest guest test: opens /dev/vfio/vfio and prints the API version. Proves the
// QEMU harness (kernel, modules, initramfs, binding) before the transport is involved.
#include <fcntl.h>
#include <linux/vfio.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) std::printf("vfio_api_probe: device %s\n", argv[i]);
  int fd = ::open("/dev/vfio/vfio", O_RDWR);
  if (fd < 0) {
    std::printf("vfio_api_probe: FAIL open /dev/vfio/vfio: %s\n", std::strerror(errno));
    return 1;
  }
  int version = ::ioctl(fd, VFIO_GET_API_VERSION);
  int type1v2 = ::ioctl(fd, VFIO_CHECK_EXTENSION, VFIO_TYPE1v2_IOMMU);
  std::printf("vfio_api_probe: API version %d, TYPE1v2 %d\n", version, type1v2);
  ::close(fd);
  return version == VFIO_API_VERSION && type1v2 == 1 ? 0 : 1;
}
