#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Builds the Debian 12 guest of the VM tier (tests/vm/run.sh): a bookworm
# root from Debian's registry with its stock kernel, systemd as PID 1,
# journald, logind, openssh-server and Debian's own PAM stacks, made into a
# raw ext4 image without mounting anything on the host (mkfs.ext4 -d; the
# chroot steps mount nothing, and debootstrap runs in its own mount namespace).
#
# Usage: tests/vm/image.sh VMDIR SSH_PUBKEY FILE...
#   VMDIR       where the root, kernel, initrd and image go (created)
#   SSH_PUBKEY  root's authorized key in the guest
#   FILE...     copied into the guest's /root/sbx-vm/ (the .deb, helpers, suite)
# Environment: SBX_VM_MIRROR (default: the host's Debian mirror).
set -euo pipefail
vm=$1 pubkey=$2
shift 2

# The host's own mirror: CI reaches Debian's registry and nothing else.
mirror=${SBX_VM_MIRROR:-}
if [ -z "$mirror" ]; then
	mirror=$(sed -n 's/^URIs:[[:space:]]*\(http[^ ]*\/debian\)[[:space:]]*$/\1/p' \
		/etc/apt/sources.list.d/*.sources 2>/dev/null | head -n 1)
fi
if [ -z "$mirror" ]; then
	mirror=$(sed -n 's/^deb[[:space:]]\+\(http[^ ]*\/debian\)[[:space:]]\+bookworm[[:space:]].*/\1/p' \
		/etc/apt/sources.list 2>/dev/null | head -n 1)
fi
mirror=${mirror:-http://deb.debian.org/debian}

# What a stock Debian 12 server has where this product touches it: systemd
# (logind, journald, pam_systemd in common-session, the systemd-user PAM
# stack in /usr/lib/pam.d), openssh, and the stock kernel with its initrd.
pkgs=systemd-sysv,systemd,dbus,libpam-systemd,udev,kmod,openssh-server,openssh-sftp-server
pkgs=$pkgs,linux-image-amd64,initramfs-tools,iproute2,procps,libpam-modules,libseccomp2,libcap2
pkgs=$pkgs,util-linux,login,passwd,adduser,e2fsprogs
# socat: the egress tests speak to agent-sandbox-egressd's unix socket and
# serve a destination on 127.0.0.2 with it.
pkgs=$pkgs,socat

root=$vm/root
mkdir -p "$vm"
# debootstrap mounts /proc and /sys inside the new root while it installs:
# in a mount namespace of its own, so the host's mount table never changes
# (and nothing stays mounted if it dies).
unshare --mount --propagation private \
	debootstrap --variant=minbase --include="$pkgs" bookworm "$root" "$mirror" >"$vm/debootstrap.log" 2>&1 || {
	tail -n 20 "$vm/debootstrap.log" >&2
	exit 1
}

echo sbxvm >"$root/etc/hostname"
printf '127.0.0.1\tlocalhost\n127.0.1.1\tsbxvm\n' >"$root/etc/hosts"
echo '/dev/vda / ext4 rw,errors=remount-ro 0 1' >"$root/etc/fstab"
# qemu's user network answers DHCP; systemd-networkd takes it.
cat >"$root/etc/systemd/network/10-sbxvm.network" <<'EOF'
[Match]
Name=en* eth*

[Network]
DHCP=ipv4
EOF
chroot "$root" systemctl enable systemd-networkd.service >/dev/null 2>&1
# Nothing of Debian's housekeeping runs during the suite: its timers would
# compete for the emulated CPUs and could leave units of their own.
for u in apt-daily.timer apt-daily-upgrade.timer e2scrub_all.timer e2scrub_reap.service \
	fstrim.timer man-db.timer; do
	chroot "$root" systemctl mask "$u" >/dev/null 2>&1 || true
done
install -d -m 0700 "$root/root/.ssh" "$root/root/sbx-vm"
install -m 0600 "$pubkey" "$root/root/.ssh/authorized_keys"
for f in "$@"; do
	install -m 0755 "$f" "$root/root/sbx-vm/"
done
rm -f "$root"/var/cache/apt/archives/*.deb

kernel=$(ls "$root"/boot/vmlinuz-* | sort -V | tail -n 1)
initrd=$(ls "$root"/boot/initrd.img-* | sort -V | tail -n 1)
cp "$kernel" "$vm/vmlinuz"
cp "$initrd" "$vm/initrd.img"
truncate -s 3G "$vm/disk.raw"
mkfs.ext4 -q -F -L sbxvm -d "$root" "$vm/disk.raw"
rm -rf "$root"
echo "guest: bookworm from $mirror, kernel $(basename "$kernel")"
