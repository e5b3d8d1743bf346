# agent-sandbox — top-level build. See README.md for the two commands a
# newcomer needs: `make demo` and `make check`.

PREFIX      ?= /usr/local
BINDIR      ?= $(PREFIX)/bin
MANDIR      ?= $(PREFIX)/share/man
SYSCONFDIR  ?= /etc
DESTDIR     ?=
MULTIARCH   := $(shell gcc -print-multiarch 2>/dev/null)
# The directory the system's PAM loads modules from (Debian: /lib/<triplet>/security).
PAMDIR      ?= $(or $(shell for d in /lib/$(MULTIARCH)/security /usr/lib/$(MULTIARCH)/security /usr/lib64/security /lib64/security /usr/lib/security /lib/security; do [ -e $$d/pam_unix.so ] && echo $$d && break; done),/lib/security)

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
HARDEN_LD   := -Wl,-z,relro -Wl,-z,now -Wl,-z,noexecstack $(LDSAN) $(LDFLAGS)
LIBS        := -lseccomp -lcap

LIB_SRCS   := $(sort $(wildcard lib/*.c))
LIB_OBJS   := $(LIB_SRCS:%.c=$(BUILD)/%.o)
SHELL_SRCS := $(sort $(wildcard shell/*.c))
SHELL_OBJS := $(SHELL_SRCS:%.c=$(BUILD)/%.o)
PAM_SRCS   := $(sort $(wildcard pam_module/*.c))
PAM_OBJS   := $(PAM_SRCS:%.c=$(BUILD)/%.o)
TEST_SRCS  := $(sort $(wildcard tests/test_*.c))
TEST_BINS  := $(TEST_SRCS:tests/%.c=$(BUILD)/tests/%)
TESTLIB    := $(BUILD)/tests/testlib.o
FUZZ_SRCS  := $(sort $(wildcard tests/fuzz/fuzz_*.c))
FUZZ_TIME  ?= 60

LIBSBX     := $(BUILD)/libsbx.a
SHELL_BIN  := $(BUILD)/agent-shell
SHELL_TEST_BIN := $(BUILD)/tests/agent-shell-testable
PAM_SO     := $(BUILD)/pam_agent_sandbox.so

HELPERS    := $(BUILD)/tests/tcp_listen $(BUILD)/tests/sbx_probe_inside

.PHONY: all check check-asan fuzz deps demo install uninstall clean bench

all: $(LIBSBX) $(SHELL_BIN) $(PAM_SO)

$(BUILD)/%.o: %.c $(wildcard lib/*.h) Makefile
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -c -o $@ $<

$(LIBSBX): $(LIB_OBJS)
	@mkdir -p $(dir $@)
	rm -f $@
	ar rcs $@ $^

$(SHELL_BIN): $(SHELL_OBJS) $(LIBSBX)
	$(CC) -pie -o $@ $(SHELL_OBJS) $(LIBSBX) $(HARDEN_LD) $(LIBS)

# Same shell, built so a test may force a probe result (SBX_TESTING); never installed.
$(BUILD)/tests/shell/%.o: shell/%.c $(wildcard lib/*.h) Makefile
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -DSBX_TESTING=1 -c -o $@ $<

$(SHELL_TEST_BIN): $(SHELL_SRCS:%.c=$(BUILD)/tests/%.o) $(LIBSBX)
	$(CC) -pie -o $@ $^ $(HARDEN_LD) $(LIBS)

$(PAM_SO): $(PAM_OBJS) $(LIBSBX) pam_module/pam_agent_sandbox.map
	$(CC) -shared -o $@ $(PAM_OBJS) $(LIBSBX) $(HARDEN_LD) \
		-Wl,--version-script=pam_module/pam_agent_sandbox.map $(LIBS) -lpam

$(TESTLIB): tests/testlib.c tests/testlib.h $(wildcard lib/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -Itests -c -o $@ $<

$(BUILD)/tests/test_%: tests/test_%.c $(TESTLIB) $(LIBSBX) tests/testlib.h
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -Itests -pie -o $@ $< $(TESTLIB) $(LIBSBX) \
		$(HARDEN_LD) $(LIBS) -lcmocka -lpam -lpam_misc

$(BUILD)/tests/%: tests/helpers/%.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -pie -o $@ $< $(HARDEN_LD)

# Every test tier from one command. Each tier does its own set-up and
# removes what it created.
check: all $(SHELL_TEST_BIN) $(HELPERS) $(TEST_BINS)
	@BUILD=$(BUILD) ./tests/run-tests.sh $(TEST_BINS)

check-asan:
	$(MAKE) BUILD=build-asan SAN=1 check

# libFuzzer targets, one per parser, each run for FUZZ_TIME seconds. A
# target outside lib/ names its extra sources in a line
# "// fuzz-extra: shell/gate.c" (space-separated).
FUZZ_CFLAGS := -std=gnu11 -g -O1 -D_GNU_SOURCE -Ilib -fsanitize=fuzzer,address,undefined \
               -fno-sanitize-recover=all -DSBX_FUZZING=1
fuzz:
	@mkdir -p build-fuzz
	@set -e; for f in $(FUZZ_SRCS); do \
		n=$$(basename $$f .c); \
		echo "== $$n"; \
		extra=$$(sed -n 's|^// fuzz-extra: *||p' $$f); \
		clang $(FUZZ_CFLAGS) -o build-fuzz/$$n $$f $(LIB_SRCS) $$extra $(LIBS); \
		mkdir -p build-fuzz/corpus-$$n; \
		cp -n tests/fuzz/corpus/$$n/* build-fuzz/corpus-$$n/ 2>/dev/null || true; \
		build-fuzz/$$n -max_total_time=$(FUZZ_TIME) -rss_limit_mb=2048 \
			-print_final_stats=1 build-fuzz/corpus-$$n 2>&1 | tail -n 25; \
	done

# Debian build and test packages, installed only when missing.
DEB_PKGS := build-essential clang libpam0g-dev libseccomp-dev libcap-dev \
            libcmocka-dev libpam-modules openssh-server openssh-client \
            openssh-sftp-server tmux iproute2 util-linux procps
deps:
	@./tests/install-deps.sh $(DEB_PKGS)

demo: deps
	@$(MAKE) --no-print-directory all $(HELPERS) >/dev/null
	@./shell/demo.sh $(BUILD)

bench: all
	@./bench/bench.sh $(BUILD)

install: all
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(PAMDIR) \
		$(DESTDIR)$(SYSCONFDIR)/agent-sandbox $(DESTDIR)$(MANDIR)/man1 \
		$(DESTDIR)$(MANDIR)/man5 $(DESTDIR)$(MANDIR)/man8
	install -m 0755 $(SHELL_BIN) $(DESTDIR)$(BINDIR)/agent-shell
	install -m 0644 $(PAM_SO) $(DESTDIR)$(PAMDIR)/pam_agent_sandbox.so
	@# Never overwrite a config an admin may have edited.
	@if [ -e $(DESTDIR)$(SYSCONFDIR)/agent-sandbox/agent-sandbox.conf ]; then \
		echo "keeping existing $(DESTDIR)$(SYSCONFDIR)/agent-sandbox/agent-sandbox.conf"; \
		install -m 0644 etc/agent-sandbox.conf $(DESTDIR)$(SYSCONFDIR)/agent-sandbox/agent-sandbox.conf.dist; \
	else \
		install -m 0644 etc/agent-sandbox.conf $(DESTDIR)$(SYSCONFDIR)/agent-sandbox/agent-sandbox.conf; \
	fi
	@for m in man/*.1; do [ -e "$$m" ] && install -m 0644 $$m $(DESTDIR)$(MANDIR)/man1/ || true; done
	@for m in man/*.5; do [ -e "$$m" ] && install -m 0644 $$m $(DESTDIR)$(MANDIR)/man5/ || true; done
	@for m in man/*.8; do [ -e "$$m" ] && install -m 0644 $$m $(DESTDIR)$(MANDIR)/man8/ || true; done

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/agent-shell $(DESTDIR)$(PAMDIR)/pam_agent_sandbox.so
	rm -f $(DESTDIR)$(SYSCONFDIR)/agent-sandbox/agent-sandbox.conf.dist
	rm -f $(DESTDIR)$(MANDIR)/man1/agent-shell.1 $(DESTDIR)$(MANDIR)/man5/agent-sandbox.conf.5 \
		$(DESTDIR)$(MANDIR)/man8/pam_agent_sandbox.8
	@echo "kept $(DESTDIR)$(SYSCONFDIR)/agent-sandbox/agent-sandbox.conf (remove it by hand if wanted)"

clean:
	rm -rf build build-asan build-fuzz
