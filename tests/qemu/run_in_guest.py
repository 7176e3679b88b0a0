#!/usr/bin/python3
"""Runs a statically linked test program inside a QEMU guest whose emulated PCI devices
are bound to vfio-pci behind QEMU's intel-iommu (TCG, no KVM needed).

  run_in_guest.py --cache-dir BUILD/qemu-cache --device edu [--device e1000e ...]
                  [--qemu-device pcie-root-port,id=rp1 ...] [--iommu off] TEST [ARGS...]

Steps: (a) `apt-get download` a Debian 6.1 kernel image into the cache dir and extract
vmlinuz and the vfio modules with `dpkg-deb -x`; (b) build a busybox initramfs whose init
loads the modules, binds every emulated device to vfio-pci (driver_override), runs
`/test BDF... ARGS...` (the BDFs of the bound devices, in --device order) and prints
`QEMU-TEST-EXIT-STATUS=<n>`; (c) boot QEMU with a timeout; (d) exit with the test's status.
--qemu-device adds a device the guest leaves to its own drivers (bridges, ports, a function
that shares a --device's IOMMU group). With --iommu off the guest has no IOMMU: binding is
tried, its failure expected, and the test gets the BDFs all the same.
Where the test cannot run, the script says why on stderr and exits with 125: it never
skips silently.
"""

import argparse
import fcntl
import glob
import lzma
import os
import re
import shutil
import subprocess
import sys
import time

CANNOT_RUN = 125
EXIT_MARKER = "QEMU-TEST-EXIT-STATUS="
INIT_MARKER = "QEMU-TEST-INIT-STARTED"

# QEMU device name -> PCI vendor:device the guest sees.
KNOWN_DEVICES = {
    "edu": "1234:11e8",
    "e1000e": "8086:10d3",
    "nvme": "1b36:0010",
}

# Load order matters: each module needs the ones before it.
VFIO_MODULES = ["irqbypass", "vfio", "vfio_iommu_type1", "vfio_virqfd", "vfio-pci-core", "vfio-pci"]
OPTIONAL_MODULES = {"vfio_virqfd"}  # merged into vfio in later kernels


def cannot_run(why):
    print(f"run_in_guest: cannot run the guest test: {why}", file=sys.stderr)
    sys.exit(CANNOT_RUN)


def run(cmd, cwd=None, what=None):
    try:
        result = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    except FileNotFoundError:
        cannot_run(f"`{cmd[0]}` is not installed ({what or 'needed here'})")
    if result.returncode != 0:
        last = (result.stdout.strip().splitlines() or ["no output"])[-1]
        cannot_run(f"`{' '.join(cmd)}` failed ({what}): {last}")
    return result.stdout


def kernel_package_name(requested):
    if requested:
        return requested
    out = run(["apt-cache", "show", "linux-image-amd64"], what="find Debian's current 6.1 kernel image; "
              "install apt or pass --kernel-package linux-image-6.1.0-N-amd64")
    for line in out.splitlines():
        m = re.match(r"Depends:.*\b(linux-image-6\.1\.0-\d+-amd64)\b", line)
        if m:
            return m.group(1)
    cannot_run("apt-cache knows no linux-image-6.1.0-N-amd64 behind linux-image-amd64: run `apt-get update` "
               "or pass --kernel-package")


