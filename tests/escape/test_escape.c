/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The escape tier: one test per escape class, each run as a throwaway agent
 * inside a real confined session (the test build of agent-shell, --run) on
 * the full path and on every degraded path the kernel can be told to lack
 * (SBX_TEST_PROBE). The attacker inside is tests/escape/escape_helper.c; it
 * prints one "attempt OUTCOME" line per try. Every line is held against the
 * expectation table below (the contract): the precise outcome and the layer
 * that stops it, next to positive controls; where a degraded path cannot
 * contain an attempt, the guarantee that would cover it must be missing
 * from that session's report (read back from the JSON the outer, unconfined
 * agent-shell writes). A truthful report is the product.
 *
 * One world for the whole run (group set-up): an account and a group made
 * with useradd/groupadd, a root-owned fixture directory /sbx-test-esc-*, a
 * host directory and a workspace under /var/tmp, a directory in /dev/shm,
 * a fixture server (root) with unix, abstract, TCP and UDP listeners that
 * counts every contact, and a `sleep 300` of the agent's uid outside any
 * sandbox. The group teardown removes all of it, also after a failed set-up
 * or when the binary is stopped by a signal.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <libgen.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <pwd.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "testlib.h"

/* ---- the four paths ----------------------------------------------------------- */

/* The last two only for the classes that name them (W^X: the kernel's
 * MDWE forced missing, so the filter alone holds it, as before 6.3). */
enum path { FULL, NOLL, NOUSERNS, BARE, NOMDWE, NOUSERNS_NOMDWE, NPATHS };

#define PF (1u << FULL)
#define PL (1u << NOLL)
#define PU (1u << NOUSERNS)
#define PB (1u << BARE)
#define PNS (PF | PL)		/* a user namespace, a mount view, a pid namespace */
#define PDEG (PU | PB)		/* no namespaces at all */
#define PALL (PNS | PDEG)
#define PSF (1u << NOMDWE)	/* the full path, W^X by seccomp alone */
#define PSU (1u << NOUSERNS_NOMDWE)
#define PS (PSF | PSU)
#define PWX (PALL | PS)

static const struct {
	const char *name;
	const char *probe;	/* SBX_TEST_PROBE ("" = the kernel as it is) */
	const char *targets;	/* processes the class "processes" can name */
} paths[NPATHS] = {
	[FULL] = { "full", "", "init,fixture" },
	[NOLL] = { "nolandlock", "no-landlock", "init,fixture" },
	[NOUSERNS] = { "nouserns", "no-userns", "parent,fixture" },
	[BARE] = { "bare", "no-userns,no-landlock", "parent,fixture" },
	[NOMDWE] = { "nomdwe", "no-mdwe", "init,fixture" },
	[NOUSERNS_NOMDWE] = { "nouserns-nomdwe", "no-userns,no-mdwe", "parent,fixture" },
};

/* ---- the contract ---------------------------------------------------------------- */

/*
 * One row per (class, attempt, set of paths). want lists the accepted
 * outcomes, '|'-separated; "<=N" accepts a number up to N. layer names
 * what stops the attempt ("control: ..." for a positive control, which
 * must work). absent != NULL: the attempt is not contained on those paths
 * and the session's report must not list that guarantee. or_absent: an
 * escape found by this tier whose fix is open: contained as in want, or
 * else the report must not list absent.
 */
struct expect {
	const char *cls;
	const char *attempt;
	unsigned paths;
	const char *want;
	const char *layer;
	const char *absent;
	bool or_absent;
};

#define CONTROL(c, a, p, w) { c, a, p, w, "control: must work", NULL, false }
#define STOPS(c, a, p, w, l) { c, a, p, w, l, NULL, false }
#define OPEN(c, a, p, w, g) { c, a, p, w, NULL, g, false }
#define STOPS_OR_ABSENT(c, a, p, w, l, g) { c, a, p, w, l, g, true }
/* Works, and crosses no boundary: why is in the last field. */
#define HARMLESS(c, a, p, w, why) { c, a, p, w, why, NULL, false }

/* Process attempts against one target, per path. */
#define PROC_SYSCALLS(t, p)                                                          \
	STOPS("processes", "ptrace_attach:" t, p, "EPERM", "seccomp"),               \
	STOPS("processes", "ptrace_seize:" t, p, "EPERM", "seccomp"),                \
	STOPS("processes", "process_vm_readv:" t, p, "EPERM", "seccomp"),            \
	STOPS("processes", "pidfd_getfd:" t, p, "EPERM", "seccomp"),                \
	STOPS("processes", "prlimit:" t, p, "EPERM", "seccomp (prlimit64 on the caller only)"), \
	STOPS("processes", "prlimit_set:" t, p, "EPERM", "seccomp (prlimit64 on the caller only)")
/* Scheduling and I/O priority of another process: refused by seccomp
 * where no pid namespace hides the session's own unconfined processes. */
#define PROC_SCHED(t, p, w, l)                                                       \
	STOPS("processes", "sched_setaffinity:" t, p, w, l),                         \
	STOPS("processes", "sched_setscheduler:" t, p, w, l),                        \
	STOPS("processes", "ioprio_set:" t, p, w, l)
#define SCHED_SECCOMP "seccomp (no pid namespace: the caller only)"
/* Another process's /proc files that take ptrace access. */
#define PROC_FILES(t, p, w, l)                                                       \
	STOPS("processes", "mem_rw:" t, p, w "|EROFS", l " (or /proc read-only)"),   \
	STOPS("processes", "environ:" t, p, w, l),                                   \
	STOPS("processes", "fd_link:" t, p, w, l),                                   \
	STOPS("processes", "root_readlink:" t, p, w, l),                             \
	STOPS("processes", "root_open:" t, p, w, l),                                 \
	STOPS("processes", "cwd_readlink:" t, p, w, l),                              \
	STOPS("processes", "cwd_open:" t, p, w, l)
#define PROC_FILES_OPEN(t, p)                                                        \
	OPEN("processes", "mem_rw:" t, p, "OK", "process_boundary"),                 \
	OPEN("processes", "environ:" t, p, "OK", "process_boundary"),                \
	OPEN("processes", "fd_link:" t, p, "OK", "process_boundary"),                \
	OPEN("processes", "root_readlink:" t, p, "OK", "process_boundary"),          \
	OPEN("processes", "root_open:" t, p, "OK", "process_boundary"),              \
	OPEN("processes", "cwd_readlink:" t, p, "OK", "process_boundary"),           \
	OPEN("processes", "cwd_open:" t, p, "OK", "process_boundary")

/* A host file the profile does not grant: refused per path. */
#define HOST_WRITE(a, ns, nouserns)                                                  \
	STOPS("fs_boundary", a, PNS, ns, "mount view (read-only host)"),             \
	STOPS("fs_boundary", a, PU, nouserns, "landlock"),                           \
	OPEN("fs_boundary", a, PB, "OK", "write_boundary")
/* Metadata of that file (found here): Landlock (ABI <= 7) has no access
 * right for chmod, chown, utimes, xattrs or inode flags, so without a
 * read-only mount they change host files outside every grant. */
#define HOST_META(a)                                                                 \
	STOPS("fs_boundary", a, PNS, "EROFS", "mount view (read-only host)"),        \
	STOPS_OR_ABSENT("fs_boundary", a, PU, "EACCES|EPERM",                        \
			"a layer that covers metadata (Landlock has none)",          \
			"write_boundary"),                                           \
	OPEN("fs_boundary", a, PB, "OK", "write_boundary")
/* W^X refusals: MDWE's EACCES where the kernel has it, the filter's
 * EPERM where it is forced missing. */
#define WX_BOTH(a, what)                                                            \
	STOPS("wx", a, PALL, "EACCES", "MDWE (" what ")"),                          \
	STOPS("wx", a, PS, "EPERM", "seccomp (" what ")")
/* Under gate_jit = allow: the program's own business, and the report says
 * "anonymous executable memory allowed". */
#define JIT_RUNS(a, w) HARMLESS("wx_jit", a, PF | PSF, w, "gate_jit = allow: a JIT's memory")
/* git grep of a fixed string or a -P pattern under W^X: git before 2.40
 * dies saying PCRE2's JIT failed (JIT-REFUSED), later ones fall back to
 * the interpreter (OK). want_here() picks by the installed git. */
#define GIT_JIT "GIT-JIT"

/* An exec under the gate of something not on the allow-list. */
#define GATE_COPY(t)                                                                 \
	CONTROL("gate", "copy_" t, PALL, "OK"),                                      \
	STOPS("gate", "exec_copy_" t, PNS, "EACCES", "noexec mount"),                \
	STOPS("gate", "exec_copy_" t, PU, "EACCES", "landlock (no EXECUTE)"),        \
	OPEN("gate", "exec_copy_" t, PB, "exit=0", "exec_boundary"),                 \
	STOPS("gate", "ldso_copy_" t, PNS, "exit=127", "noexec mount (ld.so cannot map it)"), \
	OPEN("gate", "ldso_copy_" t, PDEG, "exit=0", "exec_boundary")

