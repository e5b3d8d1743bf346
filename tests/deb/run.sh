#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Package tier: "make deb", then what the three .deb files hold, read back
# with dpkg-deb: the file list (the module under /usr/lib/<triplet>/security
# and nothing under /lib, the completion, the pam-auth-update profile, the
# empty state dir, the doc files, agent-sandbox-egressd in /usr/sbin with
# units systemd-analyze verifies), conffiles, md5sums that verify, control
# fields, the changelog's version, the DEP-5 copyright against LICENSE, and
# maintainer scripts that parse (sh -n, shellcheck when installed). Running
# the scripts in an installed system is the VM tier's job (make check-vm).
#
# Usage: tests/deb/run.sh              (root; BUILD from the environment)
# Creates: one directory under /var/tmp (removed on exit), build/*.deb.
set -u
BUILD=${BUILD:-build}
SRC=$(cd "$(dirname "$0")/../.." && pwd)
. "$SRC/tests/tier.sh"
tier_require_root
T=$(mktemp -d /var/tmp/sbx-deb-XXXXXX)
trap 'rm -rf "$T"' EXIT

VERSION=$(sed -n 's/^#define SBX_VERSION "\(.*\)"/\1/p' "$SRC/lib/sbx.h")
ARCH=$(dpkg --print-architecture)
MA=$(gcc -print-multiarch)
case $BUILD in /*) B=$BUILD ;; *) B=$SRC/$BUILD ;; esac

echo "[ RUN      ] deb_builds"
if make -s -C "$SRC" BUILD="$BUILD" SAN="${SAN:-}" deb >"$T/deb.log" 2>&1; then
	ok deb_builds
else
	bad deb_builds "make deb: $(tail -3 "$T/deb.log")"
	summary
	exit 1
fi
for p in agent-sandbox libsbx0 libsbx-dev; do
	deb=$B/${p}_${VERSION}_${ARCH}.deb
	if ! dpkg-deb -R "$deb" "$T/$p" || ! dpkg-deb -c "$deb" >"$T/$p.list"; then
		bad deb_builds "$deb: cannot be unpacked"
		summary
		exit 1
	fi
done
A=$T/agent-sandbox

# want PKG PATH TYPE [MODE]: PATH (relative to the package root) is a file
# (f), directory (d) or symlink (l), with that mode.
want() {
	local root=$T/$1 path=$2 type=$3 mode=${4:-} got
	case $type in
	f) [ -f "$root/$path" ] && [ ! -L "$root/$path" ] ;;
	d) [ -d "$root/$path" ] && [ ! -L "$root/$path" ] ;;
	l) [ -L "$root/$path" ] ;;
	esac || { echo "  $1: $path: missing or not of type $type"; return 1; }
	if [ -n "$mode" ]; then
		got=$(stat -c %a "$root/$path")
		[ "$got" = "$mode" ] || { echo "  $1: $path: mode $got, want $mode"; return 1; }
	fi
}

echo "[ RUN      ] file_list"
r=0
want agent-sandbox usr/bin/agent-shell f 755 || r=1
want agent-sandbox usr/lib/agent-sandbox/agent-shell f 755 || r=1
want agent-sandbox "usr/lib/$MA/security/pam_agent_sandbox.so" f 644 || r=1
want agent-sandbox usr/share/bash-completion/completions/agent-shell f 644 || r=1
want agent-sandbox usr/share/pam-configs/agent-sandbox f 644 || r=1
want agent-sandbox usr/lib/systemd/system/user@.service.d/agent-sandbox.conf f 644 || r=1
want agent-sandbox usr/sbin/agent-sandbox-egressd f 755 || r=1
want agent-sandbox usr/lib/systemd/system/agent-sandbox-egressd.socket f 644 || r=1
want agent-sandbox usr/lib/systemd/system/agent-sandbox-egressd.service f 644 || r=1
want agent-sandbox usr/lib/systemd/system/agent-sandbox-probe.service f 644 || r=1
grep -qx 'ExecStart=/usr/bin/agent-shell --probe-cache' \
	"$A/usr/lib/systemd/system/agent-sandbox-probe.service" ||
	{ echo "  agent-sandbox-probe.service: ExecStart does not name /usr/bin/agent-shell"; r=1; }
want agent-sandbox var/lib/agent-sandbox d 755 || r=1
for f in copyright changelog.gz agent-sandbox-sshd agent-sandbox-login agent-sandbox-su; do
	want agent-sandbox "usr/share/doc/agent-sandbox/$f" f 644 || r=1
done
for m in man1/agent-shell.1.gz man5/agent-sandbox.conf.5.gz man8/pam_agent_sandbox.8.gz \
	man8/agent-sandbox-egressd.8.gz; do
	want agent-sandbox "usr/share/man/$m" f 644 || r=1
done
want libsbx0 "usr/lib/$MA/libsbx.so.0" f 644 || r=1
want libsbx-dev "usr/lib/$MA/libsbx.so" l || r=1
[ "$(readlink "$T/libsbx-dev/usr/lib/$MA/libsbx.so")" = libsbx.so.0 ] ||
	{ echo "  libsbx-dev: libsbx.so does not point at libsbx.so.0"; r=1; }
want libsbx-dev "usr/lib/$MA/pkgconfig/libsbx.pc" f 644 || r=1
want libsbx-dev usr/include/libsbx.h f 644 || r=1
want libsbx-dev usr/share/man/man3/libsbx.3.gz f 644 || r=1
for p in libsbx0 libsbx-dev; do
	want "$p" "usr/share/doc/$p/copyright" f 644 || r=1
	want "$p" "usr/share/doc/$p/changelog.gz" f 644 || r=1
done
# DEP17: nothing under the merged-/usr aliases, and the state dir empty.
for p in agent-sandbox libsbx0 libsbx-dev; do
	for d in bin sbin lib lib32 lib64 libx32; do
		[ ! -e "$T/$p/$d" ] || { echo "  $p: ships /$d (DEP17: /usr only)"; r=1; }
	done
	# Every file root-owned (dpkg-deb --root-owner-group).
	awk '$2 != "root/root" { print "  '"$p"': not root/root: " $0; bad = 1 } END { exit bad }' \
		"$T/$p.list" || r=1
done
[ -z "$(ls -A "$A/var/lib/agent-sandbox")" ] || { echo "  state dir not empty"; r=1; }
cmp -s "$SRC/completion/agent-shell" "$A/usr/share/bash-completion/completions/agent-shell" || r=1
cmp -s "$SRC/etc/pam-configs/agent-sandbox" "$A/usr/share/pam-configs/agent-sandbox" || r=1
# The library goes in libsbx0 only: agent-shell and the module link it
# statically.
if find "$A" -name 'libsbx.so*' | grep -q .; then echo "  agent-sandbox ships libsbx.so"; r=1; fi
if [ $r = 0 ]; then ok file_list; else bad file_list "see above"; fi

# The units as packaged: the service runs the packaged daemon as its own
# user, the socket is the config's default egress_socket, world-connectable
# in a directory the PAM module accepts (root's, 0755), and systemd reads
# both without a complaint. (systemd-analyze verify wants ExecStart= to
# exist on this host: a copy points it at the unpacked binary.)
echo "[ RUN      ] egressd_units"
r=0
U=$A/usr/lib/systemd/system
grep -qx 'ExecStart=/usr/sbin/agent-sandbox-egressd' "$U/agent-sandbox-egressd.service" ||
	{ echo "  service: ExecStart is not /usr/sbin/agent-sandbox-egressd"; r=1; }
for kv in User=agent-sandbox-egress Group=agent-sandbox-egress Requires=agent-sandbox-egressd.socket \
	NoNewPrivileges=yes CapabilityBoundingSet= ProtectSystem=strict 'ExecReload=kill -HUP $MAINPID'; do
	grep -qxF "$kv" "$U/agent-sandbox-egressd.service" || { echo "  service: no $kv"; r=1; }
done
grep -q '^PrivateUsers=\|^DynamicUser=\|^RuntimeDirectory=' "$U/agent-sandbox-egressd.service" &&
	{ echo "  service: PrivateUsers/DynamicUser/RuntimeDirectory (see the unit's comment)"; r=1; }
sock=$(sed -n 's/^#define SBX_EGRESS_SOCKET "\(.*\)"/\1/p' "$SRC/lib/sbx.h")
for kv in "ListenStream=$sock" SocketMode=0666 DirectoryMode=0755 SocketUser=root WantedBy=sockets.target; do
	grep -qxF "$kv" "$U/agent-sandbox-egressd.socket" || { echo "  socket: no $kv"; r=1; }
done
grep -q "useradd\|adduser --system --group .*--no-create-home --home /nonexistent" "$A/DEBIAN/postinst" ||
	{ echo "  postinst: does not create the daemon's system user"; r=1; }
if command -v systemd-analyze >/dev/null; then
	mkdir -p "$T/units"
	cp "$U/agent-sandbox-egressd.socket" "$T/units/"
	sed "s|^ExecStart=/usr/sbin/|ExecStart=$A/usr/sbin/|" "$U/agent-sandbox-egressd.service" \
		>"$T/units/agent-sandbox-egressd.service"
	(cd "$T/units" && SYSTEMD_LOG_LEVEL=notice systemd-analyze verify --man=no \
		./agent-sandbox-egressd.socket ./agent-sandbox-egressd.service) >"$T/verify.log" 2>&1 ||
		{ echo "  systemd-analyze verify: $(cat "$T/verify.log")"; r=1; }
	[ ! -s "$T/verify.log" ] || { echo "  systemd-analyze verify says: $(cat "$T/verify.log")"; r=1; }
else
	echo "  (systemd-analyze not installed: units not verified here; the VM tier does)"
fi
if [ $r = 0 ]; then ok egressd_units; else bad egressd_units "see above"; fi

echo "[ RUN      ] conffiles_are_the_etc_files"
(cd "$A" && find etc -type f | sed 's|^|/|' | sort) >"$T/etc.list"
if [ -f "$A/DEBIAN/conffiles" ] && diff -u "$T/etc.list" "$A/DEBIAN/conffiles" &&
	grep -qx /etc/agent-sandbox/agent-sandbox.conf "$A/DEBIAN/conffiles" &&
	grep -qx /etc/ssh/sshd_config.d/agent-sandbox.conf "$A/DEBIAN/conffiles"; then
	ok conffiles_are_the_etc_files
else
	bad conffiles_are_the_etc_files "DEBIAN/conffiles differs from the files under /etc"
fi

echo "[ RUN      ] md5sums_verify_and_cover_every_file"
r=0
for p in agent-sandbox libsbx0 libsbx-dev; do
	(cd "$T/$p" && md5sum -c --quiet DEBIAN/md5sums) || { echo "  $p: md5sum -c failed"; r=1; }
	n=$(cd "$T/$p" && find . -path ./DEBIAN -prune -o -type f -print | wc -l)
	m=$(wc -l <"$T/$p/DEBIAN/md5sums")
	[ "$n" = "$m" ] || { echo "  $p: $n files, $m md5sums"; r=1; }
done
if [ $r = 0 ]; then ok md5sums_verify_and_cover_every_file; else bad md5sums_verify_and_cover_every_file "see above"; fi

echo "[ RUN      ] control_fields"
r=0
for p in agent-sandbox libsbx0 libsbx-dev; do
	c=$T/$p/DEBIAN/control
	[ "$(dpkg-deb -f "$B/${p}_${VERSION}_${ARCH}.deb" Version)" = "$VERSION" ] ||
		{ echo "  $p: Version is not $VERSION"; r=1; }
	m=$(sed -n 's/^Maintainer: //p' "$c")
	case $m in
	*"<"*@*.*">"*) ;;
	*) echo "  $p: Maintainer $m: no mail address"; r=1 ;;
	esac
	case $m in *root@* | *@localhost*) echo "  $p: Maintainer $m"; r=1 ;; esac
done
grep -q '^Depends:.*libsbx0' "$A/DEBIAN/control" && { echo "  agent-sandbox depends on libsbx0"; r=1; }
grep -qx 'Depends: libsbx0 (= '"$VERSION"')' "$T/libsbx-dev/DEBIAN/control" || { echo "  libsbx-dev Depends"; r=1; }
grep -qx "libsbx 0 libsbx0 (>= $VERSION)" "$T/libsbx0/DEBIAN/shlibs" || { echo "  libsbx0 shlibs"; r=1; }
grep -qx 'activate-noawait ldconfig' "$T/libsbx0/DEBIAN/triggers" || { echo "  libsbx0 triggers"; r=1; }
if [ $r = 0 ]; then ok control_fields; else bad control_fields "see above"; fi

echo "[ RUN      ] changelog_and_copyright"
r=0
zcat "$A/usr/share/doc/agent-sandbox/changelog.gz" >"$T/changelog"
v=$(dpkg-parsechangelog -l "$T/changelog" -S Version 2>"$T/pc.log") || { echo "  $(cat "$T/pc.log")"; r=1; }
[ "$v" = "$VERSION" ] || { echo "  changelog version $v, lib/sbx.h $VERSION"; r=1; }
cp=$A/usr/share/doc/agent-sandbox/copyright
head -1 "$cp" | grep -qx 'Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/' ||
	{ echo "  copyright: not DEP-5"; r=1; }
# The license paragraph's text is LICENSE's, from "Redistribution" on.
sed -n '/^License: BSD-3-Clause$/,$p' "$cp" | sed -n '/^ Redistribution/,$p' |
	sed 's/^ //; s/^\.$//' >"$T/license"
sed -n '/^Redistribution/,$p' "$SRC/LICENSE" | diff -u - "$T/license" >/dev/null ||
	{ echo "  copyright: license text differs from LICENSE"; r=1; }
if [ $r = 0 ]; then ok changelog_and_copyright; else bad changelog_and_copyright "see above"; fi

echo "[ RUN      ] maintainer_scripts_parse"
r=0
for s in postinst prerm postrm; do
	f=$A/DEBIAN/$s
	want agent-sandbox "DEBIAN/$s" f 755 || { r=1; continue; }
	sh -n "$f" || { echo "  $s: sh -n"; r=1; }
	if command -v shellcheck >/dev/null; then
		shellcheck -s sh "$f" || { echo "  $s: shellcheck"; r=1; }
	fi
done
grep -q '^[[:space:]]*add-shell /usr/bin/agent-shell$' "$A/DEBIAN/postinst" || { echo "  postinst: no add-shell"; r=1; }
grep -q '^[[:space:]]*pam-auth-update --package$' "$A/DEBIAN/postinst" || { echo "  postinst: no pam-auth-update"; r=1; }
grep -q '^[[:space:]]*pam-auth-update --package --remove agent-sandbox$' "$A/DEBIAN/prerm" ||
	{ echo "  prerm: no pam-auth-update --remove"; r=1; }
grep -q '^[[:space:]]*remove-shell /usr/bin/agent-shell$' "$A/DEBIAN/postrm" || { echo "  postrm: no remove-shell"; r=1; }
grep -q 'deb-systemd-helper enable "$EGRESS_SOCKET"' "$A/DEBIAN/postinst" || { echo "  postinst: socket not enabled"; r=1; }
grep -q 'deb-systemd-invoke stop agent-sandbox-egressd.socket agent-sandbox-egressd.service' "$A/DEBIAN/prerm" ||
	{ echo "  prerm: egress units not stopped"; r=1; }
grep -q 'deb-systemd-helper purge agent-sandbox-egressd.socket' "$A/DEBIAN/postrm" || { echo "  postrm: no purge of the socket's state"; r=1; }
if [ $r = 0 ]; then ok maintainer_scripts_parse; else bad maintainer_scripts_parse "see above"; fi

# The prerm's guard, on copies of PAM stacks: a hand-written line blocks
# removal; pam-auth-update's own line in common-* does not (it takes that
# out itself); comments and backup files do not count.
echo "[ RUN      ] prerm_finds_hand_written_stack_lines"
P=$T/pam.d
mkdir -p "$P"
cat >"$P/common-account" <<'EOF'
# here are the per-package modules (the "Primary" block)
account	[success=1 new_authtok_reqd=done default=ignore]	pam_unix.so
account	requisite	pam_deny.so
account	required	pam_permit.so
# and here are more per-package modules (the "Additional" block)
account	[success=ok ignore=ignore default=die]	pam_agent_sandbox.so
# end of pam-auth-update config
EOF
printf '#account required pam_agent_sandbox.so\n@include common-account\n' >"$P/sshd"
printf 'session required pam_agent_sandbox.so\n' >"$P/runuser.dpkg-old"
# README's runuser lines: with module_unknown=ignore PAM goes on past a
# module that is gone; a "-" type alone does not (it only keeps it out of
# the log), so that one still counts.
printf -- '-account [module_unknown=ignore default=die] pam_agent_sandbox.so\naccount required pam_permit.so\n' >"$P/runuser-l"
printf -- '-account [default=die] pam_agent_sandbox.so\n' >"$P/login"
# module_unknown=ignore in a comment or an argument is not in the control:
# libpam refuses with the module gone, so both count.
printf 'account [default=die] pam_agent_sandbox.so # module_unknown=ignore\nsession required pam_agent_sandbox.so module_unknown=ignore\n' >"$P/su"
sed -e "s|/etc/pam.d/\*|$P/*|" -e '/^case "\$1"/,$d' "$A/DEBIAN/prerm" >"$T/refs.sh"
hand0=$(sh -c ". '$T/refs.sh'; stack_refs hand")
all0=$(sh -c ". '$T/refs.sh'; stack_refs all")
printf 'session required pam_unix.so\nsession [default=die] pam_agent_sandbox.so\n' >"$P/runuser"
hand1=$(sh -c ". '$T/refs.sh'; stack_refs hand")
login="$P/login:1: -account [default=die] pam_agent_sandbox.so"
su="$P/su:1: account [default=die] pam_agent_sandbox.so # module_unknown=ignore
$P/su:2: session required pam_agent_sandbox.so module_unknown=ignore"
if [ "$hand0" = "$login
$su" ] &&
	[ "$all0" = "$P/common-account:6: account	[success=ok ignore=ignore default=die]	pam_agent_sandbox.so
$login
$su" ] &&
	[ "$hand1" = "$login
$P/runuser:2: session [default=die] pam_agent_sandbox.so
$su" ]; then
	ok prerm_finds_hand_written_stack_lines
else
	bad prerm_finds_hand_written_stack_lines "hand before: '$hand0', all: '$all0', hand after: '$hand1'"
fi

echo "[ RUN      ] sshd_dropin_only_inside_match"
# Every setting after the one Match line: the drop-in changes sshd for
# agents only.
if awk '/^[[:space:]]*(#|$)/ { next } /^Match / { m++; next } !m { print "  before Match: " $0; bad = 1 }
	END { exit bad || m != 1 }' "$A/etc/ssh/sshd_config.d/agent-sandbox.conf"; then
	ok sshd_dropin_only_inside_match
else
	bad sshd_dropin_only_inside_match "settings outside the Match block"
fi

echo "[ RUN      ] completion_offers_verbs_and_options"
# The shipped completion, with the shipped agent-shell first in PATH.
comp() {
	PATH=$A/usr/bin:$PATH bash -c '. "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1))
		_agent_shell agent-shell; printf "%s\n" "${COMPREPLY[@]}"' _ \
		"$A/usr/share/bash-completion/completions/agent-shell" "$@" | sort | tr '\n' ' '
}
c1=$(comp agent-shell --e)
c2=$(comp agent-shell --doctor --pam)
c3=$(comp agent-shell --enroll bob --group roo)
if [ "$c1" = "--end --enroll --explain " ] && [ "$c2" = "--pam-dir --pam-vendor-dir " ] &&
	[ "$c3" = "root " ]; then
	ok completion_offers_verbs_and_options
else
	bad completion_offers_verbs_and_options "--e: '$c1', --doctor --pam: '$c2', --group roo: '$c3'"
fi

summary
