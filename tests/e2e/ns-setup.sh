#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Mounts of the e2e world, run by tests/e2e/run.sh inside its private mount namespace.
#
# Usage: ns-setup.sh HOST_MNT_NS WORLD_DIR
# Refuses to run in the mount namespace named by HOST_MNT_NS (the caller's):
# every mount below must stay in the test's namespace.
set -eu
host_ns=$1 world=$2
if [ "$(readlink /proc/self/ns/mnt)" = "$host_ns" ]; then
	echo "ns-setup.sh: refusing: this is the caller's mount namespace" >&2
	exit 1
fi
mount --make-rprivate /
# /run: the test's own (privsep dir, session records, the world at /run/e2e).
mount -t tmpfs -o mode=0755,size=64m,nosuid,nodev e2e-run /run
mkdir -m 0755 /run/sshd /run/e2e /run/agent-sandbox /run/ovl /run/hostdev
mount --bind "$world" /run/e2e
# /etc: an overlay, so accounts, PAM services and the config exist only here.
mkdir /run/ovl/upper /run/ovl/work
mount -t overlay -o lowerdir=/etc,upperdir=/run/ovl/upper,workdir=/run/ovl/work e2e-etc /etc
# /var/log: useradd resets the new uids' lastlog and faillog records, and
# sshd and login append to wtmp and lastlog; all of it stays here.
mkdir /run/ovl/log-upper /run/ovl/log-work
mount -t overlay -o lowerdir=/var/log,upperdir=/run/ovl/log-upper,workdir=/run/ovl/log-work e2e-log /var/log
# /dev: the usual nodes, a devpts instance for the session PTYs, and room
# for /dev/log (the syslog sink binds it).
mount --rbind /dev /run/hostdev
mount -t tmpfs -o mode=0755,size=1m,nosuid e2e-dev /dev
for n in null zero full random urandom tty; do
	touch /dev/$n
	mount --bind /run/hostdev/$n /dev/$n
done
mkdir -m 0755 /dev/pts
mkdir -m 1777 /dev/shm
mount -t devpts -o newinstance,ptmxmode=0666,mode=0620,gid=5 e2e-pts /dev/pts
ln -s pts/ptmx /dev/ptmx
mount -t tmpfs -o mode=1777,nosuid,nodev e2e-shm /dev/shm
ln -s /proc/self/fd /dev/fd
ln -s /proc/self/fd/0 /dev/stdin
ln -s /proc/self/fd/1 /dev/stdout
ln -s /proc/self/fd/2 /dev/stderr
umount -l /run/hostdev
rmdir /run/hostdev
