#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The VM tier: the real target. A Debian 12 guest built from Debian's
# registry (tests/vm/image.sh) with its stock kernel (6.1, Landlock ABI 2),
# systemd as PID 1, logind, journald, cgroup v2 and Debian's own PAM stacks
# (common-* with pam_systemd), booted under qemu. The project's .deb is
# installed in it and wired the way README's walkthrough says; then agents
# of every shipped profile log in over ssh, from this host, through a port
# qemu forwards on 127.0.0.1 only.
#
# Usage: tests/vm/run.sh BUILD_DIR      (root; cmocka-style result lines)
#   SBX_VM_KEEP=1    keep BUILD_DIR/vm (image, console log) for a post-mortem
#   SBX_VM_ACCEL     qemu accelerator (default tcg: this host's KVM is not
#                    usable for a guest)
#
# Nothing on the host changes: the guest's disk is a file under BUILD_DIR,
# qemu is ended by its pid, and the directory is removed at exit.
set -u
export LC_ALL=C
BUILD=$(cd "${1:-build}" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$HERE/../.." && pwd)
# shellcheck source=../tier.sh
. "$SRC/tests/tier.sh"
tier_require_root

VM=$BUILD/vm
QEMU_PID=
T0=$(date +%s)
phase_start=$T0
phases=()
phase() {
	local now
	now=$(date +%s)
	phases+=("$1 $((now - phase_start))s")
	phase_start=$now
}

cleanup() {
	if [ -n "$QEMU_PID" ] && [ -r "/proc/$QEMU_PID/cmdline" ] &&
		tr '\0' ' ' <"/proc/$QEMU_PID/cmdline" | grep -qF "$VM/disk.raw"; then
		kill "$QEMU_PID" 2>/dev/null
		for _ in $(seq 1 50); do
			[ -d "/proc/$QEMU_PID" ] || break
			sleep 0.1
		done
		kill -KILL "$QEMU_PID" 2>/dev/null
	fi
	if [ "${SBX_VM_KEEP:-0}" = 1 ]; then
		echo "vm: kept $VM"
	else
		rm -rf "$VM"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

deb=$(ls "$BUILD"/agent-sandbox_*_amd64.deb 2>/dev/null | head -n 1)
for f in "$deb" "$BUILD/tests/sbx_probe_inside" "$BUILD/tests/tcp_listen"; do
	[ -f "$f" ] || { bad setup "${f:-the .deb} missing (make deb $BUILD/tests/sbx_probe_inside)"; summary; exit 1; }
done

# The PAM lines a sysadmin copies from README's walkthrough, as written:
# from "# A='-account" to the runuser-l line, "# "/"> " prompts removed.
readme_pam() {
	sed -n "/^# A='-account/,/runuser-l\$/p" "$SRC/README.md" | sed -e 's/^# //' -e 's/^> //'
}

rm -rf "$VM"
mkdir -p "$VM/files"
ssh-keygen -q -t ed25519 -N '' -C sbx-vm-root -f "$VM/id_root"
ssh-keygen -q -t ed25519 -N '' -C sbx-vm-agent -f "$VM/id_agent"
cp "$deb" "$BUILD/tests/sbx_probe_inside" "$BUILD/tests/tcp_listen" "$HERE/guest-setup.sh" \
	"$HERE/egress_ping.sh" "$VM/files/"
cp "$VM/id_agent.pub" "$VM/files/agent.pub"
# The same package under a higher version, for the upgrade test.
if ! { dpkg-deb -R "$deb" "$VM/repack" &&
	sed -i 's/^Version: .*/&+vmupgrade1/' "$VM/repack/DEBIAN/control" &&
	dpkg-deb --root-owner-group -b "$VM/repack" "$VM/files/sbx-upgrade.deb" >/dev/null; }; then
	bad setup "repacking $deb as a higher version failed"
	summary
	exit 1
fi
rm -rf "$VM/repack"
readme_pam >"$VM/files/readme-pam.sh"
if ! grep -q pam_agent_sandbox.so "$VM/files/readme-pam.sh" ||
	! grep -q runuser-l "$VM/files/readme-pam.sh"; then
	bad setup "README.md: no PAM walkthrough lines found (from \"# A='-account\" to runuser-l)"
	summary
	exit 1
fi

# ---- image -------------------------------------------------------------
if ! "$HERE/image.sh" "$VM" "$VM/id_root.pub" "$VM"/files/*; then
	bad image "building the Debian 12 guest failed"
	summary
	exit 1
fi
phase image

# ---- boot --------------------------------------------------------------
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
qemu-system-x86_64 -name sbx-vm -machine "pc,accel=${SBX_VM_ACCEL:-tcg}" -cpu max -smp 2 -m 2048 \
	-display none -monitor none -no-reboot -serial "file:$VM/console.log" \
	-kernel "$VM/vmlinuz" -initrd "$VM/initrd.img" \
	-append "root=/dev/vda rw console=ttyS0 panic=-1" \
	-drive "file=$VM/disk.raw,format=raw,if=virtio" \
	-netdev "user,id=n0,restrict=on,hostfwd=tcp:127.0.0.1:$PORT-:22" \
	-device virtio-net-pci,netdev=n0 >"$VM/qemu.log" 2>&1 &
QEMU_PID=$!

# The guest's host key is new at every run and reached on 127.0.0.1 only.
COMMON_OPTS=(-o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null
	-o ConnectTimeout=20 -o ServerAliveInterval=10 -o ServerAliveCountMax=6)
SSH_OPTS=("${COMMON_OPTS[@]}" -p "$PORT")
SCP_OPTS=("${COMMON_OPTS[@]}" -P "$PORT" -o LogLevel=ERROR -i "$VM/id_agent")
vm_root() { ssh "${SSH_OPTS[@]}" -o LogLevel=ERROR -i "$VM/id_root" root@127.0.0.1 "$@"; }
# as_agent USER CMD...: a real ssh login of the agent, from outside.
as_agent() {
	local user=$1
	shift
	ssh "${SSH_OPTS[@]}" -o LogLevel=ERROR -i "$VM/id_agent" "$user@127.0.0.1" "$@"
}

up=0
for _ in $(seq 1 100); do
	[ -d "/proc/$QEMU_PID" ] || break
	if vm_root true 2>/dev/null; then
		up=1
		break
	fi
	sleep 3
done
if [ "$up" != 1 ]; then
	bad boot "the guest did not answer ssh within 300 s; console:"
	tail -n 30 "$VM/console.log" "$VM/qemu.log"
	summary
	exit 1
fi
KERNEL=$(vm_root uname -r)
echo "vm: guest up, kernel $KERNEL, $(vm_root systemctl is-system-running 2>&1)"
phase boot

# ---- setup -------------------------------------------------------------
if ! vm_root bash /root/sbx-vm/guest-setup.sh; then
	bad setup "guest-setup.sh failed"
	summary
	exit 1
fi
phase setup

# ---- the suite ---------------------------------------------------------
# shellcheck source=suite.sh
. "$HERE/suite.sh"
phase suite

echo "vm: phases: ${phases[*]}; total $(($(date +%s) - T0))s"
summary