def fetch_kernel(cache_dir, package):
    """Returns (vmlinuz path, {module name: .ko path}) from the extracted package."""
    pkg_dir = os.path.join(cache_dir, package)
    root = os.path.join(pkg_dir, "root")
    if not os.path.isdir(os.path.join(root, "boot")):
        os.makedirs(pkg_dir, exist_ok=True)
        debs = glob.glob(os.path.join(pkg_dir, package + "_*.deb"))
        if not debs:
            run(["apt-get", "download", package], cwd=pkg_dir,
                what=f"download {package} from Debian's mirror; run `apt-get update` first")
            debs = glob.glob(os.path.join(pkg_dir, package + "_*.deb"))
            if not debs:
                cannot_run(f"`apt-get download {package}` left no .deb in {pkg_dir}")
        tmp = root + ".tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        run(["dpkg-deb", "-x", debs[0], tmp], what="extract the kernel package")
        os.rename(tmp, root)
    vmlinuz = glob.glob(os.path.join(root, "boot", "vmlinuz-*"))
    if not vmlinuz:
        cannot_run(f"{package} holds no boot/vmlinuz-*")
    modules = {}
    for path in glob.glob(os.path.join(root, "lib", "modules", "*", "kernel", "**", "*.ko*"), recursive=True):
        name = os.path.basename(path).split(".ko")[0]
        if name in VFIO_MODULES:
            modules[name] = path
    missing = [m for m in VFIO_MODULES if m not in modules and m not in OPTIONAL_MODULES]
    if missing:
        cannot_run(f"{package} lacks the modules {', '.join(missing)}")
    return vmlinuz[0], modules


INIT_TEMPLATE = r"""#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin
mkdir -p /proc /sys /dev /tmp
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
echo "@INIT_MARKER@"
finish() { echo "@EXIT_MARKER@$1"; sync; poweroff -f; sleep 5; }
for m in @MODULES@; do
  insmod /lib/modules/$m.ko || { echo "QEMU-TEST: insmod $m failed"; finish 126; }
done
[ -e /dev/vfio/vfio ] || [ -e /dev/iommu ] || { echo "QEMU-TEST: no /dev/vfio/vfio nor /dev/iommu after loading the modules"; finish 126; }
BDFS=""
for id in @IDS@; do
  found=""
  for d in /sys/bus/pci/devices/*; do
    [ "$found" ] && break
    v=$(cat $d/vendor); p=$(cat $d/device)
    [ "${v#0x}:${p#0x}" = "$id" ] || continue
    case " $BDFS " in *" ${d##*/} "*) continue;; esac
    found=${d##*/}
  done
  [ "$found" ] || { echo "QEMU-TEST: no PCI function $id in the guest"; finish 126; }
  d=/sys/bus/pci/devices/$found
  echo vfio-pci > $d/driver_override
  [ -e $d/driver ] && echo $found > $d/driver/unbind
  echo $found > /sys/bus/pci/drivers_probe
  drv=$(basename $(readlink $d/driver) 2>/dev/null)
  if [ "@IOMMU@" = on ]; then
    [ "$drv" = vfio-pci ] || { echo "QEMU-TEST: $found ($id) did not bind to vfio-pci (driver: ${drv:-none})"; dmesg | tail -5; finish 126; }
    echo "QEMU-TEST: $found ($id) on vfio-pci, iommu group $(basename $(readlink $d/iommu_group))"
  else
    [ -e $d/iommu_group ] && { echo "QEMU-TEST: $found ($id) has an IOMMU group with the IOMMU off"; finish 126; }
    echo "QEMU-TEST: $found ($id) without an IOMMU, driver: ${drv:-none}"
  fi
  BDFS="$BDFS $found"
done
/test $BDFS @ARGS@
finish $?
"""


def shell_quote(s):
    return "'" + s.replace("'", "'\\''") + "'"


def write_newc(root, image):
    """Writes the tree under `root` as a cpio archive in the newc format the kernel unpacks."""
    def entry(out, ino, name, mode, data, nlink=1):
        name_b = name.encode() + b"\0"
        header = "070701" + "".join(f"{v:08X}" for v in (ino, mode, 0, 0, nlink, 0, len(data), 0, 0, 0, 0,
                                                         len(name_b), 0))
        out.write(header.encode() + name_b)
        out.write(b"\0" * ((4 - (110 + len(name_b)) % 4) % 4))
        out.write(data)
        out.write(b"\0" * ((4 - len(data) % 4) % 4))

    with open(image, "wb") as out:
        ino = 1
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames.sort()
            rel = os.path.relpath(dirpath, root)
            if rel != ".":
                entry(out, ino, rel, 0o040755, b"", 2)
                ino += 1
            for f in sorted(filenames):
                path = os.path.join(dirpath, f)
                with open(path, "rb") as fh:
                    data = fh.read()
                mode = 0o100755 if os.access(path, os.X_OK) else 0o100644
                entry(out, ino, os.path.normpath(os.path.join(rel, f)), mode, data)
                ino += 1
        entry(out, 0, "TRAILER!!!", 0, b"")