static const struct expect table[] = {
	/* nonnative: other syscall ABIs of the same CPU. */
	CONTROL("nonnative", "native_getpid", PALL, "OK"),
	STOPS("nonnative", "int80_getpid", PALL, "SIGSYS", "seccomp (foreign arch: kill process)"),
	STOPS("nonnative", "x32_getpid", PALL, "SIGSYS", "seccomp (x32 nr bit: kill process)"),

	/* namespaces: a user namespace would hand out capabilities. */
	CONTROL("namespaces", "fork", PALL, "OK"),
	STOPS("namespaces", "unshare_user", PALL, "EPERM", "seccomp"),
	STOPS("namespaces", "unshare_mount", PALL, "EPERM", "seccomp"),
	STOPS("namespaces", "unshare_net", PALL, "EPERM", "seccomp"),
	STOPS("namespaces", "clone_newuser", PALL, "EPERM", "seccomp (clone flags)"),
	STOPS("namespaces", "clone_newuser_high", PALL, "EPERM", "seccomp (clone flags)"),
	STOPS("namespaces", "clone3_newuser", PALL, "ENOSYS", "seccomp (clone3 -> ENOSYS, glibc falls back to clone)"),
	STOPS("namespaces", "clone3_plain", PALL, "ENOSYS", "seccomp (clone3 -> ENOSYS)"),
	STOPS("namespaces", "setns_user", PALL, "EPERM", "seccomp (the kernel says EINVAL)"),
	STOPS("namespaces", "setns_mnt", PALL, "EPERM", "seccomp"),

	/* mounts: the view is fixed before exec. */
	STOPS("mounts", "mount_tmpfs", PALL, "EPERM", "seccomp"),
	STOPS("mounts", "mount_bind", PALL, "EPERM", "seccomp"),
	STOPS("mounts", "umount2", PALL, "EPERM", "seccomp"),
	STOPS("mounts", "pivot_root", PALL, "EPERM", "seccomp"),
	STOPS("mounts", "fsopen", PALL, "EPERM", "seccomp"),
	STOPS("mounts", "fsconfig", PALL, "EPERM", "seccomp (the kernel says EBADF)"),
	STOPS("mounts", "fsmount", PALL, "EPERM", "seccomp"),
	STOPS("mounts", "fspick", PALL, "EPERM", "seccomp"),
	STOPS("mounts", "open_tree", PALL, "EPERM", "seccomp (the kernel allows it)"),
	STOPS("mounts", "open_tree_clone", PALL, "EPERM", "seccomp"),
	STOPS("mounts", "move_mount", PALL, "EPERM", "seccomp"),
	STOPS("mounts", "mount_setattr", PALL, "EPERM", "seccomp (the kernel allows a no-op)"),
	STOPS("mounts", "open_tree_attr", PALL, "EPERM", "seccomp (nr 467, newer than libseccomp)"),

	/* kernel_surface: shared kernel state and attack surface. */
	STOPS("kernel_surface", "add_key", PALL, "EPERM", "seccomp"),
	STOPS("kernel_surface", "keyctl", PALL, "EPERM", "seccomp"),
	STOPS("kernel_surface", "request_key", PALL, "EPERM", "seccomp"),
	STOPS("kernel_surface", "bpf", PALL, "EPERM", "seccomp"),
	STOPS("kernel_surface", "perf_event_open", PALL, "EPERM", "seccomp"),
	STOPS("kernel_surface", "userfaultfd", PALL, "EPERM", "seccomp"),
	STOPS("kernel_surface", "dev_userfaultfd", PNS, "ENOENT", "minimal /dev"),
	/* ENOENT where the kernel has no /dev/userfaultfd (before 6.1). */
	STOPS("kernel_surface", "dev_userfaultfd", PU, "EACCES|ENOENT", "landlock (no write on /dev) + DAC (root's 0600 node)"),
	STOPS("kernel_surface", "dev_userfaultfd", PB, "EACCES|ENOENT", "DAC only (root's 0600 node)"),
	STOPS("kernel_surface", "io_uring_setup", PALL, "EPERM", "seccomp"),
	STOPS("kernel_surface", "name_to_handle_at", PALL, "EPERM", "seccomp"),
	STOPS("kernel_surface", "open_by_handle_at", PALL, "EPERM", "seccomp"),
	CONTROL("kernel_surface", "personality_query", PALL, "OK"),
	STOPS("kernel_surface", "personality_no_aslr", PALL, "EPERM", "seccomp (personality: query and PER_LINUX only)"),
	CONTROL("kernel_surface", "seccomp_nested_filter", PALL, "OK"),
	STOPS("kernel_surface", "seccomp_listener", PALL, "EPERM", "seccomp (no NEW_LISTENER)"),

	/* processes: every process outside the worker it can name. */
	PROC_SYSCALLS("init", PNS),
	PROC_FILES("init", PF, "EACCES", "landlock (ptrace scope) + init not dumpable"),
	PROC_FILES("init", PL, "EACCES", "init not dumpable"),
	/* Listing /proc/PID/fd takes no ptrace check, only DAC on a directory
	 * owned by the process's uid (root's once it is not dumpable). */
	STOPS("processes", "fd_dir:init", PNS, "EACCES", "init not dumpable"),
	/* What /proc/1/cwd would show: the real home under the ephemeral one. */
	STOPS("processes", "init_cwd_home_mark", PF, "EACCES", "landlock (ptrace scope) + init not dumpable"),
	STOPS("processes", "init_cwd_home_mark", PL, "EACCES", "init not dumpable"),
	STOPS("processes", "kill0:init", PF, "EPERM", "landlock (signal scope)"),
	HARMLESS("processes", "kill0:init", PL, "OK", "the pid namespace's init (see kill1_sigkill)"),
	STOPS("processes", "kill1_sigkill", PF, "EPERM", "landlock (signal scope)"),
	STOPS("processes", "kill1_sigkill", PL, "OK", "pid namespace: its init ignores SIGKILL from inside"),
	CONTROL("processes", "alive_after_kill1", PNS, "OK"),
	HARMLESS("processes", "sched_setaffinity:init", PNS, "OK", "the sandbox's own init: it keeps no deadline"),
	HARMLESS("processes", "sched_setscheduler:init", PNS, "OK", "the sandbox's own init: it keeps no deadline"),
	HARMLESS("processes", "ioprio_set:init", PNS, "OK", "the sandbox's own init: it keeps no deadline"),
	PROC_SCHED("fixture", PNS, "ESRCH", "pid namespace"),
	PROC_SCHED("fixture", PDEG, "EPERM", SCHED_SECCOMP),
	PROC_SCHED("parent", PDEG, "EPERM", SCHED_SECCOMP),
	PROC_SYSCALLS("fixture", PALL),
	PROC_FILES("fixture", PNS, "ENOENT", "pid namespace (the host pid does not exist)"),
	STOPS("processes", "fd_dir:fixture", PNS, "ENOENT", "pid namespace (the host pid does not exist)"),
	STOPS("processes", "kill0:fixture", PNS, "ESRCH", "pid namespace"),
	PROC_FILES("fixture", PU, "EACCES", "landlock (ptrace scope)"),
	/* Landlock has no hook there: a process of the agent's uid outside
	 * the sandbox shows its fd numbers. */
	OPEN("processes", "fd_dir:fixture", PDEG, "OK", "process_boundary"),
	STOPS("processes", "kill0:fixture", PU, "EPERM", "landlock (signal scope)"),
	PROC_FILES_OPEN("fixture", PB),
	OPEN("processes", "kill0:fixture", PB, "OK", "process_boundary"),
	PROC_SYSCALLS("parent", PDEG),
	PROC_FILES("parent", PU, "EACCES", "landlock (ptrace scope)"),
	PROC_FILES("parent", PB, "EACCES", "agent-shell not dumpable"),
	STOPS("processes", "fd_dir:parent", PDEG, "EACCES", "agent-shell not dumpable"),
	STOPS("processes", "kill0:parent", PU, "EPERM", "landlock (signal scope)"),
	OPEN("processes", "kill0:parent", PB, "OK", "process_boundary"),
	CONTROL("processes", "kill0_own_child", PALL, "OK"),
	CONTROL("processes", "prlimit_self", PALL, "OK"),
	CONTROL("processes", "setpriority_self", PALL, "OK"),
	STOPS("processes", "setpriority_user", PALL, "EPERM", "seccomp (PRIO_PROCESS of the caller only)"),
	STOPS("processes", "setpriority_pid:parent", PALL, "EPERM", "seccomp (PRIO_PROCESS of the caller only)"),
	CONTROL("processes", "sched_setscheduler_self", PALL, "OK"),
	CONTROL("processes", "ioprio_set_self", PALL, "OK"),
	HARMLESS("processes", "ioprio_set_user", PNS, "OK", "pid namespace: the kernel skips processes outside it"),
	STOPS("processes", "ioprio_set_user", PDEG, "EPERM", SCHED_SECCOMP),

	/* tty: typing into a terminal, line disciplines. */
	CONTROL("tty", "openpt", PALL, "OK"),
	CONTROL("tty", "tcgets", PALL, "OK"),
	CONTROL("tty", "tiocgwinsz", PALL, "OK"),
	STOPS("tty", "tiocsti", PALL, "EPERM", "seccomp"),
	STOPS("tty", "tiocsti_high", PALL, "EPERM", "seccomp (low 32 bits of cmd)"),
	STOPS("tty", "tioclinux", PALL, "EPERM", "seccomp"),
	STOPS("tty", "tiocsetd", PALL, "EPERM", "seccomp"),
	STOPS("tty", "tiocsetd_high", PALL, "EPERM", "seccomp (low 32 bits of cmd)"),
	STOPS("tty", "ctty_tiocsti", PALL, "EPERM", "seccomp (the kernel allows it on the own ctty)"),
	STOPS("tty", "null_tiocsti", PALL, "EPERM", "seccomp (the kernel says ENOTTY)"),
	STOPS("tty", "null_tiocsti_high", PALL, "EPERM", "seccomp (the kernel says ENOTTY)"),
	STOPS("tty", "null_tioclinux", PALL, "EPERM", "seccomp (the kernel says ENOTTY)"),
	STOPS("tty", "null_tiocsetd", PALL, "EPERM", "seccomp (the kernel says ENOTTY)"),
	STOPS("tty", "null_tiocsetd_high", PALL, "EPERM", "seccomp (the kernel says ENOTTY)"),

	/* privileged_binaries: setuid root and file capabilities. */
	CONTROL("privileged_binaries", "suid_id_run", PALL, "exit=0"),
	STOPS("privileged_binaries", "suid_id", PNS, "euid=agent", "no_new_privs + nosuid mounts"),
	STOPS("privileged_binaries", "suid_id", PDEG, "euid=agent", "no_new_privs"),
	CONTROL("privileged_binaries", "fcap_cat_run", PALL, "exit=0"),
	STOPS("privileged_binaries", "fcap_CapEff", PNS, "CapEff=0000000000000000", "no_new_privs + nosuid mounts"),
	STOPS("privileged_binaries", "fcap_CapEff", PDEG, "CapEff=0000000000000000", "no_new_privs"),
	STOPS("privileged_binaries", "fcap_CapPrm", PNS, "CapPrm=0000000000000000", "no_new_privs + nosuid mounts"),
	STOPS("privileged_binaries", "fcap_CapPrm", PDEG, "CapPrm=0000000000000000", "no_new_privs"),

	/* fs_boundary: a host dir the agent may write by DAC, not granted. */
	CONTROL("fs_boundary", "write_ws", PALL, "OK"),
	CONTROL("fs_boundary", "read_victim", PALL, "VICTIM"),
	HOST_WRITE("create_host", "EROFS", "EACCES"),
	HOST_WRITE("victim_wronly", "EROFS", "EACCES"),
	HOST_WRITE("victim_trunc", "EROFS", "EACCES"),
	HOST_WRITE("victim_truncate_path", "EROFS", "EACCES"),
	HOST_WRITE("proc_fd_reopen", "EROFS", "EACCES"),
	HOST_WRITE("symlink_victim", "EROFS", "EACCES"),
	HOST_WRITE("link_victim", "EXDEV|EROFS", "EXDEV|EACCES"),
	HOST_WRITE("linkat_empty_path", "EXDEV|EROFS", "EXDEV|EACCES"),
	HOST_WRITE("rename_out", "EXDEV|EROFS", "EXDEV|EACCES"),
	/* A socket file is a write: the mount view, Landlock, and without
	 * either the unix supervisor, which decides bind() when the abstract
	 * names are the host's (only the session's places). */
	STOPS("fs_boundary", "bind_sock_host", PNS, "EROFS", "mount view (read-only host)"),
	STOPS("fs_boundary", "bind_sock_host", PU, "EACCES", "landlock and the unix supervisor (bind)"),
	STOPS("fs_boundary", "bind_sock_host", PB, "EACCES", "the unix supervisor (bind: the session's places only)"),
	HOST_WRITE("mkfifo_host", "EROFS", "EACCES"),
	HOST_META("chmod_victim"),
	HOST_META("chown_victim"),
	HOST_META("utimes_victim"),
	HOST_META("setxattr_victim"),
	HOST_META("setflags_victim"),
	CONTROL("fs_boundary", "victim_intact", PALL, "OK"),
	/* Scratch space: private tmpfs with a mount view; without one,
	 * Landlock grants the host's own /tmp and /dev/shm, where a file
	 * outlives the session and is seen by every user of the host. */
	STOPS("fs_boundary", "host_tmp_write", PNS, "PRIVATE", "mount view (private /tmp)"),
	STOPS_OR_ABSENT("fs_boundary", "host_tmp_write", PU, "EACCES|PRIVATE",
			"a private /tmp", "write_boundary"),
	OPEN("fs_boundary", "host_tmp_write", PB, "OK", "write_boundary"),
	STOPS("fs_boundary", "host_shm_write", PNS, "PRIVATE", "mount view (private /dev/shm)"),
	STOPS_OR_ABSENT("fs_boundary", "host_shm_write", PU, "EACCES|PRIVATE",
			"a private /dev/shm", "write_boundary"),
	OPEN("fs_boundary", "host_shm_write", PB, "OK", "write_boundary"),
	STOPS("fs_boundary", "host_home_write", PNS, "PRIVATE", "mount view (ephemeral home)"),
	OPEN("fs_boundary", "host_home_write", PDEG, "OK", "home_isolation"),
	STOPS("fs_boundary", "read_secret", PNS, "EMPTY", "mount mask (/dev/null over the secret)"),
	STOPS("fs_boundary", "read_secret", PU, "EACCES", "landlock (secret left out)"),
	OPEN("fs_boundary", "read_secret", PB, "LEAKED", "read_boundary"),
	STOPS("fs_boundary", "read_secret_symlink", PNS, "EMPTY", "mount mask"),
	STOPS("fs_boundary", "read_secret_symlink", PU, "EACCES", "landlock"),
	OPEN("fs_boundary", "read_secret_symlink", PB, "LEAKED", "read_boundary"),
	STOPS("fs_boundary", "link_secret", PNS, "EXDEV|EROFS", "mount mask (a mount point cannot be linked)"),
	STOPS("fs_boundary", "link_secret", PU, "EXDEV|EACCES", "landlock (refer)"),
	OPEN("fs_boundary", "link_secret", PB, "OK", "read_boundary"),
	STOPS("fs_boundary", "proc_sys_hostname", PNS, "EACCES|EROFS",
	      "DAC (root's sysctl); /proc read-only without Landlock"),
	STOPS("fs_boundary", "proc_sys_hostname", PU, "EACCES", "landlock + DAC"),
	STOPS("fs_boundary", "proc_sys_hostname", PB, "EACCES", "DAC only"),
	/* ENOENT on a kernel without transparent huge pages. */
	STOPS("fs_boundary", "sys_thp", PNS, "EACCES|ENOENT", "DAC (root's sysfs file)"),
	STOPS("fs_boundary", "sys_thp", PU, "EACCES|ENOENT", "landlock + DAC"),
	STOPS("fs_boundary", "sys_thp", PB, "EACCES|ENOENT", "DAC only"),
	STOPS("fs_boundary", "dev_sda", PNS, "ENOENT", "minimal /dev"),
	STOPS("fs_boundary", "dev_sda", PDEG, "ENOENT|EACCES", "host /dev: missing or DAC"),
	STOPS("fs_boundary", "dev_vda", PNS, "ENOENT", "minimal /dev"),
	STOPS("fs_boundary", "dev_vda", PDEG, "ENOENT|EACCES", "host /dev: missing or DAC"),
	STOPS("fs_boundary", "dev_mem", PNS, "ENOENT", "minimal /dev"),
	STOPS("fs_boundary", "dev_mem", PDEG, "ENOENT|EACCES", "host /dev: missing or DAC"),
	STOPS("fs_boundary", "dev_kmsg", PNS, "ENOENT", "minimal /dev"),
	STOPS("fs_boundary", "dev_kmsg", PU, "EACCES|ENOENT", "landlock + DAC"),
	STOPS("fs_boundary", "dev_kmsg", PB, "EACCES|ENOENT", "DAC only"),
	STOPS("fs_boundary", "mknod_char", PF, "EACCES", "landlock (no MAKE_CHAR)"),
	STOPS("fs_boundary", "mknod_char", PL, "EPERM", "no CAP_MKNOD"),
	STOPS("fs_boundary", "mknod_char", PU, "EACCES", "landlock (no MAKE_CHAR)"),
	STOPS("fs_boundary", "mknod_char", PB, "EPERM", "no CAP_MKNOD"),

	/*
	 * secret_alias: a second name of the deny_read secret (a hard link the
	 * agent could make in any session without a write boundary, e.g. a
	 * bare one). deny_read masks a path, not the file.
	 */
	STOPS("secret_alias", "read_secret", PNS, "EMPTY", "mount mask"),
	/* Landlock rules hold inodes: the snapshot rule for the alias, a
	 * sibling of the secret, opens the secret itself. */
	STOPS_OR_ABSENT("secret_alias", "read_secret", PU, "EACCES",
			"landlock rules that leave out every name of the secret", "read_boundary"),
	OPEN("secret_alias", "read_secret", PB, "LEAKED", "read_boundary"),
	STOPS_OR_ABSENT("secret_alias", "read_alias", PNS, "EMPTY|EACCES",
			"a mask of every name of the secret", "read_boundary"),
	STOPS_OR_ABSENT("secret_alias", "read_alias", PU, "EACCES",
			"landlock rules that leave out every name of the secret", "read_boundary"),
	OPEN("secret_alias", "read_alias", PB, "LEAKED", "read_boundary"),

	/* gate (profile escgate): only /bin/sh and the helper may run. */
	CONTROL("gate", "sh_exit7", PALL, "exit=7"),
	CONTROL("gate", "self_exec", PALL, "exit=0"),
	STOPS("gate", "exec_id", PF, "EACCES", "noexec host + landlock (no EXECUTE)"),
	STOPS("gate", "exec_id", PL, "EACCES", "noexec host"),
	STOPS("gate", "exec_id", PU, "EACCES", "landlock (no EXECUTE)"),
	OPEN("gate", "exec_id", PB, "exit=0", "exec_boundary"),
	STOPS("gate", "exec_procfd_id", PF, "EACCES", "noexec host + landlock (no EXECUTE)"),
	STOPS("gate", "exec_procfd_id", PL, "EACCES", "noexec host"),
	STOPS("gate", "exec_procfd_id", PU, "EACCES", "landlock (no EXECUTE)"),
	OPEN("gate", "exec_procfd_id", PB, "exit=0", "exec_boundary"),
	STOPS("gate", "ldso_id", PNS, "exit=127", "noexec host (ld.so cannot map it)"),
	OPEN("gate", "ldso_id", PDEG, "exit=0", "exec_boundary"),
	STOPS("gate", "ldso_perl", PNS, "exit=127", "noexec host (ld.so cannot map it)"),
	OPEN("gate", "ldso_perl", PDEG, "exit=0", "exec_boundary"),
	/* Under the gate there are no memfds at all: a sealed one cannot be
	 * execve'd, but ld.so maps it PROT_EXEC (no noexec mount covers
	 * memfds). */
	STOPS("gate", "memfd_plain", PALL, "EPERM", "seccomp (no memfd under the gate)"),
	STOPS("gate", "memfd_mfd_exec", PALL, "EPERM", "seccomp (no memfd under the gate)"),
	STOPS("gate", "memfd_sealed_exec", PALL, "EPERM", "seccomp (no memfd under the gate)"),
	STOPS("gate", "execveat_empty_path", PALL, "EPERM", "seccomp (execveat AT_EMPTY_PATH)"),
	STOPS("gate", "ldso_memfd", PALL, "EPERM", "seccomp (no memfd under the gate)"),
	CONTROL("gate", "shmat_plain", PALL, "OK"),
	STOPS("gate", "shmat_exec", PALL, "EPERM", "seccomp (no SHM_EXEC under the gate)"),
	GATE_COPY("tmp"),
	GATE_COPY("shm"),
	GATE_COPY("ws"),
	GATE_COPY("home"),

	/*
	 * wx (profile escwx: the gate with git, gate_jit deny): every way an
	 * allowed program could turn memory into native code, each of which
	 * runs code ("RAN") in class wx_jit. MDWE answers EACCES, the filter
	 * EPERM: the errno names the layer.
	 */
	CONTROL("wx", "mmap_rw", PWX, "OK"),
	CONTROL("wx", "self_exec", PWX, "exit=0"),	/* a dynamic program loads its libraries */
	CONTROL("wx", "sh_exit7", PWX, "exit=7"),
	CONTROL("wx", "git_grep_regex", PWX, "OK"),	/* git's regex engine, no JIT */
	STOPS("wx", "git_grep_fixed", PWX, GIT_JIT, "git: PCRE2's JIT refused (W^X)"),
	STOPS("wx", "git_grep_P", PWX, GIT_JIT, "git: PCRE2's JIT refused (W^X)"),
	STOPS("wx", "mmap_anon_rwx", PWX, "EPERM", "seccomp (no executable anonymous mapping)"),
	STOPS("wx", "mmap_anon_rx", PWX, "EPERM", "seccomp (no executable anonymous mapping)"),
	STOPS("wx", "mmap_shared_rx_alias", PWX, "EPERM",
	      "seccomp (no executable shared mapping: MDWE lets an alias of it be made writable)"),
	STOPS("wx", "devzero_shared_rx_alias", PWX, "EPERM", "seccomp (no executable shared mapping)"),
	STOPS("wx", "mmap_file_shared_rx", PWX, "EPERM", "seccomp (no executable shared mapping)"),
	WX_BOTH("mmap_file_rwx", "writable and executable"),
	WX_BOTH("file_regain_exec", "exec gained again"),
	/* The workspace is noexec with a mount view, so EACCES there is the
	 * mount's as well; without one, MDWE's or the filter's alone. */
	WX_BOTH("ws_file_shared_rx", "a file the agent writes made executable"),
	WX_BOTH("mprotect_rx", "exec gained"),
	WX_BOTH("mprotect_rwx", "writable and executable"),
	WX_BOTH("pkey_mprotect_rx", "exec gained"),
	WX_BOTH("stack_exec", "the stack made executable"),
	WX_BOTH("shm_mprotect_rx", "SysV memory made executable"),
	STOPS("wx", "shmat_exec_alias", PWX, "EPERM", "seccomp (no SHM_EXEC)"),
	WX_BOTH("mremap_alias_rx", "an alias of shared memory made executable"),
	STOPS("wx", "remap_file_pages_exec", PWX, "EINVAL", "kernel (remap_file_pages takes no protection)"),
	STOPS("wx", "personality_rie", PWX, "EPERM", "seccomp (personality: query and PER_LINUX only)"),
	STOPS("wx", "mdwe_clear", PALL, "EPERM", "MDWE is sticky"),
	HARMLESS("wx", "mdwe_clear", PS, "OK|EINVAL", "nothing set to clear: the filter holds W^X"),
	STOPS("wx", "mdwe_get", PALL, "1", "MDWE set, and kept across execve"),
	HARMLESS("wx", "mdwe_get", PS, "0|EINVAL", "the filter alone holds W^X"),
	STOPS("wx", "procmem_write_text", PF | PU | PS, "EACCES", "landlock (/proc read-only)"),
	STOPS("wx", "procmem_write_text", PL, "EROFS", "the view's /proc mounted read-only"),
	OPEN("wx", "procmem_write_text", PB, "RAN", "exec_boundary"),
	STOPS("wx", "process_vm_writev_text", PWX, "EPERM", "seccomp"),
	STOPS("wx", "ldso_execstack", PNS | PSF, "exit=127", "noexec mount (ld.so cannot map it)"),
	STOPS("wx", "ldso_execstack", PDEG | PSU, "exit=127", "W^X (ld.so cannot make the stack executable)"),
	STOPS("wx", "report_memory_wx", PNS | PU | PS, "VERIFIED", "memory_wx achieved and proven"),
	STOPS("wx", "report_memory_wx", PB, "NOT-ACHIEVED", "memory_wx partial: /proc/self/mem writable"),
	STOPS("wx", "report_seccomp_wx", PWX, "LISTED", "the filter's W^X rules named"),
	STOPS("wx", "report_seccomp_mprotect", PALL, "ABSENT", "MDWE's, not the filter's"),
	STOPS("wx", "report_seccomp_mprotect", PS, "LISTED", "the filter's without MDWE"),

	/* wx_jit (profile escjit: gate_jit = allow): the same attempts run
	 * code, and the report says so instead of W^X. */
	CONTROL("wx_jit", "mmap_rw", PF | PSF, "OK"),
	CONTROL("wx_jit", "self_exec", PF | PSF, "exit=0"),
	CONTROL("wx_jit", "sh_exit7", PF | PSF, "exit=7"),
	CONTROL("wx_jit", "git_grep_regex", PF | PSF, "OK"),
	CONTROL("wx_jit", "git_grep_fixed", PF | PSF, "OK"),
	CONTROL("wx_jit", "git_grep_P", PF | PSF, "OK"),
	JIT_RUNS("mmap_anon_rwx", "RAN"),
	JIT_RUNS("mmap_anon_rx", "MAPPED"),
	JIT_RUNS("mmap_shared_rx_alias", "RAN"),
	STOPS("wx_jit", "devzero_shared_rx_alias", PF | PSF, "EPERM", "noexec /dev in the mount view"),
	JIT_RUNS("mmap_file_shared_rx", "MAPPED"),
	JIT_RUNS("mmap_file_rwx", "RAN"),
	JIT_RUNS("file_regain_exec", "RAN"),
	STOPS("wx_jit", "ws_file_shared_rx", PF | PSF, "EACCES", "noexec workspace"),
	JIT_RUNS("mprotect_rx", "RAN"),
	JIT_RUNS("mprotect_rwx", "RAN"),
	JIT_RUNS("pkey_mprotect_rx", "RAN"),
	JIT_RUNS("stack_exec", "RAN"),
	JIT_RUNS("shm_mprotect_rx", "RAN"),
	JIT_RUNS("shmat_exec_alias", "RAN"),
	JIT_RUNS("mremap_alias_rx", "RAN"),
	STOPS("wx_jit", "remap_file_pages_exec", PF | PSF, "EINVAL", "kernel (remap_file_pages takes no protection)"),
	STOPS("wx_jit", "personality_rie", PF | PSF, "EPERM", "seccomp (personality: query and PER_LINUX only)"),
	JIT_RUNS("mdwe_clear", "OK"),
	JIT_RUNS("mdwe_get", "0"),
	STOPS("wx_jit", "procmem_write_text", PF | PSF, "EACCES", "landlock (/proc read-only)"),
	STOPS("wx_jit", "process_vm_writev_text", PF | PSF, "EPERM", "seccomp"),
	STOPS("wx_jit", "ldso_execstack", PF | PSF, "exit=127", "noexec mount (ld.so cannot map it)"),
	STOPS("wx_jit", "report_memory_wx", PF | PSF, "JIT-ALLOWED", "memory_wx not requested, and says why"),
	STOPS("wx_jit", "report_seccomp_wx", PF | PSF, "ABSENT", "no W^X rule loaded, none named"),
	STOPS("wx_jit", "report_seccomp_mprotect", PF | PSF, "ABSENT", "no W^X rule loaded, none named"),

	/* wx_stack (profile escstack: escwx and a copy of the helper whose
	 * PT_GNU_STACK asks for an executable stack): the kernel gives it one
	 * at execve, MDWE or not, and no filter sees it. Not contained; the
	 * report names it and lists no exec_boundary. */
	STOPS("wx_stack", "stack_run_self", PF | PSF, "SIGSEGV", "kernel (no executable stack asked for)"),
	OPEN("wx_stack", "stack_run_execstack", PF | PSF, "exit=0", "exec_boundary"),
	STOPS("wx_stack", "report_memory_wx", PF | PSF, "NOT-VERIFIED-EXEC-STACK",
	      "the canary names the executable stack"),
	STOPS("wx_stack", "report_seccomp_wx", PF | PSF, "LISTED", "the filter's W^X rules named"),
	STOPS("wx_stack", "report_seccomp_mprotect", PF, "ABSENT", "MDWE's, not the filter's"),
	STOPS("wx_stack", "report_seccomp_mprotect", PSF, "LISTED", "the filter's without MDWE"),

	/* network (profile esc: network = deny). */
	STOPS("network", "tcp_host", PNS, "ECONNREFUSED", "network namespace"),
	STOPS("network", "tcp_host", PDEG, "EAFNOSUPPORT", "seccomp (no inet sockets)"),
	STOPS("network", "tcp6_mapped_host", PNS, "ECONNREFUSED|ENETUNREACH", "network namespace"),
	STOPS("network", "tcp6_mapped_host", PDEG, "EAFNOSUPPORT", "seccomp (no inet sockets)"),
	STOPS("network", "tcp_host_family_high", PALL, "EAFNOSUPPORT", "seccomp (family >= AF_MAX)"),
	STOPS("network", "tcp_fastopen", PNS, "EPERM", "seccomp (MSG_FASTOPEN)"),
	STOPS("network", "tcp_fastopen", PDEG, "EAFNOSUPPORT", "seccomp (no inet sockets)"),
	STOPS("network", "tfo_connect_opt", PNS, "EPERM", "seccomp (TCP_FASTOPEN_CONNECT)"),
	STOPS("network", "tfo_connect_opt", PDEG, "EAFNOSUPPORT", "seccomp (no inet sockets)"),
	STOPS("network", "tfo_connect_opt_high", PNS, "EPERM", "seccomp (low 32 bits of level)"),
	STOPS("network", "tfo_connect_opt_high", PDEG, "EAFNOSUPPORT", "seccomp (no inet sockets)"),
	STOPS("network", "udp_host", PNS, "OK", "network namespace (the sandbox's own loopback; nothing arrives)"),
	STOPS("network", "udp_host", PDEG, "EAFNOSUPPORT", "seccomp (no inet sockets)"),
	STOPS("network", "mptcp", PNS, "EPERM", "seccomp (IPPROTO_MPTCP)"),
	STOPS("network", "mptcp", PDEG, "EAFNOSUPPORT", "seccomp (no inet sockets)"),
	STOPS("network", "mptcp_high", PNS, "EPERM", "seccomp (low 32 bits of protocol)"),
	STOPS("network", "mptcp_high", PDEG, "EAFNOSUPPORT", "seccomp (no inet sockets)"),
	STOPS("network", "ping", PNS, "EACCES|ENETUNREACH", "network namespace (ping_group_range, no route)"),
	STOPS("network", "ping", PDEG, "EAFNOSUPPORT", "seccomp (no inet sockets)"),
	STOPS("network", "raw_icmp", PNS, "EPERM", "no CAP_NET_RAW"),
	STOPS("network", "raw_icmp", PDEG, "EAFNOSUPPORT", "seccomp (no inet sockets)"),
	STOPS("network", "af_packet", PALL, "EAFNOSUPPORT", "seccomp"),
	STOPS("network", "af_vsock", PALL, "EAFNOSUPPORT", "seccomp"),
	STOPS("network", "af_alg", PALL, "EAFNOSUPPORT", "seccomp"),
	STOPS("network", "netlink_audit", PALL, "EAFNOSUPPORT", "seccomp (netlink route only)"),
	CONTROL("network", "netlink_route", PALL, "OK"),
	CONTROL("network", "loopback_own", PNS, "OK"),
	STOPS("network", "loopback_own", PDEG, "EAFNOSUPPORT", "seccomp (no inet sockets)"),
	STOPS("network", "fixture_tcp_contacts", PALL, "0", "(the host listener saw nobody)"),
	STOPS("network", "fixture_udp_received", PALL, "0", "(the host socket got nothing)"),

	/* unix: the host's pathname and abstract sockets. */
	STOPS("unix", "host_sock", PALL, "EACCES", "seccomp user-notification supervisor"),
	STOPS("unix", "host_seqpacket", PALL, "EACCES", "seccomp user-notification supervisor"),
	STOPS("unix", "host_sock_symlink", PALL, "EACCES", "seccomp user-notification supervisor"),
	STOPS("unix", "dgram_socket", PALL, "EPERM", "seccomp (no unix datagrams)"),
	STOPS("unix", "dgram_socketpair", PALL, "EPERM", "seccomp (no unix datagrams)"),
	STOPS("unix", "raw_socket", PALL, "EPERM", "seccomp (SOCK_RAW is a unix datagram)"),
	STOPS("unix", "raw_socketpair", PALL, "EPERM", "seccomp (SOCK_RAW is a unix datagram)"),
	STOPS("unix", "host_dgram_raw", PALL, "EPERM", "seccomp (SOCK_RAW is a unix datagram)"),
	STOPS("unix", "host_dgram", PALL, "EPERM", "seccomp (no unix datagrams)"),
	STOPS("unix", "abstract_host", PNS, "ECONNREFUSED", "network namespace"),
	STOPS("unix", "abstract_host", PDEG, "EACCES", "seccomp user-notification supervisor"),
	HARMLESS("unix", "abstract_bind", PNS, "OK", "its own network namespace: no host client sees the name"),
	STOPS("unix", "abstract_bind", PDEG, "EACCES", "seccomp user-notification supervisor (bind)"),
	CONTROL("unix", "autobind", PALL, "OK"),
	CONTROL("unix", "own_sock_tmp", PALL, "OK"),
	CONTROL("unix", "own_sock_ws", PALL, "OK"),
	CONTROL("unix", "socketpair_stream", PALL, "OK"),

	/* unix_sameuid: the agent's own uid outside the sandbox, a host tool
	 * or IDE, the user's tmux or ssh-agent: owning the socket file does
	 * not make it the session's. Where the directory is the session's own
	 * (a private /tmp, /dev/shm) it is not there at all. */
	STOPS("unix_sameuid", "sameuid_ws", PALL, "EACCES", "unix supervisor (not bound by the session)"),
	STOPS("unix_sameuid", "sameuid_home", PALL, "EACCES", "unix supervisor (not bound by the session)"),
	STOPS("unix_sameuid", "sameuid_tmp", PNS, "ENOENT", "private /tmp"),
	STOPS("unix_sameuid", "sameuid_tmp", PDEG, "EACCES", "unix supervisor (not bound by the session)"),
	STOPS("unix_sameuid", "sameuid_shm", PNS, "ENOENT", "private /dev/shm"),
	STOPS("unix_sameuid", "sameuid_shm", PDEG, "EACCES", "unix supervisor (not bound by the session)"),
	STOPS("unix_sameuid", "fixture_sameuid_connects", PALL, "0", "(nobody reached the agent's own listeners)"),
	STOPS("unix_sameuid", "tmux_outside", PALL, "exit=1", "unix supervisor (a tmux server outside)"),
	STOPS("unix_sameuid", "tmux_outside_ran", PALL, "ABSENT", "(run-shell ran nothing outside)"),
	STOPS("unix_sameuid", "sshagent_outside", PALL, "exit=2", "unix supervisor (an ssh-agent outside: no key listed)"),
	CONTROL("unix_sameuid", "outside_tmux_control", PALL, "exit=0"),
	CONTROL("unix_sameuid", "outside_sshagent_control", PALL, "exit=0"),
	CONTROL("unix_sameuid", "tmux_inside_new", PALL, "exit=0"),
	CONTROL("unix_sameuid", "tmux_inside_run", PALL, "exit=0"),
	CONTROL("unix_sameuid", "tmux_inside_ran", PALL, "OK"),
	CONTROL("unix_sameuid", "tmux_inside_second_client", PALL, "exit=0"),
	CONTROL("unix_sameuid", "tmux_inside_wake", PALL, "exit=0"),
	HARMLESS("unix_sameuid", "tmux_inside_kill", PALL, "exit=0|exit=1", "cleanup: kill-server's own status races the server's exit"),
	/* ssh-add -l exit 1: connected, "The agent has no identities." */
	CONTROL("unix_sameuid", "sshagent_inside", PALL, "exit=1"),
	STOPS("unix", "fixture_stream_connects", PALL, "0", "(nobody reached host.sock)"),
	STOPS("unix", "fixture_seqpacket_connects", PALL, "0", "(nobody reached host.seqpacket)"),
	STOPS("unix", "fixture_dgram_received", PALL, "0", "(nothing reached host.dgram)"),
	STOPS("unix", "fixture_abstract_connects", PALL, "0", "(nobody reached the abstract listener)"),

	/* fds_cwd: a root-only fd left open across agent-shell's exec. */
	STOPS("fds_cwd", "fds", PALL, "0,1,2", "agent-shell and worker fd hygiene"),
	CONTROL("fds_cwd", "cwd", PALL, "WS"),

	/* env: started with BASH_ENV, ENV, FOO and LD_BIND_NOW set. */
	STOPS("env", "env_BASH_ENV", PALL, "ABSENT", "environment allow-list"),
	STOPS("env", "env_ENV", PALL, "ABSENT", "environment allow-list"),
	STOPS("env", "env_FOO", PALL, "ABSENT", "environment allow-list"),
	STOPS("env", "env_GLIBC_TUNABLES", PALL, "ABSENT", "environment allow-list"),
	STOPS("env", "env_LD_any", PALL, "ABSENT", "environment allow-list"),
	CONTROL("env", "env_HOME", PALL, "SET"),
	CONTROL("env", "env_USER", PALL, "SET"),
	CONTROL("env", "env_PATH", PALL, "SET"),

	/* rlimits, fork_bomb, tmp_fill (profile esclimits). */
	STOPS("rlimits", "raise_nproc", PALL, "EPERM", "hard limit, no CAP_SYS_RESOURCE"),
	STOPS("rlimits", "raise_nofile", PALL, "EPERM", "hard limit, no CAP_SYS_RESOURCE"),
	STOPS("rlimits", "raise_core", PALL, "EPERM", "hard limit 0, no CAP_SYS_RESOURCE"),
	STOPS("rlimits", "raise_fsize", PALL, "EPERM", "hard limit, no CAP_SYS_RESOURCE"),
	STOPS("fork_bomb", "fork_bomb", PALL, "EAGAIN", "RLIMIT_NPROC 64"),
	STOPS("fork_bomb", "fork_count", PALL, "<=64", "RLIMIT_NPROC 64"),
	CONTROL("fork_bomb", "fork_after", PALL, "OK"),
	STOPS("fork_bomb", "agent_procs_after", PALL, "0", "(all gone once the session ends)"),
	STOPS("tmp_fill", "tmp_fill", PNS, "ENOSPC", "private /tmp tmpfs of 8M"),
	STOPS("tmp_fill", "tmp_fill_bytes", PNS, "<=8388608", "private /tmp tmpfs of 8M"),
	STOPS("tmp_fill", "tmp_fill", PDEG, "EFBIG", "RLIMIT_FSIZE 16M"),
	STOPS("tmp_fill", "tmp_fill_bytes", PDEG, "<=16777216", "RLIMIT_FSIZE 16M"),

	/* session_time (profile esctime, 3 s): HUP ignored, a setsid'ed child. */
	CONTROL("session_time", "started", PALL, "OK"),
	STOPS("session_time", "ended_in_time", PALL, "OK", "session_time: HUP, then a kill after a grace"),
	STOPS("session_time", "shell_exit", PALL, "exit=137|exit=129", "session_time"),
	STOPS("session_time", "agent_procs_after", PNS, "0", "pid namespace (init kills the rest)"),
	STOPS("session_time", "agent_procs_after", PDEG, "0", "the session's own process tracking"),

	/* leftovers: a setsid'ed double fork that keeps forking. */
	CONTROL("leftovers", "spawned", PALL, "OK"),
	STOPS("leftovers", "agent_procs_after", PNS, "0", "pid namespace (init kills the rest)"),
	STOPS("leftovers", "agent_procs_after", PDEG, "0", "the session's own process tracking"),

	/* workspace_swap: parent/ws replaced by a symlink, from outside. */
	STOPS("workspace_swap", "shell_exit", PALL, "exit=126", "agent-shell: workspace is a symlink"),
	STOPS("workspace_swap", "stderr_names_workspace", PALL, "OK", "agent-shell"),
	STOPS("workspace_swap", "stderr_names_symlink", PALL, "OK", "agent-shell"),
	STOPS("workspace_swap", "helper_ran", PALL, "NO", "agent-shell refuses before anything runs"),
	STOPS("workspace_swap", "shm_untouched", PALL, "OK", "agent-shell refuses before anything runs"),
};

