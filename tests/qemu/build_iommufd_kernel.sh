#!/bin/sh
# Builds a small x86-64 kernel with iommufd and the VFIO device cdev, which no Debian
# kernel enables (6.1, bookworm-backports' 6.12 and sid's all leave CONFIG_IOMMUFD unset),
# from Debian's own linux-source-6.12 (bookworm-backports, fetched with a private apt
# state so the system's sources stay as they are). About 10 minutes on 2 cores.
#   tests/qemu/build_iommufd_kernel.sh OUT_DIR     -> OUT_DIR/bzImage
# Then: cmake -DIRDMA_SIM_QEMU_IOMMUFD_KERNEL=OUT_DIR/bzImage ... adds qemu.vfio.iommufd.
# Needs: apt-get install flex bison bc libelf-dev libssl-dev
set -eu
[ $# -eq 1 ] || { echo "usage: $0 OUT_DIR" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
for tool in flex bison bc gcc make; do
  command -v $tool >/dev/null || { echo "$0: no $tool: apt-get install flex bison bc libelf-dev libssl-dev" >&2; exit 1; }
done
[ -e /usr/include/libelf.h ] || { echo "$0: no libelf.h: apt-get install libelf-dev" >&2; exit 1; }
out=$(realpath -m "$1")
apt_dir=$out/apt
mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial"
echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian bookworm-backports main" \
  > "$apt_dir/sources.list"
set -- -o Dir::Etc::SourceList="$apt_dir/sources.list" -o Dir::Etc::SourceParts=/nonexistent \
       -o Dir::State::Lists="$apt_dir/lists" -o Dir::Cache="$apt_dir/cache"
apt-get -q "$@" update
src=$out/linux-source-6.12
if [ ! -d "$src" ]; then
  (cd "$out" && apt-get -q "$@" download linux-source-6.12)
  dpkg-deb --fsys-tarfile "$out"/linux-source-6.12_*.deb | tar -xO ./usr/src/linux-source-6.12.tar.xz | tar -xJ -C "$out"
fi
cd "$src"
make -s tinyconfig
./scripts/kconfig/merge_config.sh -m .config "$here/iommufd-kernel.config" >/dev/null
make -s olddefconfig
for option in IOMMUFD VFIO_DEVICE_CDEV VFIO_CONTAINER VFIO_PCI INTEL_IOMMU; do
  grep -q "^CONFIG_$option=y" .config || { echo "$0: CONFIG_$option did not stay on" >&2; exit 1; }
done
make -j"$(nproc)" bzImage
cp arch/x86/boot/bzImage "$out/bzImage"
echo "$out/bzImage"
