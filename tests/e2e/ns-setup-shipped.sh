#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Mounts of the shipped-config world, run by tests/e2e/run.sh inside a mount
# namespace nested in the e2e world's. It stands for a Debian host after
# README "Deploying on a host": etc/agent-sandbox.conf at its real path, the
# PAM stacks edited as step 2 says, the sshd drop-in in sshd_config.d, the
# module in the system PAM directory. The fixed paths the shipped files name
# (/etc/agent-sandbox, /var/lib/agent-sandbox, /srv, /opt, /home) are this
# namespace's own, so the world's e2e config and the host stay as they are.
#
# Usage: ns-setup-shipped.sh HOST_MNT_NS WORLD_MNT_NS PAMDIR
# Refuses to run in either named namespace: every mount below must stay here.
set -eu
host_ns=$1 world_ns=$2 pamdir=$3
self=$(readlink /proc/self/ns/mnt)
if [ "$self" = "$host_ns" ] || [ "$self" = "$world_ns" ]; then
	echo "ns-setup-shipped.sh: refusing: this is the host's or the world's mount namespace" >&2
	exit 1
fi
case "$pamdir" in /*/security) ;; *) echo "ns-setup-shipped.sh: odd PAMDIR $pamdir" >&2; exit 1 ;; esac
mount --make-rprivate /
# Upper layers on the world's /run tmpfs: gone with the world.
base=/run/ovl-shipped
for d in etc var pam pamcfg; do
	mkdir -p "$base/$d/upper" "$base/$d/work"
done
# /etc over the world's /etc: the config, the PAM edits, sshd_config and
# the accounts of this world exist only here (the world's e2e config at the
# same fixed path is untouched for the other sshds).
mount -t overlay -o "lowerdir=/etc,upperdir=$base/etc/upper,workdir=$base/etc/work" e2e-s-etc /etc
# /var: /var/lib/agent-sandbox (the shipped state_dir), and what useradd,
# login and sshd write (lastlog, wtmp, mail spools).
mount -t overlay -o "lowerdir=/var,upperdir=$base/var/upper,workdir=$base/var/work" e2e-s-var /var
# The system PAM directory, where "make install" puts the module: the
# shipped snippets name it without a path.
mount -t overlay -o "lowerdir=$pamdir,upperdir=$base/pam/upper,workdir=$base/pam/work" e2e-s-pam "$pamdir"
# pam-auth-update's profiles, where the package puts its own: the
# postinst's pam-auth-update then writes this world's common-* stacks.
mkdir -p /usr/share/pam-configs
mount -t overlay -o "lowerdir=/usr/share/pam-configs,upperdir=$base/pamcfg/upper,workdir=$base/pamcfg/work" \
	e2e-s-pamcfg /usr/share/pam-configs
# The profiles' trees and the passwd homes (useradd --create-home).
for d in /srv /opt /home; do
	mount -t tmpfs -o mode=0755,size=64m,nosuid,nodev e2e-s-tree "$d"
done
