# agent-sandbox — top-level build. See README.md for the two commands a
# newcomer needs: `make demo` and `make check`.

PREFIX      ?= /usr/local
BINDIR      ?= $(PREFIX)/bin
# agent-sandbox-egressd: a daemon, started by systemd, not by users.
SBINDIR     ?= $(PREFIX)/sbin
MANDIR      ?= $(PREFIX)/share/man
SYSCONFDIR  ?= /etc
DESTDIR     ?=
MULTIARCH   := $(shell gcc -print-multiarch 2>/dev/null)
# The directory the system's PAM loads modules from: the first that holds
# pam_unix.so. /usr/lib/<triplet> is tried first because on a merged-/usr
# system (Debian 12: /lib -> usr/lib) both spellings match and /usr/lib is
# the real one (DEP17: files under /lib confuse dpkg once a package moves
# them); a host that is not merged still finds its /lib/<triplet>. "make
# deb" sets it to /usr/lib/<triplet>/security outright.
PAMDIR      ?= $(or $(shell for d in /usr/lib/$(MULTIARCH)/security /lib/$(MULTIARCH)/security /usr/lib64/security /lib64/security /usr/lib/security /lib/security; do [ -e $$d/pam_unix.so ] && echo $$d && break; done),/lib/security)

CC          ?= cc
BUILD       ?= build
SAN         ?=

WARN   := -Wall -Wextra -Werror -Wshadow -Wformat=2 -Wmissing-prototypes \
          -Wstrict-prototypes -Wno-unused-parameter
BASE   := -std=gnu11 -g -fPIC -fvisibility=hidden -fno-strict-aliasing \
          -fstack-protector-strong -fstack-clash-protection -fcf-protection \
          -D_GNU_SOURCE -Ilib
ifeq ($(SAN),1)
OPT    := -O1 -fno-omit-frame-pointer -fsanitize=address,undefined \
          -fno-sanitize-recover=all -DSBX_SANITIZER=1
LDSAN  := -fsanitize=address,undefined
else
OPT    := -O2 -D_FORTIFY_SOURCE=3
LDSAN  :=
endif
CFLAGS   ?=
LDFLAGS  ?=
ALL_CFLAGS  := $(BASE) $(OPT) $(WARN) $(CFLAGS)
# Header dependencies from the compiler: each object or test binary gets a
# .d file beside it, read back below, so touching any header rebuilds what
# includes it (and a deleted header does not break the build: -MP).
DEPFLAGS    := -MMD -MP
HARDEN_LD   := -Wl,-z,relro -Wl,-z,now -Wl,-z,noexecstack $(LDSAN) $(LDFLAGS)
# Nothing beyond libc at run time: lib/seccomp.c emits its BPF itself and
# lib/caps.c calls capset(2) itself. libseccomp and libcap are for the tests:
# tests/seccomp_ref.c (the reference filter), testlib's own filter, and
# test_caps's independent reading of the capability sets.
LIBS        :=
TEST_LIBS   := $(LIBS) -lseccomp -lcap