/* ---- the world ------------------------------------------------------------------ */

struct counts {
	int stream, seqpacket, dgram, abstract, tcp, udp;
	int sameuid;		/* the agent's own listeners outside */
};

struct world {
	char build[PATH_MAX];
	char shell[PATH_MAX + 64], helper_src[PATH_MAX + 64];
	char hex[8];
	char agent[32], group[32];
	char fix[64];			/* /sbx-test-esc-XXXXXX, root 0755 */
	char helper[128], home[128], xdg[128], rootonly[128];
	char host[64];			/* /var/tmp/sbx-test-esc-XXXXXX, the agent's */
	char victim[128], secret[128], alias[128];
	char wsbase[64], parent[128], ws[160], ws_away[160];
	char shm[64];			/* /dev/shm/sbx-test-esc-XXXXXX, the agent's */
	char abstract[64];
	char mark[64];			/* the name of the marker files */
	char mark_tmp[96], mark_shm[96], mark_home[192];
	char conf[8][128];		/* one per enum profile */
	unsigned tcp_port, udp_port;
	uid_t uid;
	gid_t gid;
	pid_t server, sleeper;
	/* Class unix_sameuid: the agent's own processes outside the sandbox
	 * (a listener, an ssh-agent, a tmux server) and what they answered
	 * outside, before the session. */
	pid_t outsider, outside_agent;
	char outside_tmux[192], outside_agent_sock[192], out_tmp[96], key[128];
	int outside_tmux_ok, outside_agent_ok;
	struct counts *counts;		/* MAP_SHARED with the server */
	bool agent_made, group_made;
	/* Independent kernel probes: the contract assumes both. */
	int landlock_abi;
	bool userns;
	/* git 2.40 and later fall back to PCRE2's interpreter when its JIT
	 * gets no executable memory (git --version, read at set-up). */
	bool git_jit_fallback;
};