def build_initramfs(work_dir, test_binary, modules, ids, test_args, iommu):
    root = os.path.join(work_dir, "initramfs")
    shutil.rmtree(root, ignore_errors=True)
    os.makedirs(os.path.join(root, "bin"))
    os.makedirs(os.path.join(root, "lib", "modules"))
    busybox = shutil.which("busybox") or "/bin/busybox"
    if not os.path.exists(busybox):
        cannot_run("no busybox: `apt-get install busybox-static`")
    if "statically linked" not in run(["file", "-L", busybox], what="check busybox") and \
            "static-pie" not in run(["file", "-L", busybox], what="check busybox"):
        cannot_run(f"{busybox} is not statically linked: `apt-get install busybox-static`")
    shutil.copy(busybox, os.path.join(root, "bin", "busybox"))
    shutil.copy(test_binary, os.path.join(root, "test"))
    os.chmod(os.path.join(root, "test"), 0o755)
    loaded = []
    for name in VFIO_MODULES:
        if name not in modules:
            continue
        src = modules[name]
        dst = os.path.join(root, "lib", "modules", name + ".ko")
        if src.endswith(".xz"):
            with lzma.open(src) as f, open(dst, "wb") as out:
                out.write(f.read())
        elif src.endswith(".ko"):
            shutil.copy(src, dst)
        else:
            cannot_run(f"module {src}: unknown compression")
        loaded.append(name)
    init = (INIT_TEMPLATE.replace("@INIT_MARKER@", INIT_MARKER).replace("@EXIT_MARKER@", EXIT_MARKER)
            .replace("@MODULES@", " ".join(loaded)).replace("@IDS@", " ".join(ids)).replace("@IOMMU@", iommu)
            .replace("@ARGS@", " ".join(shell_quote(a) for a in test_args)))
    with open(os.path.join(root, "init"), "w") as f:
        f.write(init)
    os.chmod(os.path.join(root, "init"), 0o755)
    image = os.path.join(work_dir, "initramfs.cpio")
    write_newc(root, image)
    return image