LIB_SRCS   := $(sort $(wildcard lib/*.c))
LIB_OBJS   := $(LIB_SRCS:%.c=$(BUILD)/%.o)
SHELL_SRCS := $(filter-out shell/launcher.c,$(sort $(wildcard shell/*.c)))
SHELL_OBJS := $(SHELL_SRCS:%.c=$(BUILD)/%.o)
PAM_SRCS   := $(sort $(wildcard pam_module/*.c))
PAM_OBJS   := $(PAM_SRCS:%.c=$(BUILD)/%.o)
TEST_SRCS  := $(sort $(wildcard tests/test_*.c))
TEST_BINS  := $(TEST_SRCS:tests/%.c=$(BUILD)/tests/%)
TESTLIB    := $(BUILD)/tests/testlib.o $(BUILD)/tests/seccomp_ref.o
FUZZ_SRCS  := $(sort $(wildcard tests/fuzz/fuzz_*.c))
FUZZ_TIME  ?= 60

LIBSBX     := $(BUILD)/libsbx.a
# The shared library: soname libsbx.so.0, exports only libsbx.h (the
# version script), for programs outside this tree (examples/, libsbx(3)).
LIBSBX_SO  := $(BUILD)/libsbx.so.0
LIBSBX_PC  := $(BUILD)/libsbx.pc
EXAMPLE    := $(BUILD)/examples/confine
SHELL_BIN  := $(BUILD)/agent-shell
# The login shell as installed: a static launcher (shell/launcher.c) that
# clears the loader's variables, then runs agent-shell proper from
# $(BINDIR)/../lib/agent-sandbox.
LAUNCHER   := $(BUILD)/agent-shell-launcher
SHELL_TEST_BIN := $(BUILD)/tests/agent-shell-testable
PAM_SO     := $(BUILD)/pam_agent_sandbox.so
# The egress daemon of network = proxy (egressd/, docs/design.md section 13).
EGRESSD    := $(BUILD)/agent-sandbox-egressd
EGRESSD_SRCS := $(sort $(wildcard egressd/*.c))

HELPERS    := $(BUILD)/tests/tcp_listen $(BUILD)/tests/sbx_probe_inside \
              $(BUILD)/tests/escape_helper
# The escape tier (tests/escape/): its own directory, run by `make check`.
ESCAPE_TEST := $(BUILD)/tests/test_escape

.PHONY: all check check-asan check-vm fuzz lint deps demo install uninstall install-conf-file deb deb-lint clean bench

all: $(LIBSBX) $(LIBSBX_SO) $(LIBSBX_PC) $(SHELL_BIN) $(LAUNCHER) $(PAM_SO) $(EXAMPLE) $(EGRESSD)

$(BUILD)/%.o: %.c Makefile
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(DEPFLAGS) -c -o $@ $<

$(LIBSBX): $(LIB_OBJS)
	@mkdir -p $(dir $@)
	rm -f $@
	ar rcs $@ $^

$(LIBSBX_SO): $(LIB_OBJS) lib/libsbx.map
	$(CC) -shared -Wl,-soname,libsbx.so.0 -o $@ $(LIB_OBJS) $(HARDEN_LD) \
		-Wl,--version-script=lib/libsbx.map -Wl,--no-undefined $(LIBS)
	ln -sf libsbx.so.0 $(BUILD)/libsbx.so

# The pkg-config file names the install paths; install writes it again for
# the PREFIX it is given.
PC_SED = sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(LIBDIR)|' \
	     -e 's|@INCLUDEDIR@|$(INCLUDEDIR)|' -e 's|@VERSION@|$(DEB_VERSION)|' lib/libsbx.pc.in
$(LIBSBX_PC): lib/libsbx.pc.in lib/sbx.h Makefile
	$(PC_SED) >$@

# The example, linked against the shared library in the build tree (the
# libsbx tier builds it again from the installed files via pkg-config).
$(EXAMPLE): examples/confine.c lib/libsbx.h $(LIBSBX_SO)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -Ilib -o $@ $< -L$(BUILD) -lsbx -Wl,-rpath,'$$ORIGIN/..' $(HARDEN_LD)

$(SHELL_BIN): $(SHELL_OBJS) $(LIBSBX)
	$(CC) -pie -o $@ $(SHELL_OBJS) $(LIBSBX) $(HARDEN_LD) $(LIBS)

$(EGRESSD): $(EGRESSD_SRCS:%.c=$(BUILD)/%.o) $(LIBSBX)
	$(CC) -pie -o $@ $^ $(HARDEN_LD) $(LIBS) -lpthread

# Static (no dynamic loader to read LD_PRELOAD), and never sanitized: ASan
# cannot be linked statically, and the launcher is a few lines of libc.
$(LAUNCHER): shell/launcher.c Makefile
	$(CC) $(BASE) -O2 -D_FORTIFY_SOURCE=3 $(WARN) $(CFLAGS) $(DEPFLAGS) -static-pie -o $@ $< \
		-Wl,-z,relro -Wl,-z,now -Wl,-z,noexecstack

# Same shell, built so a test may force a probe result (SBX_TESTING); never installed.
$(BUILD)/tests/shell/%.o: shell/%.c Makefile
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(DEPFLAGS) -DSBX_TESTING=1 -c -o $@ $<

$(SHELL_TEST_BIN): $(SHELL_SRCS:%.c=$(BUILD)/tests/%.o) $(LIBSBX)
	$(CC) -pie -o $@ $^ $(HARDEN_LD) $(LIBS)

$(PAM_SO): $(PAM_OBJS) $(LIBSBX) pam_module/pam_agent_sandbox.map
	$(CC) -shared -o $@ $(PAM_OBJS) $(LIBSBX) $(HARDEN_LD) \
		-Wl,--version-script=pam_module/pam_agent_sandbox.map $(LIBS) -lpam

$(BUILD)/tests/testlib.o $(BUILD)/tests/seccomp_ref.o: $(BUILD)/tests/%.o: tests/%.c Makefile
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(DEPFLAGS) -Itests -c -o $@ $<

$(BUILD)/tests/test_%: tests/test_%.c $(TESTLIB) $(LIBSBX)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(DEPFLAGS) -Itests -pie -o $@ $< $(TESTLIB) $(LIBSBX) \
		$(HARDEN_LD) $(TEST_LIBS) -lcmocka -lpam -lpam_misc

$(BUILD)/tests/%: tests/helpers/%.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(DEPFLAGS) -pie -o $@ $< $(HARDEN_LD)

$(BUILD)/tests/escape_helper: tests/escape/escape_helper.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(DEPFLAGS) -pie -o $@ $< $(HARDEN_LD)

$(ESCAPE_TEST): tests/escape/test_escape.c $(TESTLIB) $(LIBSBX)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(DEPFLAGS) -Itests -pie -o $@ $< $(TESTLIB) $(LIBSBX) \
		$(HARDEN_LD) $(TEST_LIBS) -lcmocka

# Every test tier from one command. Each tier does its own set-up and
# removes what it created.
check: all $(SHELL_TEST_BIN) $(HELPERS) $(TEST_BINS) $(ESCAPE_TEST)
	@BUILD=$(BUILD) SAN=$(SAN) ./tests/run-tests.sh $(TEST_BINS) $(ESCAPE_TEST) tests/escape/ino64.sh \
		tests/libsbx/run.sh \
		tests/explain/run.sh tests/demo/run.sh tests/deb/run.sh \
		tests/egress/run.sh tests/e2e/run.sh

# The real target (tests/vm/run.sh): a Debian 12 guest with its stock
# kernel, systemd and Debian's PAM stacks, the .deb installed as README
# says, agents of every shipped profile over ssh. About 5 minutes under
# qemu's software emulation; not part of check.
VM_PKGS := qemu-system-x86 debootstrap e2fsprogs
check-vm: all $(HELPERS)
	@$(MAKE) --no-print-directory deb >/dev/null
	@./tests/install-deps.sh $(VM_PKGS)
	@./tests/vm/run.sh $(BUILD)

check-asan:
	$(MAKE) BUILD=build-asan SAN=1 check

# libFuzzer targets, one per parser, each run for FUZZ_TIME seconds. A
# target outside lib/ names its extra sources in a line
# "// fuzz-extra: shell/gate.c" (space-separated). Every target runs; the
# target fails if any crashed, leaked or timed out, and the input that did
# it is kept as build-fuzz/<target>-crash-* (-leak-, -timeout-, -oom-),
# with the whole log in build-fuzz/<target>.log.
FUZZ_CFLAGS := -std=gnu11 -g -O1 -D_GNU_SOURCE -Ilib -fsanitize=fuzzer,address,undefined \
               -fno-sanitize-recover=all -DSBX_FUZZING=1
fuzz:
	@mkdir -p build-fuzz
	@failed=; for f in $(FUZZ_SRCS); do \
		n=$$(basename $$f .c); \
		echo "== $$n"; \
		extra=$$(sed -n 's|^// fuzz-extra: *||p' $$f); \
		clang $(FUZZ_CFLAGS) -o build-fuzz/$$n $$f $(LIB_SRCS) $$extra $(LIBS) || \
			{ failed="$$failed $$n(build)"; continue; }; \
		mkdir -p build-fuzz/corpus-$$n; \
		cp -n tests/fuzz/corpus/$$n/* build-fuzz/corpus-$$n/ 2>/dev/null || true; \
		rc=0; build-fuzz/$$n -max_total_time=$(FUZZ_TIME) -rss_limit_mb=2048 \
			-print_final_stats=1 -artifact_prefix=build-fuzz/$$n- \
			build-fuzz/corpus-$$n > build-fuzz/$$n.log 2>&1 || rc=$$?; \
		tail -n 25 build-fuzz/$$n.log; \
		[ $$rc = 0 ] || failed="$$failed $$n(exit $$rc)"; \
	done; \
	if [ -n "$$failed" ]; then echo "fuzz: failed:$$failed (see build-fuzz/)" >&2; exit 1; fi

# Static analysis: cppcheck, then clang-tidy, over every C file the build
# compiles (tests, helpers and fuzz targets included: a test that proves
# nothing because of a bug is as bad as a bug). Both read one
# compile_commands.json written from the flags above, so they see the
# build's own -D, -I and -W options. Configuration: .clang-tidy (with
# tests/.clang-tidy on top for tests/), .cppcheck-suppressions and
# .cppcheck-library.cfg (corrections to cppcheck's own library); false
# positives are suppressed inline, next to the code, with the reason. Any
# finding fails the target.
LINT_DIR   := $(BUILD)/lint
LINT_DB    := $(LINT_DIR)/compile_commands.json
LINT_JOBS  ?= 2
LINT_SRCS  := $(LIB_SRCS) $(SHELL_SRCS) $(PAM_SRCS) $(EGRESSD_SRCS)
LINT_TEST_SRCS := tests/testlib.c tests/seccomp_ref.c $(TEST_SRCS) $(sort $(wildcard tests/helpers/*.c tests/escape/*.c))
# cppcheck reads no system header (its manual's advice: they slow it and
# add noise), so it cannot see that <sys/syscall.h> defines the Landlock
# syscall numbers; without these it stops at landlock_compat.h's #error
# and skips every file that includes it.
CPPCHECK_FLAGS := --enable=warning,portability,performance --std=c11 \
                  --library=posix --library=gnu --library=.cppcheck-library.cfg --inline-suppr \
                  --suppressions-list=.cppcheck-suppressions --error-exitcode=1 \
                  --cppcheck-build-dir=$(LINT_DIR)/cppcheck -j$(LINT_JOBS) --quiet \
                  -DSYS_landlock_create_ruleset -DSYS_landlock_add_rule \
                  -DSYS_landlock_restrict_self \
                  --template='{file}:{line}:{column}: {severity}: {message} [{id}]'

lint_entry = printf '%s{"directory": "%s", "file": "%s", "command": "%s -c -o /dev/null %s"}\n' \
	"$$sep" "$(CURDIR)" "$$f" "$(1)" "$$f"; sep=,

# Written on every run (it is cheap), so it always has the flags of this
# invocation (CC=, CFLAGS=, SAN=1).
.PHONY: $(LINT_DB)
$(LINT_DB):
	@mkdir -p $(dir $@)
	@{ echo '['; sep=; \
	for f in $(LINT_SRCS); do $(call lint_entry,$(CC) $(ALL_CFLAGS)); done; \
	for f in $(LINT_TEST_SRCS); do $(call lint_entry,$(CC) $(ALL_CFLAGS) -Itests); done; \
	for f in $(FUZZ_SRCS); do $(call lint_entry,clang $(FUZZ_CFLAGS)); done; \
	echo ']'; } > $@.tmp && mv $@.tmp $@

# Both tools always run, so one pass shows every finding.
lint: $(LINT_DB)
	@command -v cppcheck >/dev/null && command -v clang-tidy >/dev/null || \
		{ echo "lint: cppcheck and clang-tidy are needed: make deps" >&2; exit 1; }
	@# A fresh build dir: it gives cppcheck its whole-program (CTU) pass,
	@# and its cache does not notice a changed .cppcheck-library.cfg.
	@rm -rf $(LINT_DIR)/cppcheck && mkdir -p $(LINT_DIR)/cppcheck
	@rc=0; \
	echo "== cppcheck $$(cppcheck --version | cut -d' ' -f2)"; \
	cppcheck --project=$(LINT_DB) $(CPPCHECK_FLAGS) || rc=1; \
	echo "== clang-tidy $$(clang-tidy --version | sed -n 's/.*LLVM version //p')"; \
	printf '%s\n' $(LINT_SRCS) $(LINT_TEST_SRCS) $(FUZZ_SRCS) | \
		xargs -P$(LINT_JOBS) -n1 clang-tidy -p $(LINT_DIR) --quiet \
		> $(LINT_DIR)/clang-tidy.log 2>&1 || rc=1; \
	grep -v '^[0-9]* warnings\? generated\.$$' $(LINT_DIR)/clang-tidy.log; \
	if [ $$rc = 0 ]; then echo "lint: clean"; else echo "lint: findings above" >&2; fi; \
	exit $$rc

# Debian build and test packages, installed only when missing.
# libclang-rt-dev holds clang's fuzzer and sanitizer runtimes (only a
# Recommends of clang, which --no-install-recommends skips).
DEB_PKGS := build-essential clang libclang-rt-dev libpam0g-dev libseccomp-dev libcap-dev \
            libcmocka-dev libpam-modules openssh-server openssh-client \
            openssh-sftp-server tmux iproute2 util-linux procps python3-minimal python3 curl openssl rsync \
            git python3-pip xfsprogs strace \
            cppcheck clang-tidy pkgconf
deps:
	@./tests/install-deps.sh $(DEB_PKGS)

demo: deps
	@$(MAKE) --no-print-directory all $(HELPERS) >/dev/null
	@./shell/demo.sh $(BUILD)

# The syscall loops (bench/syscalls.c) and the egress client and server
# (bench/egress.c): built here only, not by `all`. The egress benchmark
# runs its client in a session of the test build (SBX_TEST_CONFIG).
BENCH_SYSCALLS := $(BUILD)/bench/syscalls
BENCH_EGRESS   := $(BUILD)/bench/egress

$(BENCH_SYSCALLS) $(BENCH_EGRESS): $(BUILD)/bench/%: bench/%.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(DEPFLAGS) -pie -o $@ $< $(HARDEN_LD)

# The PAM stage timed alone (bench/pam_phases.c), for bench/ssh.sh.
BENCH_PAM := $(BUILD)/bench/pam_phases

$(BENCH_PAM): bench/pam_phases.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(DEPFLAGS) -pie -o $@ $< $(HARDEN_LD) -lpam -lm

bench: all $(BENCH_SYSCALLS) $(BENCH_PAM) $(BENCH_EGRESS) $(SHELL_TEST_BIN)
	@./bench/bench.sh $(BUILD)

# ---- install, uninstall, deb ---------------------------------------------
# Files under /etc are the admin's once installed: never overwritten (the new
# version goes beside an edited one as .dist) and removed by uninstall only
# while unedited. agent_shell in the shipped config names /usr/local/bin; the
# installed copy names $(BINDIR), where the binary really goes.
DOCDIR      ?= $(PREFIX)/share/doc/agent-sandbox
# agent-shell proper, where the launcher at $(BINDIR)/agent-shell looks for
# it: beside the bin directory, never a path the environment could name.
SHELL_REAL_DIR = $(abspath $(BINDIR)/../lib/agent-sandbox)
LIBDIR      ?= $(PREFIX)/lib/$(MULTIARCH)
INCLUDEDIR  ?= $(PREFIX)/include
SSHDCONFDIR ?= $(SYSCONFDIR)/ssh/sshd_config.d
# bash-completion looks in $XDG_DATA_DIRS (/usr/local/share:/usr/share).
COMPLDIR    ?= $(PREFIX)/share/bash-completion/completions
# pam-auth-update(8) reads /usr/share/pam-configs only: under another PREFIX
# the profile is installed for reference, and PAM stays as the admin wrote it.
PAMCONFDIR  ?= $(PREFIX)/share/pam-configs
# systemd reads units from /usr/local/lib/systemd/system too.
UNITDIR     ?= $(PREFIX)/lib/systemd/system
UM_DROPIN_SRC := etc/systemd/user@.service.d/agent-sandbox.conf
UM_DROPIN   := $(BUILD)/install/user-manager-dropin.conf
UM_DROPIN_DST := $(UNITDIR)/user@.service.d/agent-sandbox.conf
# agent-sandbox-egressd's socket and service: the service as installed
# names $(SBINDIR), where the daemon really goes.
EGRESS_UNIT   := agent-sandbox-egressd
EGRESS_SOCKET_SRC  := etc/systemd/system/$(EGRESS_UNIT).socket
EGRESS_SERVICE_SRC := etc/systemd/system/$(EGRESS_UNIT).service
EGRESS_SERVICE := $(BUILD)/install/$(EGRESS_UNIT).service
PROBE_UNIT_SRC := etc/systemd/agent-sandbox-probe.service
PROBE_UNIT  := $(BUILD)/install/agent-sandbox-probe.service
PROBE_UNIT_DST := $(UNITDIR)/agent-sandbox-probe.service
ETC_CONF    := $(BUILD)/install/agent-sandbox.conf
ETC_PAIRS   := $(ETC_CONF):$(SYSCONFDIR)/agent-sandbox/agent-sandbox.conf \
               etc/skel/.bashrc:$(SYSCONFDIR)/agent-sandbox/skel/.bashrc \
               etc/skel/.profile:$(SYSCONFDIR)/agent-sandbox/skel/.profile \
               etc/sshd_config.d/agent-sandbox.conf:$(SSHDCONFDIR)/agent-sandbox.conf
MANPAGES    := $(wildcard man/*.[1-8])
# The library's files, relative to DESTDIR.
LIB_FILES   := $(LIBDIR)/libsbx.so.0 $(LIBDIR)/libsbx.so $(LIBDIR)/pkgconfig/libsbx.pc \
               $(INCLUDEDIR)/libsbx.h

# The config as installed: agent_shell pointing at $(BINDIR).
install-conf-file:
	@mkdir -p $(dir $(ETC_CONF))
	@sed 's|^\(agent_shell[ 	]*=[ 	]*\)/usr/local/bin/agent-shell|\1$(BINDIR)/agent-shell|' \
		etc/agent-sandbox.conf > $(ETC_CONF)
	@grep -q '^agent_shell[ 	]*=[ 	]*$(BINDIR)/agent-shell' $(ETC_CONF) || \
		{ echo "etc/agent-sandbox.conf: no agent_shell line to point at $(BINDIR)" >&2; exit 1; }
	@mkdir -p $(dir $(UM_DROPIN))
	@sed 's|^\(ExecCondition=+\)/usr/local/bin/agent-shell |\1$(BINDIR)/agent-shell |' \
		$(UM_DROPIN_SRC) > $(UM_DROPIN)
	@grep -q '^ExecCondition=+$(BINDIR)/agent-shell --user-manager %i$$' $(UM_DROPIN) || \
		{ echo "$(UM_DROPIN_SRC): no ExecCondition line to point at $(BINDIR)" >&2; exit 1; }
	@sed 's|^\(ExecStart=\)/usr/local/sbin/agent-sandbox-egressd$$|\1$(SBINDIR)/agent-sandbox-egressd|' \
		$(EGRESS_SERVICE_SRC) > $(EGRESS_SERVICE)
	@grep -q '^ExecStart=$(SBINDIR)/agent-sandbox-egressd$$' $(EGRESS_SERVICE) || \
		{ echo "$(EGRESS_SERVICE_SRC): no ExecStart line to point at $(SBINDIR)" >&2; exit 1; }
	@sed 's|^\(ExecStart=\)/usr/local/bin/agent-shell |\1$(BINDIR)/agent-shell |' \
		$(PROBE_UNIT_SRC) > $(PROBE_UNIT)
	@grep -q '^ExecStart=$(BINDIR)/agent-shell --probe-cache$$' $(PROBE_UNIT) || \
		{ echo "$(PROBE_UNIT_SRC): no ExecStart line to point at $(BINDIR)" >&2; exit 1; }

install: all install-conf-file
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(SBINDIR) $(DESTDIR)$(PAMDIR) $(DESTDIR)$(DOCDIR) \
		$(DESTDIR)$(SYSCONFDIR)/agent-sandbox/skel $(DESTDIR)$(SSHDCONFDIR) \
		$(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man3 $(DESTDIR)$(MANDIR)/man5 \
		$(DESTDIR)$(MANDIR)/man8 $(DESTDIR)$(LIBDIR)/pkgconfig $(DESTDIR)$(INCLUDEDIR) \
		$(DESTDIR)$(COMPLDIR) $(DESTDIR)$(PAMCONFDIR)
	install -d $(DESTDIR)$(SHELL_REAL_DIR)
	install -m 0755 $(LAUNCHER) $(DESTDIR)$(BINDIR)/agent-shell
	install -m 0755 $(SHELL_BIN) $(DESTDIR)$(SHELL_REAL_DIR)/agent-shell
	install -m 0755 $(EGRESSD) $(DESTDIR)$(SBINDIR)/agent-sandbox-egressd
	install -m 0644 $(LIBSBX_SO) $(DESTDIR)$(LIBDIR)/libsbx.so.0
	ln -sf libsbx.so.0 $(DESTDIR)$(LIBDIR)/libsbx.so
	$(PC_SED) >$(DESTDIR)$(LIBDIR)/pkgconfig/libsbx.pc
	install -m 0644 lib/libsbx.h $(DESTDIR)$(INCLUDEDIR)/libsbx.h
	install -m 0644 $(PAM_SO) $(DESTDIR)$(PAMDIR)/pam_agent_sandbox.so
	install -m 0644 etc/pam.d/agent-sandbox-* $(DESTDIR)$(DOCDIR)/
	install -m 0644 etc/pam-configs/agent-sandbox $(DESTDIR)$(PAMCONFDIR)/agent-sandbox
	install -m 0644 completion/agent-shell $(DESTDIR)$(COMPLDIR)/agent-shell
	install -d $(DESTDIR)$(dir $(UM_DROPIN_DST))
	install -m 0644 $(UM_DROPIN) $(DESTDIR)$(UM_DROPIN_DST)
	install -m 0644 $(EGRESS_SOCKET_SRC) $(DESTDIR)$(UNITDIR)/$(EGRESS_UNIT).socket
	install -m 0644 $(EGRESS_SERVICE) $(DESTDIR)$(UNITDIR)/$(EGRESS_UNIT).service
	@# A running daemon takes the new binary; a socket that is not enabled
	@# stays off (the package enables it, and creates the user, itself).
	@if [ -z "$(DESTDIR)" ] && [ -d /run/systemd/system ]; then systemctl daemon-reload; \
		systemctl try-restart $(EGRESS_UNIT).service; \
		systemctl --quiet is-enabled $(EGRESS_UNIT).socket 2>/dev/null || { \
		echo "agent-sandbox-egressd (network = proxy) is off: create its user, then enable its socket:"; \
		echo "  adduser --system --group --no-create-home --home /nonexistent agent-sandbox-egress"; \
		echo "  systemctl enable --now $(EGRESS_UNIT).socket"; }; fi
	install -m 0644 $(PROBE_UNIT) $(DESTDIR)$(PROBE_UNIT_DST)
	@if [ -z "$(DESTDIR)" ] && [ -d /run/systemd/system ]; then systemctl daemon-reload; fi
	@set -e; for pair in $(ETC_PAIRS); do \
		src=$${pair%%:*}; dst=$(DESTDIR)$${pair#*:}; \
		if [ ! -e "$$dst" ]; then \
			install -m 0644 "$$src" "$$dst"; echo "installed $$dst"; \
		elif cmp -s "$$src" "$$dst"; then \
			echo "unchanged $$dst"; \
		else \
			install -m 0644 "$$src" "$$dst.dist"; \
			echo "keeping edited $$dst (new version: $$dst.dist)"; \
		fi; \
	done
	@set -e; for m in $(MANPAGES); do \
		install -m 0644 $$m $(DESTDIR)$(MANDIR)/man$${m##*.}/; done

# The module is deleted only once no PAM stack names it: a stack line for a
# module that is gone refuses every login, root's included. The profile
# comes out of common-* first when pam-auth-update put it there.
uninstall: install-conf-file
	@if [ -z "$(DESTDIR)" ]; then \
		if [ "$(PAMCONFDIR)" = /usr/share/pam-configs ] && command -v pam-auth-update >/dev/null && \
			[ -e /usr/share/pam-configs/agent-sandbox ]; then \
			pam-auth-update --package --remove agent-sandbox; fi; \
		refs=$$(grep -Hn '^[^#]*pam_agent_sandbox\.so' $(SYSCONFDIR)/pam.d/* 2>/dev/null | \
			grep -Ev '^[^:]*(\.dpkg-[a-z]*|\.pam-old|~):'); \
		if [ -n "$$refs" ]; then \
			printf '%s\n' "uninstall: these PAM lines still load pam_agent_sandbox.so; take them out first:" \
				"$$refs" >&2; exit 1; fi; \
	fi
	@if [ -z "$(DESTDIR)" ] && [ -d /run/systemd/system ]; then \
		systemctl disable --now $(EGRESS_UNIT).socket $(EGRESS_UNIT).service 2>/dev/null || true; fi
	rm -f $(DESTDIR)$(BINDIR)/agent-shell $(DESTDIR)$(SHELL_REAL_DIR)/agent-shell \
		$(DESTDIR)$(PAMDIR)/pam_agent_sandbox.so $(DESTDIR)$(SBINDIR)/agent-sandbox-egressd \
		$(DESTDIR)$(UNITDIR)/$(EGRESS_UNIT).socket $(DESTDIR)$(UNITDIR)/$(EGRESS_UNIT).service
	-@rmdir $(DESTDIR)$(SHELL_REAL_DIR) 2>/dev/null || true
	rm -f $(DESTDIR)$(UM_DROPIN_DST) $(DESTDIR)$(PROBE_UNIT_DST)
	rm -f $(DESTDIR)$(PAMCONFDIR)/agent-sandbox $(DESTDIR)$(COMPLDIR)/agent-shell
	-@rmdir $(DESTDIR)$(PAMCONFDIR) $(DESTDIR)$(COMPLDIR) \
		$(DESTDIR)$(PREFIX)/share/bash-completion 2>/dev/null || true
	-@rmdir $(DESTDIR)$(dir $(UM_DROPIN_DST)) 2>/dev/null || true
	@if [ -z "$(DESTDIR)" ] && [ -d /run/systemd/system ]; then systemctl daemon-reload; fi
	rm -f $(addprefix $(DESTDIR),$(LIB_FILES)) $(DESTDIR)$(MANDIR)/man3/libsbx.3
	rm -f $(DESTDIR)$(DOCDIR)/agent-sandbox-sshd $(DESTDIR)$(DOCDIR)/agent-sandbox-login \
		$(DESTDIR)$(DOCDIR)/agent-sandbox-su
	rm -f $(DESTDIR)$(MANDIR)/man1/agent-shell.1 $(DESTDIR)$(MANDIR)/man5/agent-sandbox.conf.5 \
		$(DESTDIR)$(MANDIR)/man8/pam_agent_sandbox.8 $(DESTDIR)$(MANDIR)/man8/agent-sandbox-egressd.8
	@for pair in $(ETC_PAIRS); do \
		src=$${pair%%:*}; dst=$(DESTDIR)$${pair#*:}; \
		rm -f "$$dst.dist"; \
		if [ -e "$$dst" ] && cmp -s "$$src" "$$dst"; then \
			rm -f "$$dst"; echo "removed $$dst"; \
		elif [ -e "$$dst" ]; then \
			echo "kept edited $$dst (remove it by hand if wanted)"; \
		fi; \
	done
	-@rmdir $(DESTDIR)$(SYSCONFDIR)/agent-sandbox/skel $(DESTDIR)$(SYSCONFDIR)/agent-sandbox \
		$(DESTDIR)$(DOCDIR) 2>/dev/null || true

# Debian packages without debhelper (packaging/build-deb.sh): the install
# tree with PREFIX=/usr split into agent-sandbox, libsbx0 and libsbx-dev,
# /etc files as conffiles, Depends from dpkg-shlibdeps. The module goes to
# /usr/lib/<triplet>/security whatever this host's layout: Debian 12 is
# merged-/usr, and DEP17 wants no package file under /lib. The postinst
# wires PAM through pam-auth-update; the prerm takes it out again before
# the module goes. deb-lint fails on any lintian error or warning.
DEB_VERSION := $(shell sed -n 's/^\#define SBX_VERSION "\(.*\)"/\1/p' lib/sbx.h)
DEB_ARCH    := $(shell dpkg --print-architecture 2>/dev/null || echo amd64)
DEB_DIR     := $(BUILD)/deb
DEB_PKGS_OUT := agent-sandbox libsbx0 libsbx-dev
DEB_FILES   := $(foreach p,$(DEB_PKGS_OUT),$(BUILD)/$(p)_$(DEB_VERSION)_$(DEB_ARCH).deb)

deb: all
	rm -rf $(DEB_DIR) $(foreach p,$(DEB_PKGS_OUT),$(BUILD)/$(p)_*.deb)
	$(MAKE) --no-print-directory install PREFIX=/usr PAMDIR=/usr/lib/$(MULTIARCH)/security \
		DESTDIR=$(abspath $(DEB_DIR))/stage >/dev/null
	packaging/build-deb.sh $(DEB_DIR) $(DEB_DIR)/stage $(DEB_VERSION) $(DEB_ARCH) \
		$(MULTIARCH) $(BUILD)

# lintian on every package, with the profile of this Debian release; no
# overrides are needed. The package tier (tests/deb/run.sh, in make check)
# checks what the packages hold.
# shellcheck is for the package tier's maintainer-script check.
deb-lint: deb
	@./tests/install-deps.sh lintian shellcheck
	lintian --fail-on error,warning --tag-display-limit 0 $(DEB_FILES)

clean:
	rm -rf build build-asan build-fuzz

# The compiler's header dependencies (DEPFLAGS above).
-include $(wildcard $(BUILD)/*/*.d $(BUILD)/*/*/*.d)
