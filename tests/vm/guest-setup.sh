#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Runs as root inside the Debian 12 guest (tests/vm/run.sh): the package
# installed the way README "Deploying on a host" says, the PAM lines of its
# walkthrough (extracted from README.md by run.sh, in readme-pam.sh), the
# example profiles' agents enrolled, and the fixtures the suite's denials
# need. Every step that fails stops the setup with its name.
set -euo pipefail
cd /root/sbx-vm
step() { echo "setup: $*"; }

step "apt install the package"
export DEBIAN_FRONTEND=noninteractive
apt-get install -y -q ./agent-sandbox_*.deb >apt.log 2>&1 || { tail -n 20 apt.log; exit 1; }

# The postinst ran pam-auth-update: the module is in every common-*
# stack that sshd, login, su, cron and atd include, once.
step "pam-auth-update wired the module"
for f in common-account common-session common-session-noninteractive; do
	n=$(grep -c '^[^#]*pam_agent_sandbox\.so' "/etc/pam.d/$f" || true)
	[ "$n" = 1 ] || { echo "setup: /etc/pam.d/$f names the module $n times"; exit 1; }
done

# Before anything could connect to it: the socket listens, the daemon
# does not run yet (the suite reads this).
step "agent-sandbox-egressd's units after install"
{
	systemctl is-enabled agent-sandbox-egressd.socket || true
	systemctl is-active agent-sandbox-egressd.socket || true
	systemctl is-active agent-sandbox-egressd.service || true
} >egressd-after-install.out 2>&1

step "PAM lines from README's walkthrough"
bash -e ./readme-pam.sh
sshd -t
systemctl reload ssh
# The doctor before any agent exists (the suite reads it).
agent-shell --doctor >doctor-before.out 2>&1 || true

# The shipped config matches nobody; the admin's rules go in a drop-in
# (the header's example): one agent per shipped profile.
step "conf.d/local.conf: the admin's [match] rules"
install -d -m 0755 /etc/agent-sandbox/conf.d
printf '[match]\ngroup agents = coder\ngroup reviewers = reviewer\nuser ci-runner = ci\n' \
	>/etc/agent-sandbox/conf.d/local.conf
chmod 0644 /etc/agent-sandbox/conf.d/local.conf
step "enrol coder1 (coder), rev1 (reviewer), ci-runner (ci)"
getent group reviewers >/dev/null || groupadd reviewers
agent-shell --enroll coder1 >enroll.log
agent-shell --enroll rev1 --group reviewers >>enroll.log
agent-shell --enroll ci-runner >>enroll.log
install -d /opt/toolchains
for u in coder1 rev1; do
	install -d -m 0750 -o "$u" -g "$u" "/srv/agents/$u/cache"
done
install -d -m 0750 -o rev1 -g rev1 /srv/agents/rev1/notes
for u in coder1 rev1 ci-runner; do
	install -d -m 0700 -o "$u" -g "$u" "/home/$u/.ssh"
	install -m 0600 -o "$u" -g "$u" agent.pub "/home/$u/.ssh/authorized_keys"
done

# Session limits (cgroup v2 through systemd), as an admin adds them: a
# profile of its own and a user rule, which beats the group rule.
step "profile limited (memory_max, pids_max, cpu_max) for lim1"
printf '[profile limited]\ninherit = coder\nmemory_max = 256M\npids_max = 64\ncpu_max = 50\n\n[match]\nuser lim1 = limited\n' \
	>/etc/agent-sandbox/conf.d/limited.conf
chmod 0644 /etc/agent-sandbox/conf.d/limited.conf
agent-shell --check-config >/dev/null
agent-shell --enroll lim1 --profile limited >>enroll.log
install -d -m 0750 -o lim1 -g lim1 /srv/agents/lim1/cache
install -d -m 0700 -o lim1 -g lim1 /home/lim1/.ssh
install -m 0600 -o lim1 -g lim1 agent.pub /home/lim1/.ssh/authorized_keys

# network = proxy, as an admin turns it on: the shipped ceiling says
# network = deny, which no drop-in may change, so the main file is edited;
# a profile of its own for egress1 names one destination served in this
# guest on 127.0.0.2 (a literal entry: a loopback address is reached only
# through an entry naming it).
step "profile egress (network = proxy, 127.0.0.2:7070) for egress1"
sed -i '/^\[ceiling\]/,/^\[/ s/^network = deny$/network = proxy/' /etc/agent-sandbox/agent-sandbox.conf
sed -n '/^\[ceiling\]/,/^\[/p' /etc/agent-sandbox/agent-sandbox.conf | grep -q '^network = proxy' ||
	{ echo "setup: the ceiling's network line was not changed"; exit 1; }
printf '[profile egress]\ninherit = coder\nnetwork = proxy\negress_allow = 127.0.0.2:7070\negress_allow = localhost:7070\n\n[match]\nuser egress1 = egress\n' \
	>/etc/agent-sandbox/conf.d/egress.conf
chmod 0644 /etc/agent-sandbox/conf.d/egress.conf
agent-shell --check-config >/dev/null
agent-shell --enroll egress1 --profile egress >>enroll.log
install -d -m 0750 -o egress1 -g egress1 /srv/agents/egress1/cache
install -d -m 0700 -o egress1 -g egress1 /home/egress1/.ssh
install -m 0600 -o egress1 -g egress1 agent.pub /home/egress1/.ssh/authorized_keys
# An account no rule matches yet (the reload test adds one).
useradd --create-home --shell /bin/bash egress2

# A normal account, to log in again after the package is removed.
step "a normal user, plain1"
useradd --create-home --shell /bin/bash plain1
install -d -m 0700 -o plain1 -g plain1 /home/plain1/.ssh
install -m 0600 -o plain1 -g plain1 agent.pub /home/plain1/.ssh/authorized_keys

step "fixtures"
install -d -m 0755 /usr/local/lib/sbx-vm
install -m 0755 sbx_probe_inside tcp_listen /usr/local/lib/sbx-vm/
# The coder profile's deny_read = /srv/secrets; a neighbour the agent may read.
install -d -m 0755 /srv/secrets
echo TOPSECRET >/srv/secrets/key
chmod 0644 /srv/secrets/key
echo PUBLIC >/srv/public
# A host directory coder1 may write by DAC; the profile does not grant it.
install -d -m 0700 -o coder1 -g coder1 /var/tmp/sbxvm-out
echo host >/var/tmp/sbxvm-out/file
chown coder1:coder1 /var/tmp/sbxvm-out/file
echo "setup: done"