def boot(qemu, vmlinuz, initrd, devices, timeout, log_path, memory, iommu):
    # intel-iommu must come before the devices it translates for.
    cmd = [qemu, "-M", "q35", "-accel", "tcg", "-m", memory, "-smp", "1"]
    if iommu == "on":
        cmd += ["-device", "intel-iommu"]
    for d in devices:
        cmd += ["-device", d]
    cmd += ["-kernel", vmlinuz, "-initrd", initrd,
            "-append", f"console=ttyS0 intel_iommu={iommu} panic=-1 quiet loglevel=4",
            "-nographic", "-no-reboot", "-monitor", "none", "-nic", "none"]
    if not shutil.which(qemu):
        cannot_run(f"no {qemu}: `apt-get install qemu-system-x86`")
    start = time.monotonic()
    status = None
    saw_init = False
    with open(log_path, "w") as log:
        log.write(" ".join(cmd) + "\n")
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        try:
            import selectors
            sel = selectors.DefaultSelector()
            sel.register(proc.stdout, selectors.EVENT_READ)
            buf = b""
            while True:
                left = timeout - (time.monotonic() - start)
                if left <= 0:
                    proc.kill()
                    proc.wait()
                    cannot_run(f"the guest did not finish within {timeout} s (log: {log_path})")
                if not sel.select(timeout=min(left, 1.0)):
                    continue
                chunk = os.read(proc.stdout.fileno(), 65536)
                if not chunk:
                    break
                buf += chunk
                while b"\n" in buf:
                    raw, buf = buf.split(b"\n", 1)
                    line = raw.decode(errors="replace").rstrip("\r")
                    log.write(line + "\n")
                    print(line, flush=True)
                    if INIT_MARKER in line:
                        saw_init = True
                        print(f"run_in_guest: init started {time.monotonic() - start:.1f} s after launch", flush=True)
                    m = re.search(EXIT_MARKER + r"(\d+)", line)
                    if m and status is None:
                        status = int(m.group(1))
            proc.wait(timeout=max(1.0, timeout - (time.monotonic() - start)))
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    elapsed = time.monotonic() - start
    print(f"run_in_guest: guest ran {elapsed:.1f} s (QEMU exit {proc.returncode})", flush=True)
    if status is None:
        if not saw_init:
            cannot_run(f"QEMU exited ({proc.returncode}) before the guest's init ran (log: {log_path})")
        cannot_run(f"the guest powered off without reporting the test's status (log: {log_path})")
    if status == 126:
        cannot_run(f"the guest could not set up VFIO (see the QEMU-TEST lines above; log: {log_path})")
    return status


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cache-dir", required=True, help="a directory under the build dir for downloads")
    ap.add_argument("--device", action="append", default=[],
                    help="a QEMU -device (edu, e1000e, nvme or name,props); bound to vfio-pci in the guest")
    ap.add_argument("--qemu-device", action="append", default=[],
                    help="a QEMU -device the guest keeps (a port, a bridge, a function sharing a group)")
    ap.add_argument("--iommu", choices=["on", "off"], default="on", help="off: no intel-iommu in the guest")
    ap.add_argument("--kernel-package", help="default: the linux-image-6.1.0-N-amd64 linux-image-amd64 names")
    ap.add_argument("--kernel-image", help="a bzImage with VFIO built in (no modules), instead of Debian's package; "
                                           "tests/qemu/build_iommufd_kernel.sh makes one with iommufd")
    ap.add_argument("--qemu", default="qemu-system-x86_64")
    ap.add_argument("--memory", default="1G")
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds for the whole guest run")
    ap.add_argument("test", help="a statically linked program; run as /test BDF... ARGS...")
    ap.add_argument("args", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    if not a.device:
        ap.error("give at least one --device")
    if not os.path.isfile(a.test):
        cannot_run(f"no test program {a.test} (build it first)")
    if "dynamically linked" in run(["file", "-L", a.test], what="check the test program"):
        cannot_run(f"{a.test} is dynamically linked; the guest has no libc: link it with -static")
    ids = []
    for d in a.device:
        name = d.split(",")[0]
        if name not in KNOWN_DEVICES:
            cannot_run(f"unknown device {name}: known are {', '.join(KNOWN_DEVICES)}")
        ids.append(KNOWN_DEVICES[name])
    cache = os.path.abspath(a.cache_dir)
    os.makedirs(cache, exist_ok=True)
    if a.kernel_image:
        if not os.path.isfile(a.kernel_image):
            cannot_run(f"no kernel image {a.kernel_image} (tests/qemu/build_iommufd_kernel.sh builds one)")
        vmlinuz, modules = a.kernel_image, {}
    else:
        package = kernel_package_name(a.kernel_package)
        with open(os.path.join(cache, "lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # another guest test may be fetching the same kernel
            vmlinuz, modules = fetch_kernel(cache, package)
    kernel_tag = "custom" if a.kernel_image else "debian"
    work = os.path.join(cache, f"run-{os.path.basename(a.test)}-{kernel_tag}-iommu-{a.iommu}")
    os.makedirs(work, exist_ok=True)
    initrd = build_initramfs(work, a.test, modules, ids, a.args, a.iommu)
    status = boot(a.qemu, vmlinuz, initrd, a.qemu_device + a.device, a.timeout, os.path.join(work, "serial.log"),
                  a.memory, a.iommu)
    print(f"run_in_guest: {os.path.basename(a.test)} exited {status} in the guest", flush=True)
    sys.exit(status)


if __name__ == "__main__":
    main()