static struct world W;

enum profile { ESC, ESCGATE, ESCTIME, ESCLIMITS, ESCWX, ESCJIT, ESCSTACK, ESCHOME, NPROFILES };
static const char *const profile_names[NPROFILES] = {
	"esc", "escgate", "esctime", "esclimits", "escwx", "escjit", "escstack", "eschome",
};
_Static_assert(ARRAY_SIZE(((struct world *)0)->conf) == NPROFILES, "a config per profile");

static int write_text(const char *path, const char *text, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	size_t len = strlen(text);

	if (fd < 0)
		return -1;
	if (write(fd, text, len) != (ssize_t)len || fchmod(fd, mode) != 0) {
		close(fd);
		return -1;
	}
	return close(fd);
}

static int mkdir_owned(const char *path, mode_t mode, uid_t uid, gid_t gid)
{
	if (mkdir(path, mode) != 0 || chmod(path, mode) != 0 || chown(path, uid, gid) != 0)
		return -1;
	return 0;
}

static int chown_mode(const char *path, uid_t uid, gid_t gid, mode_t mode)
{
	return chown(path, uid, gid) != 0 || chmod(path, mode) != 0 ? -1 : 0;
}

static int copy_file(const char *from, const char *to, mode_t mode)
{
	char buf[65536];
	int in = open(from, O_RDONLY | O_CLOEXEC), out;
	ssize_t n;

	if (in < 0)
		return -1;
	out = open(to, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (out < 0) {
		close(in);
		return -1;
	}
	while ((n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, (size_t)n) != n)
			n = -1;
	close(in);
	/* chmod after the write: a setuid bit survives only that way. */
	if (n < 0 || fchown(out, 0, 0) != 0 || fchmod(out, mode) != 0) {
		close(out);
		return -1;
	}
	return close(out);
}

/* Mark an ELF64's PT_GNU_STACK read-write-execute: what -z execstack
 * writes. 0, or -1 when it has none. */
static int set_exec_stack(const char *path)
{
	int fd = open(path, O_RDWR | O_CLOEXEC), r = -1;
	Elf64_Ehdr eh;

	if (fd < 0)
		return -1;
	if (pread(fd, &eh, sizeof(eh), 0) == (ssize_t)sizeof(eh) &&
	    memcmp(eh.e_ident, ELFMAG, SELFMAG) == 0 && eh.e_ident[EI_CLASS] == ELFCLASS64) {
		for (unsigned i = 0; i < eh.e_phnum; i++) {
			Elf64_Phdr ph;
			off_t at = (off_t)(eh.e_phoff + (uint64_t)i * eh.e_phentsize);

			if (pread(fd, &ph, sizeof(ph), at) != (ssize_t)sizeof(ph))
				break;
			if (ph.p_type != PT_GNU_STACK)
				continue;
			ph.p_flags = PF_R | PF_W | PF_X;
			if (pwrite(fd, &ph, sizeof(ph), at) == (ssize_t)sizeof(ph))
				r = 0;
			break;
		}
	}
	close(fd);
	return r;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Processes of the agent's uid other than the fixture sleep. */
static void kill_but_fixture(pid_t pid, const char *status, void *ctx)
{
	(void)status;
	(void)ctx;
	if (pid != W.sleeper)
		kill(pid, SIGKILL);
}

static int agent_procs(bool kill_them)
{
	int n = sbx_test_procs_of(W.uid, false);

	if (n > 0 && W.sleeper > 0 && kill(W.sleeper, 0) == 0)
		n--;
	if (kill_them && n > 0) {
		/* Kill each by pid, sparing the fixture: stop it first so a
		 * forking leftover cannot outrun the scan. */
		for (int round = 0; round < 20 && n > 0; round++) {
			(void)sbx_test_each_proc_of(W.uid, kill_but_fixture, NULL);
			usleep(50 * 1000);
			n = sbx_test_procs_of(W.uid, false);
			if (n > 0 && W.sleeper > 0 && kill(W.sleeper, 0) == 0)
				n--;
		}
	}
	return n;
}

/* Leftovers may still be exiting for a moment: poll up to 2 s. */
static int agent_procs_settled(void)
{
	int n = -1;

	for (int i = 0; i < 40; i++) {
		n = agent_procs(false);
		if (n == 0)
			break;
		usleep(50 * 1000);
	}
	return n;
}

/* A uid with no passwd entry and no running process, from start up. */
static int pick_free_uid(uid_t start, uid_t *out)
{
	for (uid_t u = start; u < start + 900; u++) {
		if (!getpwuid(u) && !getgrgid((gid_t)u) && sbx_test_procs_of(u, false) == 0) {
			*out = u;
			return 0;
		}
	}
	return -1;
}

static int write_configs(void)
{
	for (int i = 0; i < NPROFILES; i++) {
		char text[8192];
		int len;

		snprintf(W.conf[i], sizeof(W.conf[i]), "%s/conf/%s.conf", W.fix, profile_names[i]);
		len = snprintf(text, sizeof(text),
			 "[global]\n"
			 "state_dir = %s/state\n"
			 "agent_shell = %s\n"
			 "\n"
			 "[profile esc]\n"
			 "workspace_root = %s\n"
			 "workspace_read = allow\n"
			 "workspace_write = allow\n"
			 "host_read = allow\n"
			 "host_write = deny\n"
			 "network = deny\n"
			 "command = allow\n"
			 "home = ephemeral\n"
			 "shell = /bin/bash\n"
			 "deny_read = %s\n"
			 /* Every session runs, whatever it achieves: the
			  * report is what this tier reads. */
			 "min_level = none\n"
			 "require = none\n"
			 "\n"
			 "[profile escgate]\n"
			 "inherit = esc\n"
			 "command = gated\n"
			 "gate_allow = /bin/sh\n"
			 "gate_allow = %s\n"
			 "\n"
			 "[profile esctime]\n"
			 "inherit = esc\n"
			 "session_time = 3\n"
			 "\n"
			 "[profile esclimits]\n"
			 "inherit = esc\n"
			 "nproc = 64\n"
			 "tmp_size = 8M\n"
			 "fsize = 16M\n"
			 "\n"
			 "[profile escwx]\n"
			 "inherit = escgate\n"
			 "gate_allow = /usr/bin/git\n"
			 "\n"
			 "[profile escjit]\n"
			 "inherit = escwx\n"
			 "gate_jit = allow\n"
			 "\n"
			 "[profile escstack]\n"
			 "inherit = escwx\n"
			 "gate_allow = %s_execstack\n"
			 "\n"
			 "[profile eschome]\n"
			 "inherit = esc\n"
			 "home = real\n"
			 "\n"
			 "[match]\n"
			 "group %s = %s\n",
			 W.fix, W.shell, W.ws, W.secret, W.helper, W.helper, W.group,
			 profile_names[i]);
		if (len < 0 || (size_t)len >= sizeof(text) || write_text(W.conf[i], text, 0644) != 0)
			return -1;
	}
	return 0;
}

/* ---- fixtures: the listening server and the sleeper ---------------------------- */

static int unix_listener(const char *path, int type, bool abstract)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	socklen_t len = sizeof(sa);
	int s = socket(AF_UNIX, type | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

	if (s < 0)
		return -1;
	if (abstract) {
		snprintf(sa.sun_path + 1, sizeof(sa.sun_path) - 1, "%s", path);
		len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + strlen(path));
	} else {
		snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	}
	if (bind(s, (struct sockaddr *)&sa, len) != 0 ||
	    (!abstract && chmod(path, 0666) != 0) ||
	    (type != SOCK_DGRAM && listen(s, 16) != 0)) {
		close(s);
		return -1;
	}
	return s;
}

static int inet_listener(int type, unsigned *port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t len = sizeof(sa);
	int s = socket(AF_INET, type | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (s < 0)
		return -1;
	if (bind(s, (struct sockaddr *)&sa, sizeof(sa)) != 0 ||
	    (type == SOCK_STREAM && listen(s, 16) != 0) ||
	    getsockname(s, (struct sockaddr *)&sa, &len) != 0) {
		close(s);
		return -1;
	}
	*port = ntohs(sa.sin_port);
	return s;
}

/* The server: counts every connection and datagram, never answers. */
static void __attribute__((noreturn)) serve(const int *fds, int *const *counter, int n)
{
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	for (;;) {
		struct pollfd p[8];
		char buf[256];

		for (int i = 0; i < n; i++)
			p[i] = (struct pollfd){ fds[i], POLLIN, 0 };
		if (poll(p, (nfds_t)n, -1) < 0 && errno != EINTR)
			_exit(1);
		for (int i = 0; i < n; i++) {
			int c;

			if (!(p[i].revents & POLLIN))
				continue;
			c = accept4(fds[i], NULL, NULL, SOCK_CLOEXEC);
			if (c >= 0) {
				__atomic_add_fetch(counter[i], 1, __ATOMIC_SEQ_CST);
				close(c);
			} else if (errno == ENOTSOCK || errno == EOPNOTSUPP || errno == EINVAL) {
				/* a datagram socket */
				if (recv(fds[i], buf, sizeof(buf), MSG_DONTWAIT) >= 0)
					__atomic_add_fetch(counter[i], 1, __ATOMIC_SEQ_CST);
			}
		}
	}
}

static int start_server(void)
{
	char path[160];
	int fds[6];
	int *counter[6];

	W.counts = mmap(NULL, sizeof(*W.counts), PROT_READ | PROT_WRITE,
			MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (W.counts == MAP_FAILED) {
		W.counts = NULL;
		return -1;
	}
	snprintf(path, sizeof(path), "%s/host.sock", W.fix);
	fds[0] = unix_listener(path, SOCK_STREAM, false);
	snprintf(path, sizeof(path), "%s/host.seqpacket", W.fix);
	fds[1] = unix_listener(path, SOCK_SEQPACKET, false);
	snprintf(path, sizeof(path), "%s/host.dgram", W.fix);
	fds[2] = unix_listener(path, SOCK_DGRAM, false);
	fds[3] = unix_listener(W.abstract, SOCK_STREAM, true);
	fds[4] = inet_listener(SOCK_STREAM, &W.tcp_port);
	fds[5] = inet_listener(SOCK_DGRAM, &W.udp_port);
	counter[0] = &W.counts->stream;
	counter[1] = &W.counts->seqpacket;
	counter[2] = &W.counts->dgram;
	counter[3] = &W.counts->abstract;
	counter[4] = &W.counts->tcp;
	counter[5] = &W.counts->udp;
	for (int i = 0; i < 6; i++) {
		if (fds[i] < 0) {
			fprintf(stderr, "test_escape: fixture listener %d: %s\n", i, strerror(errno));
			return -1;
		}
	}
	fflush(NULL);
	W.server = fork();
	if (W.server < 0)
		return -1;
	if (W.server == 0)
		serve(fds, counter, 6);
	for (int i = 0; i < 6; i++)
		close(fds[i]);
	return 0;
}

static void drop_to_agent(void)
{
	if (initgroups(W.agent, W.gid) != 0 || setresgid(W.gid, W.gid, W.gid) != 0 ||
	    setresuid(W.uid, W.uid, W.uid) != 0) {
		fprintf(stderr, "drop to %s: %s\n", W.agent, strerror(errno));
		_exit(90);
	}
}

static int start_sleeper(void)
{
	fflush(NULL);
	W.sleeper = fork();
	if (W.sleeper < 0)
		return -1;
	if (W.sleeper == 0) {
		int null = open("/dev/null", O_RDWR);

		if (null >= 0) {
			dup2(null, 0);
			dup2(null, 1);
		}
		drop_to_agent();
		/* After the uid change, which clears it. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		execl("/bin/sleep", "sleep", "300", (char *)NULL);
		_exit(127);
	}
	return 0;
}

/* ---- set-up and teardown -------------------------------------------------------- */

static int group_teardown(void **state);
static void unlink_outsider_sockets(void);

/* The security.capability value of a file capability set (VFS v2):
 * cap_dac_read_search and cap_setuid, permitted and effective. */
static int set_file_caps(const char *path)
{
	struct {
		uint32_t magic_etc;
		struct {
			uint32_t permitted, inheritable;
		} data[2];
	} caps = { 0x02000000u | 0x000001u, { { (1u << 2) | (1u << 7), 0 }, { 0, 0 } } };

	return setxattr(path, "security.capability", &caps, sizeof(caps), 0);
}

/*
 * What the table assumes of the kernel, probed here and not through the
 * code under test: Landlock with scopes (ABI 6) for the full path, and
 * user namespaces for the agent's uid.
 */
static void probe_kernel(void)
{
	pid_t pid;
	int status = 0;

	W.landlock_abi = (int)syscall(SYS_landlock_create_ruleset, NULL, 0UL, 1UL /* VERSION */);
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		drop_to_agent();
		_exit(unshare(CLONE_NEWUSER) == 0 ? 0 : 1);
	}
	waitpid(pid, &status, 0);
	W.userns = pid > 0 && sbx_test_status_code(status) == 0;
	{
		FILE *f = popen("/usr/bin/git --version 2>/dev/null", "r");
		char line[128] = "";
		unsigned long major = 0, minor = 0;
		char *end = NULL;

		if (f) {
			if (!fgets(line, sizeof(line), f))
				line[0] = '\0';
			pclose(f);
		}
		/* "git version 2.39.5" */
		if (strncmp(line, "git version ", 12) == 0) {
			major = strtoul(line + 12, &end, 10);
			if (end && *end == '.')
				minor = strtoul(end + 1, NULL, 10);
		}
		W.git_jit_fallback = major > 2 || (major == 2 && minor >= 40);
	}
}

/* sbx_test_int80_native(), probed once by the group setup. */
static int int80_native = -1;

static int group_setup_inner(void)
{
	char exe[PATH_MAX], path[256], uid_s[16];
	unsigned char rnd[3];
	struct stat st;
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	if (n <= 0)
		return -1;
	exe[n] = '\0';
	int80_native = sbx_test_int80_native();
	/* <build>/tests/test_escape: BUILD= directories work. */
	snprintf(W.build, sizeof(W.build), "%s", dirname(dirname(exe)));
	snprintf(W.shell, sizeof(W.shell), "%s/tests/agent-shell-testable", W.build);
	snprintf(W.helper_src, sizeof(W.helper_src), "%s/tests/escape_helper", W.build);
	if (stat(W.shell, &st) != 0 || stat(W.helper_src, &st) != 0) {
		fprintf(stderr, "test_escape: %s or %s missing (make check builds them)\n",
			W.shell, W.helper_src);
		return -1;
	}
	if (getrandom(rnd, sizeof(rnd), 0) != sizeof(rnd))
		return -1;
	snprintf(W.hex, sizeof(W.hex), "%02x%02x%02x", rnd[0], rnd[1], rnd[2]);
	snprintf(W.agent, sizeof(W.agent), "sbxt-esc-%s", W.hex);
	snprintf(W.group, sizeof(W.group), "sbxg-esc-%s", W.hex);
	snprintf(W.abstract, sizeof(W.abstract), "sbx-test-esc-%s", W.hex);
	snprintf(W.mark, sizeof(W.mark), "sbx-test-esc-mark-%s", W.hex);

	snprintf(W.fix, sizeof(W.fix), "/sbx-test-esc-XXXXXX");
	snprintf(W.host, sizeof(W.host), "/var/tmp/sbx-test-esc-XXXXXX");
	snprintf(W.wsbase, sizeof(W.wsbase), "/var/tmp/sbx-test-esc-ws-XXXXXX");
	snprintf(W.shm, sizeof(W.shm), "/dev/shm/sbx-test-esc-XXXXXX");
	if (!mkdtemp(W.fix) || chmod(W.fix, 0755) != 0) {
		W.fix[0] = '\0';
		return -1;
	}
	if (!mkdtemp(W.host)) {
		W.host[0] = '\0';
		return -1;
	}
	if (!mkdtemp(W.wsbase) || chmod(W.wsbase, 0755) != 0) {
		W.wsbase[0] = '\0';
		return -1;
	}
	if (!mkdtemp(W.shm)) {
		W.shm[0] = '\0';
		return -1;
	}

	/* Explicit uids away from the --system range other suites allocate
	 * from: "no process of this uid is left" must only see ours. */
	if (pick_free_uid(64000, &W.uid) != 0)
		return -1;
	snprintf(uid_s, sizeof(uid_s), "%u", (unsigned)W.uid);
	snprintf(W.home, sizeof(W.home), "%s/home", W.fix);
	{
		const char *g[] = { "/usr/sbin/groupadd", "--system", W.group, NULL };
		const char *a[] = { "/usr/sbin/useradd", "--system", "-M", "-N", "-u", uid_s,
				    "-s", W.shell, "-d", W.home, "-G", W.group, W.agent, NULL };

		W.group_made = sbx_test_run_quiet(g) == 0;
		if (W.group_made)
			W.agent_made = sbx_test_run_quiet(a) == 0;
	}
	if (!W.group_made || !W.agent_made) {
		fprintf(stderr, "test_escape: useradd/groupadd failed\n");
		return -1;
	}
	{
		struct passwd *pw = getpwnam(W.agent);

		if (!pw || pw->pw_uid != W.uid)
			return -1;
		W.gid = pw->pw_gid;
	}

	/* The root-owned fixture directory. */
	snprintf(W.helper, sizeof(W.helper), "%s/escape_helper", W.fix);
	snprintf(W.xdg, sizeof(W.xdg), "%s/xdg", W.fix);
	snprintf(W.rootonly, sizeof(W.rootonly), "%s/rootonly", W.fix);
	snprintf(path, sizeof(path), "%s/state", W.fix);
	if (mkdir_owned(W.home, 0755, W.uid, W.gid) || mkdir_owned(W.xdg, 0700, W.uid, W.gid) ||
	    mkdir_owned(path, 0755, 0, 0))
		return -1;
	snprintf(path, sizeof(path), "%s/conf", W.fix);
	if (mkdir_owned(path, 0755, 0, 0))
		return -1;
	if (copy_file(W.helper_src, W.helper, 0755) != 0)
		return -1;
	snprintf(path, sizeof(path), "%s_execstack", W.helper);
	if (copy_file(W.helper_src, path, 0755) != 0 || set_exec_stack(path) != 0) {
		fprintf(stderr, "test_escape: %s: no PT_GNU_STACK to mark executable\n", path);
		return -1;
	}
	snprintf(path, sizeof(path), "%s/id-suid", W.fix);
	if (copy_file("/usr/bin/id", path, 04755) != 0)
		return -1;
	snprintf(path, sizeof(path), "%s/cat-fcap", W.fix);
	if (copy_file("/usr/bin/cat", path, 0755) != 0 || set_file_caps(path) != 0) {
		fprintf(stderr, "test_escape: file capability on %s: %s\n", path, strerror(errno));
		return -1;
	}
	if (write_text(W.rootonly, "ROOTONLY\n", 0600) != 0)
		return -1;

	/* The agent's host directory: DAC-writable, never granted. */
	snprintf(W.victim, sizeof(W.victim), "%s/victim.txt", W.host);
	snprintf(W.secret, sizeof(W.secret), "%s/secret.txt", W.host);
	snprintf(W.alias, sizeof(W.alias), "%s/alias.txt", W.host);
	if (chown_mode(W.host, W.uid, W.gid, 0755) || write_text(W.victim, "VICTIM\n", 0644) ||
	    chown_mode(W.victim, W.uid, W.gid, 0644) || write_text(W.secret, "TOPSECRET\n", 0644) ||
	    chown_mode(W.secret, W.uid, W.gid, 0644))
		return -1;

	/* The workspace, in a directory the agent owns (so it could swap it). */
	snprintf(W.parent, sizeof(W.parent), "%s/parent", W.wsbase);
	snprintf(W.ws, sizeof(W.ws), "%s/ws", W.parent);
	snprintf(W.ws_away, sizeof(W.ws_away), "%s/ws.away", W.parent);
	if (mkdir_owned(W.parent, 0755, W.uid, W.gid) || mkdir_owned(W.ws, 0755, W.uid, W.gid) ||
	    chown_mode(W.shm, W.uid, W.gid, 0700))
		return -1;

	/* Markers: seen inside, the directory is the host's own. */
	snprintf(W.mark_tmp, sizeof(W.mark_tmp), "/tmp/%s", W.mark);
	snprintf(W.mark_shm, sizeof(W.mark_shm), "/dev/shm/%s", W.mark);
	snprintf(W.mark_home, sizeof(W.mark_home), "%s/%s", W.home, W.mark);
	if (write_text(W.mark_tmp, "mark\n", 0644) || write_text(W.mark_shm, "mark\n", 0644) ||
	    write_text(W.mark_home, "mark\n", 0644))
		return -1;

	/* An ssh key of the agent's, for its ssh-agent outside. */
	snprintf(W.out_tmp, sizeof(W.out_tmp), "/tmp/sbx-test-esc-out-%s.sock", W.mark);
	snprintf(W.key, sizeof(W.key), "%s/esc-key", W.fix);
	{
		const char *kg[] = { "/usr/bin/ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f",
				     W.key, NULL };

		if (sbx_test_run_quiet(kg) != 0 || chown_mode(W.key, W.uid, W.gid, 0600) != 0)
			return -1;
	}
	if (write_configs() != 0 || start_server() != 0 || start_sleeper() != 0)
		return -1;
	probe_kernel();
	return 0;
}

static int group_setup(void **state)
{
	(void)state;
	return sbx_test_group_setup(group_setup_inner, group_teardown);
}

static void reap(pid_t *pid)
{
	if (*pid > 0) {
		kill(*pid, SIGKILL);
		waitpid(*pid, NULL, 0);
	}
	*pid = 0;
}

static int group_teardown(void **state)
{
	(void)state;
	if (geteuid() != 0)
		return 0;
	reap(&W.server);
	reap(&W.sleeper);
	reap(&W.outsider);
	reap(&W.outside_agent);
	if (W.out_tmp[0])
		unlink_outsider_sockets();
	/* Nothing of the account may outlive the tests. */
	if (W.agent_made && W.uid)
		sbx_test_procs_of(W.uid, true);
	if (W.agent_made)
		sbx_test_remove_account(W.agent);
	if (W.group_made)
		sbx_test_remove_group(W.group);
	W.agent_made = W.group_made = false;
	/* The workspace may have been left swapped by a failed test. */
	if (W.parent[0]) {
		struct stat st;

		if (lstat(W.ws, &st) == 0 && S_ISLNK(st.st_mode))
			unlink(W.ws);
		if (lstat(W.ws_away, &st) == 0)
			rename(W.ws_away, W.ws);
	}
	if (W.mark[0]) {
		sbx_test_rmtree(W.mark_tmp);
		sbx_test_rmtree(W.mark_shm);
		W.mark[0] = '\0';
	}
	if (strncmp(W.fix, "/sbx-test-esc-", 14) == 0)
		sbx_test_rmtree(W.fix);
	if (strncmp(W.host, "/var/tmp/sbx-test-esc-", 22) == 0)
		sbx_test_rmtree(W.host);
	if (strncmp(W.wsbase, "/var/tmp/sbx-test-esc-ws-", 25) == 0)
		sbx_test_rmtree(W.wsbase);
	if (strncmp(W.shm, "/dev/shm/sbx-test-esc-", 22) == 0)
		sbx_test_rmtree(W.shm);
	W.fix[0] = W.host[0] = W.wsbase[0] = W.shm[0] = '\0';
	if (W.counts) {
		munmap(W.counts, sizeof(*W.counts));
		W.counts = NULL;
	}
	return 0;
}

/* ---- one session ---------------------------------------------------------------- */

#define OUT_MAX (64 * 1024)
#define ERR_MAX (16 * 1024)
#define MAX_LINES 256

struct line {
	char name[64];
	char val[160];
};

struct run {
	int status;		/* raw wait status; -1: not started */
	bool timed_out;
	double secs;
	char out[OUT_MAX];
	char err[ERR_MAX];
	struct line lines[MAX_LINES];
	int n_lines;
	char sid[40];
	bool have_report;
	struct sbx_report report;
};

struct session_spec {
	enum profile profile;
	enum path path;
	const char *cls;		/* the helper's subcommand */
	const char *const *env_extra;	/* "NAME=value" */
	int timeout_s;			/* default 30 */
};

static void add_line(struct run *r, const char *name, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void add_line(struct run *r, const char *name, const char *fmt, ...)
{
	va_list ap;

	if (r->n_lines >= MAX_LINES)
		return;
	snprintf(r->lines[r->n_lines].name, sizeof(r->lines[0].name), "%s", name);
	va_start(ap, fmt);
	vsnprintf(r->lines[r->n_lines].val, sizeof(r->lines[0].val), fmt, ap);
	va_end(ap);
	r->n_lines++;
}

static const char *line_val(const struct run *r, const char *name)
{
	for (int i = 0; i < r->n_lines; i++)
		if (strcmp(r->lines[i].name, name) == 0)
			return r->lines[i].val;
	return NULL;
}

static void parse_lines(struct run *r)
{
	char *save = NULL, *copy = strdup(r->out);

	if (!copy)
		return;
	for (char *l = strtok_r(copy, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		size_t k = strcspn(l, " ");
		char name[64];

		snprintf(name, sizeof(name), "%.*s", (int)k, l);
		add_line(r, name, "%s", l[k] ? l + k + 1 : "");
	}
	free(copy);
	if (line_val(r, "session"))
		snprintf(r->sid, sizeof(r->sid), "%s", line_val(r, "session"));
}

static void read_report(struct run *r)
{
	char path[256];
	char *text = NULL;
	size_t len = 0;
	struct sbx_error err = { 0 };

	if (!r->sid[0] || strspn(r->sid, "0123456789abcdef") != strlen(r->sid))
		return;
	snprintf(path, sizeof(path), "%s/agent-sandbox/%s.json", W.xdg, r->sid);
	if (sbx_read_file(path, 256 * 1024, &text, &len, &err) != 0) {
		fprintf(stderr, "  report %s: %s\n", path, err.msg);
		return;
	}
	if (sbx_report_from_json(text, len, &r->report, &err) == 0)
		r->have_report = true;
	else
		fprintf(stderr, "  report %s: %s\n", path, err.msg);
	free(text);
	unlink(path);
}

static void drain(int fd, char *buf, size_t size, size_t *used, bool *open_flag)
{
	char tmp[8192];
	ssize_t n = read(fd, tmp, sizeof(tmp));

	if (n <= 0) {
		if (n == 0 || (errno != EINTR && errno != EAGAIN))
			*open_flag = false;
		return;
	}
	if (*used + (size_t)n + 1 <= size) {
		memcpy(buf + *used, tmp, (size_t)n);
		*used += (size_t)n;
		buf[*used] = '\0';
	}
}

/*
 * Start agent-shell-testable --run -- <helper copy> CLASS key=value... as
 * the agent, with a clean environment plus what the spec adds, and a
 * root-only file left open (not close-on-exec) across the exec. Collect
 * stdout and stderr until the shell ends or the deadline passes (then it
 * is killed). Parse the helper's lines and read the session's report.
 */
static void run_session(const struct session_spec *sp, struct run *r)
{
	char store[24][512];
	char *env[25];
	char fixture[32], tcp[32], udp[32], targets[64], ws[200], host[96], fix[96], abs[96];
	char mark[96], shm[96];
	const char *argv[] = { W.shell, "--run", "--", W.helper, sp->cls, ws, host, fix, abs,
			       tcp, udp, fixture, targets, mark, shm, NULL };
	int out[2], err[2];
	size_t n = 0, out_used = 0, err_used = 0;
	bool out_open = true, err_open = true, exited = false;
	double start, deadline;
	pid_t pid;

	memset(r, 0, sizeof(*r));
	r->status = -1;
	snprintf(ws, sizeof(ws), "ws=%s", W.ws);
	snprintf(host, sizeof(host), "host=%s", W.host);
	snprintf(fix, sizeof(fix), "fix=%s", W.fix);
	snprintf(abs, sizeof(abs), "abstract=%s", W.abstract);
	snprintf(tcp, sizeof(tcp), "tcp=%u", W.tcp_port);
	snprintf(udp, sizeof(udp), "udp=%u", W.udp_port);
	snprintf(fixture, sizeof(fixture), "fixture=%d", (int)W.sleeper);
	snprintf(targets, sizeof(targets), "targets=%s", paths[sp->path].targets);
	snprintf(mark, sizeof(mark), "mark=%s", W.mark);
	snprintf(shm, sizeof(shm), "shm=%s", W.shm);

	snprintf(store[n++], 512, "PATH=/usr/local/bin:/usr/bin:/bin");
	snprintf(store[n++], 512, "HOME=%s", W.home);
	snprintf(store[n++], 512, "USER=%s", W.agent);
	snprintf(store[n++], 512, "LOGNAME=%s", W.agent);
	snprintf(store[n++], 512, "LANG=C");
	snprintf(store[n++], 512, "XDG_RUNTIME_DIR=%s", W.xdg);
	snprintf(store[n++], 512, "SBX_TEST_CONFIG=%s", W.conf[sp->profile]);
	if (paths[sp->path].probe[0])
		snprintf(store[n++], 512, "SBX_TEST_PROBE=%s", paths[sp->path].probe);
	for (size_t i = 0; sp->env_extra && sp->env_extra[i] && n < 24; i++)
		snprintf(store[n++], 512, "%s", sp->env_extra[i]);
	for (size_t i = 0; i < n; i++)
		env[i] = store[i];
	env[n] = NULL;

	if (pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0)
		return;
	fflush(NULL);
	start = now_s();
	pid = fork();
	if (pid < 0)
		return;
	if (pid == 0) {
		int null = open("/dev/null", O_RDONLY);
		int leak = open(W.rootonly, O_RDONLY);	/* not O_CLOEXEC, on purpose */

		dup2(null, 0);
		dup2(out[1], 1);
		dup2(err[1], 2);
		/* Where sshd starts a login shell. */
		if (chdir(W.home) != 0)
			_exit(124);
		/* A root-only file the shell inherits at a low and a high
		 * number: neither may reach the program. */
		if (leak >= 0) {
			dup2(leak, 3);
			dup2(leak, 37);
		}
		drop_to_agent();
		execve(W.shell, (char *const *)argv, env);
		_exit(125);
	}
	close(out[1]);
	close(err[1]);
	deadline = start + (sp->timeout_s ? sp->timeout_s : 30);
	/* Until the shell is gone and its pipes are drained; what it left
	 * behind may hold the pipes open much longer (class leftovers), so
	 * once it has exited only a short drain follows. */
	while (out_open || err_open) {
		struct pollfd p[2] = { { out_open ? out[0] : -1, POLLIN, 0 },
				       { err_open ? err[0] : -1, POLLIN, 0 } };
		double t = now_s();

		if (!exited && waitpid(pid, &r->status, WNOHANG) == pid) {
			exited = true;
			r->secs = t - start;
			deadline = t + 0.3;
		}
		if (t > deadline) {
			if (!exited) {
				r->timed_out = true;
				kill(pid, SIGKILL);
			}
			break;
		}
		if (poll(p, 2, 20) < 0 && errno != EINTR)
			break;
		if (p[0].revents)
			drain(out[0], r->out, sizeof(r->out), &out_used, &out_open);
		if (p[1].revents)
			drain(err[0], r->err, sizeof(r->err), &err_used, &err_open);
	}
	if (!exited) {
		while (waitpid(pid, &r->status, 0) < 0 && errno == EINTR)
			;
		r->secs = now_s() - start;
	}
	close(out[0]);
	close(err[0]);
	parse_lines(r);
	read_report(r);
}

/* ---- checking a run against the table ------------------------------------------- */

static bool report_has(const struct run *r, const char *g)
{
	enum sbx_guarantee bit;

	if (sbx_guarantee_parse(g, &bit) != 0)
		return true;	/* an unknown name never passes as absent */
	return r->have_report && (r->report.guarantees & (uint32_t)bit);
}

static bool outcome_in(const char *got, const char *want)
{
	char buf[256], *save = NULL;

	snprintf(buf, sizeof(buf), "%s", want);
	for (char *w = strtok_r(buf, "|", &save); w; w = strtok_r(NULL, "|", &save)) {
		if (strncmp(w, "<=", 2) == 0) {
			char *end;
			long long v = strtoll(got, &end, 10);

			if (*got && !*end && v <= strtoll(w + 2, NULL, 10))
				return true;
		} else if (strcmp(got, w) == 0) {
			return true;
		}
	}
	return false;
}

struct tally {
	int mismatches;
	char first[512];
};

static void mismatch(struct tally *t, const char *cls, enum path p, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void mismatch(struct tally *t, const char *cls, enum path p, const char *fmt, ...)
{
	char msg[400];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	print_message("  FAIL %-20s %-11s %s\n", cls, paths[p].name, msg);
	if (t->mismatches++ == 0)
		snprintf(t->first, sizeof(t->first), "%s/%s: %s", cls, paths[p].name, msg);
}

static void guarantees_text(const struct run *r, char *buf, size_t size)
{
	size_t used = 0;

	buf[0] = '\0';
	if (!r->have_report) {
		snprintf(buf, size, "(no report)");
		return;
	}
	for (unsigned i = 0; i < SBX_G_COUNT; i++) {
		if (!(r->report.guarantees & (1u << i)))
			continue;
		used += (size_t)snprintf(buf + used, size - used, "%s%s", used ? "," : "",
					 sbx_guarantee_name((enum sbx_guarantee)(1u << i)));
		if (used >= size)
			break;
	}
}

/*
 * The outcome a row wants on this machine. int 0x80 where it has no entry
 * at all (it faults unconfined too, as under some hypervisors: group
 * setup probes it) cannot reach the kernel either way: SIGSEGV, not the
 * filter's SIGSYS.
 */
static const char *want_here(const struct expect *e)
{
	if (!strcmp(e->attempt, "int80_getpid") && int80_native == 0)
		return "SIGSEGV";
	if (!strcmp(e->want, GIT_JIT))
		return W.git_jit_fallback ? "OK" : "JIT-REFUSED";
	return e->want;
}

static const char *layer_here(const struct expect *e)
{
	if (!strcmp(e->attempt, "int80_getpid") && int80_native == 0)
		return "no i386 syscall entry on this machine (unconfined int 0x80: SIGSEGV)";
	if (!strcmp(e->want, GIT_JIT))
		return W.git_jit_fallback ? "git >= 2.40: PCRE2's interpreter when its JIT is refused" :
		       "git < 2.40: dies, naming PCRE2's JIT, when W^X refuses it";
	return e->layer;
}

/* Every line of the run has a row, every row for this path has a line, and
 * each outcome is the contracted one. Prints the per-path table. */
static void check_run(const char *cls, enum path p, const struct run *r, bool outside,
		      struct tally *t)
{
	char g[256];

	guarantees_text(r, g, sizeof(g));
	print_message("[ %s / %s ] level=%s guarantees=%s (%.2f s)\n", cls, paths[p].name,
		      r->have_report ? sbx_level_name(r->report.level) : "-", g, r->secs);
	for (size_t i = 0; i < ARRAY_SIZE(table); i++) {
		const struct expect *e = &table[i];
		const char *got;
		bool ok, absent_ok;

		if (strcmp(e->cls, cls) != 0 || !(e->paths & (1u << p)))
			continue;
		got = line_val(r, e->attempt);
		if (!got) {
			mismatch(t, cls, p, "%s: no outcome (want %s)", e->attempt, e->want);
			continue;
		}
		ok = outcome_in(got, want_here(e));
		absent_ok = e->absent && r->have_report && !report_has(r, e->absent);
		if (e->absent && !e->or_absent) {
			/* Not contained: the outcome, and the report silent. */
			print_message("    %-30s %-26s not contained; %s %s\n", e->attempt, got,
				      e->absent, absent_ok ? "absent from the report" :
				      "LISTED by the report");
			if (!ok)
				mismatch(t, cls, p, "%s: got %s, want %s", e->attempt, got, e->want);
			if (!absent_ok)
				mismatch(t, cls, p, "%s: got %s and the report lists %s",
					 e->attempt, got, e->absent);
		} else if (e->or_absent && !ok) {
			print_message("    %-30s %-26s not contained; %s %s\n", e->attempt, got,
				      e->absent, absent_ok ? "absent from the report" :
				      "LISTED by the report");
			if (!absent_ok)
				mismatch(t, cls, p, "%s: got %s (want %s [%s]) and the report lists %s",
					 e->attempt, got, e->want, e->layer, e->absent);
		} else {
			print_message("    %-30s %-26s %s\n", e->attempt, got, layer_here(e));
			if (!ok)
				mismatch(t, cls, p, "%s: got %s, want %s [%s]", e->attempt, got,
					 want_here(e), layer_here(e));
		}
	}
	for (int i = 0; i < r->n_lines; i++) {
		const char *name = r->lines[i].name;
		bool known = outside || !strcmp(name, "session") || !strcmp(name, "done");

		for (size_t k = 0; !known && k < ARRAY_SIZE(table); k++)
			known = !strcmp(table[k].cls, cls) && (table[k].paths & (1u << p)) &&
				!strcmp(table[k].attempt, name);
		if (!known)
			mismatch(t, cls, p, "%s %s: an attempt the table has no row for", name,
				 r->lines[i].val);
	}
}

/* Every session of profile esc on the full path holds every guarantee but
 * exec_boundary (command = allow) and network_egress (network = deny: it
 * holds network_boundary, which is stronger), at level full. */
static void check_full_report(const char *cls, enum path p, enum profile prof,
			      const struct run *r, struct tally *t)
{
	if (p != FULL || prof != ESC)
		return;
	if (!r->have_report) {
		mismatch(t, cls, p, "no report for session %s", r->sid[0] ? r->sid : "?");
		return;
	}
	for (unsigned i = 0; i < SBX_G_COUNT; i++) {
		uint32_t bit = 1u << i;

		if (bit == SBX_G_EXEC_BOUNDARY || bit == SBX_G_NETWORK_EGRESS)
			continue;
		if (!(r->report.guarantees & bit))
			mismatch(t, cls, p, "report: guarantee %s missing on the full path",
				 sbx_guarantee_name((enum sbx_guarantee)bit));
	}
	if (r->report.level != SBX_LEVEL_FULL)
		mismatch(t, cls, p, "report: level %s, want full", sbx_level_name(r->report.level));
}

static int shell_exit(const struct run *r)
{
	return r->status < 0 ? -1 : sbx_test_status_code(r->status);
}

/* "exit=N", or "killed-by-test" when the deadline passed first. */
static void add_exit_line(struct run *r)
{
	if (r->timed_out)
		add_line(r, "shell_exit", "killed-by-test");
	else
		add_line(r, "shell_exit", "exit=%d", shell_exit(r));
}

/* ---- the classes ---------------------------------------------------------------- */

struct class_def {
	const char *name;
	enum profile profile;
	const char *const *env_extra;
	int timeout_s;
	bool outside;		/* judged from outside: the helper's own lines
				 * are not the contract (it may never run) */
	void (*before)(enum path p);
	void (*after)(enum path p, struct run *r);
	/* A fix may rightly drop a guarantee from the full report here. */
	bool report_may_narrow;
	unsigned paths;		/* 0: the four of every class (PALL) */
};

static void reset_counts(enum path p)
{
	(void)p;
	memset(W.counts, 0, sizeof(*W.counts));
}

static void after_network(enum path p, struct run *r)
{
	(void)p;
	usleep(100 * 1000);	/* a datagram in flight */
	add_line(r, "fixture_tcp_contacts", "%d", __atomic_load_n(&W.counts->tcp, __ATOMIC_SEQ_CST));
	add_line(r, "fixture_udp_received", "%d", __atomic_load_n(&W.counts->udp, __ATOMIC_SEQ_CST));
}

static void after_unix(enum path p, struct run *r)
{
	(void)p;
	usleep(100 * 1000);
	add_line(r, "fixture_stream_connects", "%d", W.counts->stream);
	add_line(r, "fixture_seqpacket_connects", "%d", W.counts->seqpacket);
	add_line(r, "fixture_dgram_received", "%d", W.counts->dgram);
	add_line(r, "fixture_abstract_connects", "%d", W.counts->abstract);
}

/* argv run as the agent, outside any sandbox, with SSH_AUTH_SOCK=sock when
 * sock is set: its exit code (-1: not run), stdout and stderr to null. */
static int run_as_agent(const char *const argv[], const char *sock)
{
	char auth[200], home[160];
	/* SHELL: tmux runs its session's command with it (the agent's
	 * passwd shell is agent-shell). */
	char *env[] = { "PATH=/usr/bin:/bin", "SHELL=/bin/sh", home, auth, NULL };
	int status = 0;
	pid_t pid;

	snprintf(home, sizeof(home), "HOME=%s", W.home);
	snprintf(auth, sizeof(auth), "SSH_AUTH_SOCK=%s", sock ? sock : "");
	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR);

		if (null >= 0) {
			dup2(null, 0);
			dup2(null, 1);
			dup2(null, 2);
		}
		drop_to_agent();
		if (chdir(W.home) != 0)
			_exit(126);
		execve(argv[0], (char *const *)argv, env);
		_exit(127);
	}
	if (waitpid(pid, &status, 0) != pid)
		return -1;
	return sbx_test_status_code(status);
}

static bool path_appears(const char *path)
{
	struct stat st;

	for (int i = 0; i < 300; i++) {
		if (lstat(path, &st) == 0)
			return true;
		usleep(10 * 1000);
	}
	return false;
}

/* Where the agent's own listeners outside the sandbox are. */
static int outsider_paths(char (*path)[108])
{
	return snprintf(path[0], 108, "%s/.esc-outside.sock", W.ws) >= 108 ||
	       snprintf(path[1], 108, "%s", W.out_tmp) >= 108 ||
	       snprintf(path[2], 108, "%s/.esc-outside.sock", W.home) >= 108 ||
	       snprintf(path[3], 108, "%s/esc-outside.sock", W.shm) >= 108 ? -1 : 0;
}

static void unlink_outsider_sockets(void)
{
	char path[4][108];

	if (outsider_paths(path) == 0)
		for (int i = 0; i < 4; i++)
			unlink(path[i]);
}

/* The agent's own listeners outside the sandbox: in the workspace, the
 * host's /tmp, its real home and the host's /dev/shm. Counts connects. */
static void __attribute__((noreturn)) outsider_main(void)
{
	char path[4][108];
	int fds[4];
	int *counter[4];

	drop_to_agent();
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (outsider_paths(path) != 0)
		_exit(1);
	for (int i = 0; i < 4; i++) {
		struct sockaddr_un sa = { .sun_family = AF_UNIX };

		unlink(path[i]);
		memcpy(sa.sun_path, path[i], sizeof(path[i]));
		fds[i] = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		if (fds[i] < 0 || bind(fds[i], (struct sockaddr *)&sa, sizeof(sa)) != 0 ||
		    listen(fds[i], 16) != 0)
			_exit(1);
		counter[i] = &W.counts->sameuid;
	}
	serve(fds, counter, 4);
}

static void before_sameuid(enum path p)
{
	const char *tmux_new[] = { "/usr/bin/tmux", "-S", W.outside_tmux, "new-session", "-d",
				   "-s", "host", "/bin/sleep 300", NULL };
	const char *tmux_try[] = { "/usr/bin/tmux", "-S", W.outside_tmux, "run-shell", "true",
				   NULL };
	const char *add[] = { "/usr/bin/ssh-add", "-q", W.key, NULL };
	const char *list[] = { "/usr/bin/ssh-add", "-l", NULL };

	(void)p;
	reset_counts(p);
	snprintf(W.outside_tmux, sizeof(W.outside_tmux), "%s/.hosttmux", W.ws);
	snprintf(W.outside_agent_sock, sizeof(W.outside_agent_sock), "%s/.hostagent", W.ws);
	fflush(NULL);
	W.outsider = fork();
	if (W.outsider == 0)
		outsider_main();
	W.outside_agent = fork();
	if (W.outside_agent == 0) {
		int null = open("/dev/null", O_RDWR);

		if (null >= 0) {
			dup2(null, 0);
			dup2(null, 1);
			dup2(null, 2);
		}
		drop_to_agent();
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		execl("/usr/bin/ssh-agent", "ssh-agent", "-D", "-a", W.outside_agent_sock,
		      (char *)NULL);
		_exit(127);
	}
	/* The controls, outside: each answers the agent's uid there. */
	W.outside_agent_ok = W.outside_agent > 0 && path_appears(W.outside_agent_sock) &&
			     run_as_agent(add, W.outside_agent_sock) == 0 ?
				     run_as_agent(list, W.outside_agent_sock) : -1;
	W.outside_tmux_ok = run_as_agent(tmux_new, NULL) == 0 ? run_as_agent(tmux_try, NULL) : -1;
	(void)path_appears(W.out_tmp);
}

static void after_sameuid(enum path p, struct run *r)
{
	const char *kill_server[] = { "/usr/bin/tmux", "-S", W.outside_tmux, "kill-server", NULL };
	char pwned[128];
	struct stat st;

	(void)p;
	usleep(100 * 1000);
	add_line(r, "fixture_sameuid_connects", "%d",
		 __atomic_load_n(&W.counts->sameuid, __ATOMIC_SEQ_CST));
	add_line(r, "outside_tmux_control", "exit=%d", W.outside_tmux_ok);
	add_line(r, "outside_sshagent_control", "exit=%d", W.outside_agent_ok);
	snprintf(pwned, sizeof(pwned), "%s/tmux-pwned", W.host);
	add_line(r, "tmux_outside_ran", "%s", stat(pwned, &st) == 0 ? "CREATED" : "ABSENT");
	unlink(pwned);
	(void)run_as_agent(kill_server, NULL);
	reap(&W.outsider);
	reap(&W.outside_agent);
	unlink(W.outside_tmux);
	unlink(W.outside_agent_sock);
	unlink_outsider_sockets();
}

static void after_fs(enum path p, struct run *r)
{
	char *text = NULL;
	size_t len = 0;
	bool intact;

	(void)p;
	intact = sbx_read_file(W.victim, 4096, &text, &len, NULL) == 0 &&
		 strcmp(text, "VICTIM\n") == 0;
	free(text);
	add_line(r, "victim_intact", "%s", intact ? "OK" : "CHANGED");
	if (!intact)
		write_text(W.victim, "VICTIM\n", 0644);
}

/* The agent made a second name for its secret in some earlier session. */
static void before_alias(enum path p)
{
	pid_t pid;

	(void)p;
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		drop_to_agent();
		_exit(link(W.secret, W.alias) == 0 ? 0 : 1);
	}
	waitpid(pid, NULL, 0);
}

static void after_alias(enum path p, struct run *r)
{
	(void)p;
	(void)r;
	unlink(W.alias);
}

static void after_procs_gone(enum path p, struct run *r)
{
	int n = agent_procs_settled();

	(void)p;
	add_line(r, "agent_procs_after", "%d", n);
	/* Whatever was left must not disturb the next run. */
	if (n > 0)
		agent_procs(true);
}

static void after_session_time(enum path p, struct run *r)
{
	/* 3 s + a grace of at most 5 s + 2 s slack. */
	add_line(r, "ended_in_time", "%s", !r->timed_out && r->secs <= 10.0 ? "OK" : "LATE");
	add_exit_line(r);
	after_procs_gone(p, r);
}

static void before_swap(enum path p)
{
	pid_t pid;
	int status = 0;

	(void)p;
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		drop_to_agent();
		if (rename(W.ws, W.ws_away) != 0 || symlink(W.shm, W.ws) != 0)
			_exit(1);
		_exit(0);
	}
	waitpid(pid, &status, 0);
	if (sbx_test_status_code(status) != 0)
		fprintf(stderr, "workspace_swap: the agent could not swap %s\n", W.ws);
}

static void after_swap(enum path p, struct run *r)
{
	struct stat st;
	DIR *d;
	struct dirent *e;
	int entries = 0;

	(void)p;
	add_exit_line(r);
	add_line(r, "stderr_names_workspace", "%s",
		 strstr(r->err, W.ws) || strstr(r->err, W.parent) ? "OK" : "NO");
	add_line(r, "stderr_names_symlink", "%s", strstr(r->err, "symlink") ||
		 strstr(r->err, "symbolic link") ? "OK" : "NO");
	add_line(r, "helper_ran", "%s", line_val(r, "session") ? "YES" : "NO");
	d = opendir(W.shm);
	while (d && (e = readdir(d)) != NULL)
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			entries++;
	if (d)
		closedir(d);
	add_line(r, "shm_untouched", "%s", d && entries == 0 ? "OK" : "CHANGED");
	/* Restore: the link away, the workspace back, /dev/shm empty. */
	if (lstat(W.ws, &st) == 0 && S_ISLNK(st.st_mode))
		unlink(W.ws);
	if (lstat(W.ws_away, &st) == 0)
		rename(W.ws_away, W.ws);
	if (entries) {
		char cmd[128];

		snprintf(cmd, sizeof(cmd), "%s/esc-swapped.txt", W.shm);
		unlink(cmd);
	}
}

/* What the session's report says of W^X (read from its JSON): the
 * memory_wx entry, and whether the seccomp entry names the W^X rules. */
static void after_wx(enum path p, struct run *r)
{
	const struct sbx_report_entry *m = &r->report.entry[SBX_F_MEMORY_WX];
	const char *sec = r->report.entry[SBX_F_SECCOMP].detail;

	(void)p;
	if (!r->have_report) {
		add_line(r, "report_memory_wx", "NO-REPORT");
		return;
	}
	add_line(r, "report_memory_wx", "%s",
		 !m->requested ? (strcmp(m->detail, "anonymous executable memory allowed "
					 "(gate_jit = allow)") ? "NOT-REQUESTED" : "JIT-ALLOWED") :
		 !m->achieved ? "NOT-ACHIEVED" :
		 m->verified ? "VERIFIED" :
		 strstr(m->detail, "an executable stack from the kernel at execve") ?
		 "NOT-VERIFIED-EXEC-STACK" : "NOT-VERIFIED");
	add_line(r, "report_seccomp_wx", "%s",
		 strstr(sec, "no executable anonymous or shared mapping, no SHM_EXEC") ? "LISTED" :
		 "ABSENT");
	add_line(r, "report_seccomp_mprotect", "%s",
		 strstr(sec, "no mprotect to PROT_EXEC") ? "LISTED" : "ABSENT");
}

static const char *const env_dirty[] = {
	"BASH_ENV=/x", "ENV=/y", "FOO=bar", "LD_BIND_NOW=1", NULL,
};

static const struct class_def classes[] = {
	{ .name = "nonnative", .profile = ESC },
	{ .name = "namespaces", .profile = ESC },
	{ .name = "mounts", .profile = ESC },
	{ .name = "kernel_surface", .profile = ESC },
	{ .name = "processes", .profile = ESC },
	{ .name = "tty", .profile = ESC },
	{ .name = "privileged_binaries", .profile = ESC },
	{ .name = "fs_boundary", .profile = ESC, .after = after_fs },
	{ .name = "secret_alias", .profile = ESC, .before = before_alias, .after = after_alias,
	  .report_may_narrow = true },
	{ .name = "gate", .profile = ESCGATE },
	{ .name = "wx", .profile = ESCWX, .after = after_wx, .paths = PWX },
	{ .name = "wx_jit", .profile = ESCJIT, .after = after_wx, .paths = PF | PSF },
	{ .name = "wx_stack", .profile = ESCSTACK, .after = after_wx, .paths = PF | PSF },
	{ .name = "network", .profile = ESC, .before = reset_counts, .after = after_network },
	{ .name = "unix", .profile = ESC, .before = reset_counts, .after = after_unix },
	/* The real home, so a socket in it outside is one the session sees. */
	{ .name = "unix_sameuid", .profile = ESCHOME, .before = before_sameuid,
	  .after = after_sameuid },
	{ .name = "fds_cwd", .profile = ESC },
	{ .name = "env", .profile = ESC, .env_extra = env_dirty },
	{ .name = "rlimits", .profile = ESCLIMITS },
	{ .name = "fork_bomb", .profile = ESCLIMITS, .timeout_s = 20, .after = after_procs_gone },
	{ .name = "tmp_fill", .profile = ESCLIMITS },
	/* 3 s + a grace of at most 5 s + 2 s slack, then the test kills it. */
	{ .name = "session_time", .profile = ESCTIME, .timeout_s = 11, .outside = true,
	  .after = after_session_time },
	{ .name = "leftovers", .profile = ESC, .after = after_procs_gone },
	{ .name = "workspace_swap", .profile = ESC, .outside = true, .before = before_swap,
	  .after = after_swap },
};

/* agent-shell's stderr, but for the warning that no syslog daemon runs. */
static void print_stderr(const struct run *r)
{
	char *copy = strdup(r->err), *save = NULL;

	for (char *l = copy ? strtok_r(copy, "\n", &save) : NULL; l;
	     l = strtok_r(NULL, "\n", &save))
		if (!strstr(l, "no syslog daemon"))
			print_message("  agent-shell stderr: %.300s\n", l);
	free(copy);
}

static void run_class(const char *name)
{
	const struct class_def *c = NULL;
	struct run *r = calloc(1, sizeof(*r));
	struct tally t = { 0 };

	SBX_TEST_REQUIRE_ROOT();
	if (W.landlock_abi < 6 || !W.userns) {
		print_message("[  SKIP    ] the kernel lacks what the full path needs: Landlock ABI %d "
			      "(6 wanted), user namespaces for the agent %s\n", W.landlock_abi,
			      W.userns ? "available" : "unavailable");
		free(r);
		skip();
	}
	assert_non_null(r);
	for (size_t i = 0; i < ARRAY_SIZE(classes); i++)
		if (!strcmp(classes[i].name, name))
			c = &classes[i];
	assert_non_null(c);
	for (enum path p = FULL; p < NPATHS; p++) {
		struct session_spec sp = {
			.profile = c->profile, .path = p,
			.cls = strcmp(name, "workspace_swap") ? name : "touch",
			.env_extra = c->env_extra, .timeout_s = c->timeout_s,
		};

		if (!((c->paths ? c->paths : PALL) & (1u << p)))
			continue;

		if (c->before)
			c->before(p);
		run_session(&sp, r);
		if (c->after)
			c->after(p, r);
		print_stderr(r);
		if (!c->outside && !line_val(r, "done"))
			mismatch(&t, name, p, "the helper did not finish: exit %d%s",
				 shell_exit(r), r->timed_out ? " (timed out)" : "");
		if (c->profile == ESC && !c->outside && !c->report_may_narrow)
			check_full_report(name, p, c->profile, r, &t);
		check_run(name, p, r, c->outside, &t);
		/* Nothing of one run may reach the next. */
		if (agent_procs(false) > 0)
			agent_procs(true);
	}
	free(r);
	if (t.mismatches) {
		print_message("  %s: %d mismatch(es); first: %s\n", name, t.mismatches, t.first);
		fail_msg("%s: %d mismatch(es) with the contract", name, t.mismatches);
	}
}

#define CLASS_TEST(n) \
	static void test_##n(void **state) { (void)state; run_class(#n); }
CLASS_TEST(nonnative)
CLASS_TEST(namespaces)
CLASS_TEST(mounts)
CLASS_TEST(kernel_surface)
CLASS_TEST(processes)
CLASS_TEST(tty)
CLASS_TEST(privileged_binaries)
CLASS_TEST(fs_boundary)
CLASS_TEST(secret_alias)
CLASS_TEST(gate)
CLASS_TEST(wx)
CLASS_TEST(wx_jit)
CLASS_TEST(wx_stack)
CLASS_TEST(network)
CLASS_TEST(unix)
CLASS_TEST(unix_sameuid)
CLASS_TEST(fds_cwd)
CLASS_TEST(env)
CLASS_TEST(rlimits)
CLASS_TEST(fork_bomb)
CLASS_TEST(tmp_fill)
CLASS_TEST(session_time)
CLASS_TEST(leftovers)
CLASS_TEST(workspace_swap)

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_nonnative),
		cmocka_unit_test(test_namespaces),
		cmocka_unit_test(test_mounts),
		cmocka_unit_test(test_kernel_surface),
		cmocka_unit_test(test_processes),
		cmocka_unit_test(test_tty),
		cmocka_unit_test(test_privileged_binaries),
		cmocka_unit_test(test_fs_boundary),
		cmocka_unit_test(test_secret_alias),
		cmocka_unit_test(test_gate),
		cmocka_unit_test(test_wx),
		cmocka_unit_test(test_wx_jit),
		cmocka_unit_test(test_wx_stack),
		cmocka_unit_test(test_network),
		cmocka_unit_test(test_unix),
		cmocka_unit_test(test_unix_sameuid),
		cmocka_unit_test(test_fds_cwd),
		cmocka_unit_test(test_env),
		cmocka_unit_test(test_rlimits),
		cmocka_unit_test(test_fork_bomb),
		cmocka_unit_test(test_tmp_fill),
		cmocka_unit_test(test_session_time),
		cmocka_unit_test(test_leftovers),
		cmocka_unit_test(test_workspace_swap),
	};

	/* SBX_ESCAPE_ONLY=test_gate (a cmocka filter, * allowed) runs one class. */
	if (getenv("SBX_ESCAPE_ONLY"))
		cmocka_set_test_filter(getenv("SBX_ESCAPE_ONLY"));
	return cmocka_run_group_tests_name("escape", tests, group_setup, group_teardown);
}
