#!/bin/sh
# Build the Debian packages from an install tree (make deb: "make install
# PREFIX=/usr" into STAGE), without debhelper:
#   agent-sandbox  agent-shell, the PAM module, agent-sandbox-egressd with
#                  its systemd units, /etc conffiles, docs
#   libsbx0        libsbx.so.0 (Debian policy 8.1: a shared library goes
#                  in a package named after its soname, with shlibs and an
#                  ldconfig trigger)
#   libsbx-dev     the header, libsbx.so, libsbx.pc, libsbx(3) (policy 8.4)
# agent-shell and the module link libsbx statically, so agent-sandbox does
# not need libsbx0.
#
# usage: build-deb.sh WORKDIR STAGE VERSION ARCH MULTIARCH DEBDIR
# (each package's tree goes to WORKDIR/PKG, the .deb files to DEBDIR)
set -eu

out=$1 stage=$2 version=$3 arch=$4 ma=$5 debdir=$6
here=$(cd "$(dirname "$0")" && pwd)
libdir=usr/lib/$ma

# The changelog's first entry is the version being built: a new
# SBX_VERSION needs its own entry in packaging/changelog.
top=$(sed -n '1s/^agent-sandbox (\([^)]*\)).*/\1/p' "$here/changelog")
if [ "$top" != "$version" ]; then
	echo "build-deb.sh: packaging/changelog starts at $top, lib/sbx.h says $version: add an entry" >&2
	exit 1
fi

# move PKG PATH...: files of the install tree into a package's root.
move() {
	pkg=$1
	shift
	for p in "$@"; do
		[ -e "$stage/$p" ] || [ -L "$stage/$p" ] || { echo "build-deb.sh: $p missing from the install tree" >&2; exit 1; }
		mkdir -p "$out/$pkg/$(dirname "$p")"
		mv "$stage/$p" "$out/$pkg/$p"
	done
}

rm -rf "$out/agent-sandbox" "$out/libsbx0" "$out/libsbx-dev"
move libsbx0 "$libdir/libsbx.so.0"
move libsbx-dev "$libdir/libsbx.so" "$libdir/pkgconfig/libsbx.pc" usr/include/libsbx.h \
	usr/share/man/man3/libsbx.3
# Everything else is agent-sandbox's; empty directories left behind by the
# moves go.
find "$stage" -depth -type d -empty -delete
mkdir -p "$out/agent-sandbox"
(cd "$stage" && tar cf - .) | (cd "$out/agent-sandbox" && tar xf -)
# The state directory: owned by the package, so dpkg creates it and purge
# is the package's business (postrm). The PAM module refuses it unless it
# is root-owned and not group- or world-writable.
install -d -m 0755 "$out/agent-sandbox/var/lib/agent-sandbox"

for pkg in agent-sandbox libsbx0 libsbx-dev; do
	root=$out/$pkg
	doc=$root/usr/share/doc/$pkg
	install -d -m 0755 "$doc" "$root/DEBIAN"
	install -m 0644 "$here/copyright" "$doc/copyright"
	# A native package (the version has no Debian revision): its
	# changelog is changelog.gz (policy 12.7).
	gzip -9nc "$here/changelog" >"$doc/changelog.gz"
	for m in "$root"/usr/share/man/man*/*; do
		[ -f "$m" ] && gzip -9n "$m"
	done
	# usr/lib/agent-sandbox holds agent-shell proper (the launcher in
	# usr/bin runs it): a program, so stripped and 0755 as well, like
	# the daemon in usr/sbin. (Not '*.so*': that is every .socket unit.)
	find "$root" -type f \( -name '*.so' -o -name '*.so.*' -o -path '*/usr/bin/*' -o -path '*/usr/sbin/*' \
		-o -path '*/usr/lib/agent-sandbox/*' \) -exec \
		strip --strip-unneeded --remove-section=.comment --remove-section=.note {} +
	find "$root" -type d -exec chmod 0755 {} +
	find "$root" -type f ! -path '*/usr/bin/*' ! -path '*/usr/sbin/*' \
		! -path '*/usr/lib/agent-sandbox/*' ! -path '*/DEBIAN/*' -exec chmod 0644 {} +
done

install -m 0755 "$here/postinst" "$here/prerm" "$here/postrm" "$out/agent-sandbox/DEBIAN/"
install -D -m 0644 "$here/lintian-overrides" \
	"$out/agent-sandbox/usr/share/lintian/overrides/agent-sandbox"
(cd "$out/agent-sandbox" && find etc -type f | sed 's|^|/|' | sort >DEBIAN/conffiles)
echo "libsbx 0 libsbx0 (>= $version)" >"$out/libsbx0/DEBIAN/shlibs"
chmod 0644 "$out/libsbx0/DEBIAN/shlibs"
# ld.so.cache learns the new library (policy 8.1.1).
echo "activate-noawait ldconfig" >"$out/libsbx0/DEBIAN/triggers"
chmod 0644 "$out/libsbx0/DEBIAN/triggers"

# Depends from the libraries the binaries link (dpkg-shlibdeps reads a
# debian/control, the only reason shlibs/ exists).
rm -rf "$out/shlibs"
mkdir -p "$out/shlibs/debian"
cp "$here/shlibs-control" "$out/shlibs/debian/control"
shlibdeps() {
	(cd "$out/shlibs" && dpkg-shlibdeps -O "$@" 2>/dev/null) | sed -n 's/^shlibs:Depends=//p'
}
abs=$(cd "$out" && pwd)
dep_app=$(shlibdeps "$abs/agent-sandbox/usr/lib/agent-sandbox/agent-shell" \
	"$abs/agent-sandbox/usr/sbin/agent-sandbox-egressd" \
	"$abs/agent-sandbox/$libdir/security/pam_agent_sandbox.so")
dep_lib=$(shlibdeps "$abs/libsbx0/$libdir/libsbx.so.0")
[ -n "$dep_app" ] || dep_app="libc6, libpam0g"
[ -n "$dep_lib" ] || dep_lib="libc6"

for pkg in agent-sandbox libsbx0 libsbx-dev; do
	root=$out/$pkg
	case $pkg in
	agent-sandbox) deps=$dep_app ;;
	libsbx0) deps=$dep_lib ;;
	*) deps= ;;
	esac
	(cd "$root" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | sort -z |
		xargs -0r md5sum >DEBIAN/md5sums)
	chmod 0644 "$root/DEBIAN/md5sums"
	size=$(du -sk --exclude=DEBIAN "$root" | cut -f1)
	sed -e "s|@VERSION@|$version|" -e "s|@ARCH@|$arch|" \
	    -e "s|@DEPENDS@|$deps|" -e "s|@SIZE@|$size|" \
	    "$here/$pkg.control.in" >"$root/DEBIAN/control"
	chmod 0644 "$root/DEBIAN/control"
	deb=$debdir/${pkg}_${version}_${arch}.deb
	rm -f "$deb"
	dpkg-deb --root-owner-group -Zxz --build "$root" "$deb" >/dev/null
	echo "built $deb"
done
