/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cgroup.c — limits on the whole session: memory_max, pids_max, cpu_max.
 *
 * rlimits bound each process; an agent with nproc processes, each under
 * its "as", can still take all of the host's memory. The session's cgroup
 * bounds the session as a whole. Two halves (docs/design.md section 4.6):
 *
 *  - The PAM stage (root) asks systemd to put the profile's values on the
 *    login's logind scope (session-N.scope, where pam_systemd placed the
 *    process). systemd owns that cgroup and writes its own values back on
 *    every reload, so writing the files behind its back would not last.
 *  - agent-shell reads back what is in force on its own cgroup: the lowest
 *    value on the way up to the root. The report says achieved only when
 *    the kernel's files say so, whoever set them.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "internal.h"

#define CG_MASK ((1u << SBX_LIMIT_MEMORY_MAX) | (1u << SBX_LIMIT_PIDS_MAX) | \
		 (1u << SBX_LIMIT_CPU_MAX))
#define SYSTEMCTL_TIMEOUT_MS 10000

bool sbx_cgroup_requested(const struct sbx_profile *p)
{
	return (p->limits.set_mask & CG_MASK) != 0;
}

static bool wants(const struct sbx_profile *p, enum sbx_limit l)
{
	return (p->limits.set_mask & (1u << l)) != 0;
}

/* The calling process's cgroup v2 path ("0::/a/b"), "/" for the root. */
static int self_cgroup(char *out, size_t size)
{
	char *buf = NULL, *line, *save = NULL;
	size_t len;
	int r = -ENOENT;

	if (sbx_read_file("/proc/self/cgroup", 1 << 16, &buf, &len, NULL) != 0)
		return -EIO;
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (strncmp(line, "0::", 3) == 0) {
			r = sbx_strlcpy(out, size, line + 3) ? -ENAMETOOLONG : 0;
			break;
		}
	}
	free(buf);
	return r;
}

/* Where cgroup v2 is mounted in this mount namespace: the mount point of
 * the first cgroup2 entry of the mount table. */
static int cgroup2_mount(char *out, size_t size)
{
	struct sbx_mount_entry *m = malloc(sizeof(*m));
	const char *pos, *end;
	char *table = NULL;
	size_t len;
	int r;

	if (!m)
		return -ENOMEM;
	r = sbx_read_file("/proc/self/mountinfo", 4u << 20, &table, &len, NULL);
	if (r == 0) {
		pos = table;
		end = table + len;
		r = -ENOENT;
		while (r == -ENOENT) {
			int got = sbx_mountinfo_next(&pos, end, m);

			if (got == 0)
				break;
			if (got > 0 && strcmp(m->fstype, "cgroup2") == 0)
				r = sbx_strlcpy(out, size, m->point) ? -ENAMETOOLONG : 0;
		}
	}
	free(table);
	free(m);
	return r;
}

/* One cgroup file's first line, or -errno. */
static int read_line(const char *dir, const char *file, char *out, size_t size)
{
	char path[SBX_PATH_MAX + 64];
	int fd;
	ssize_t n;

	if (sbx_snprintf(path, sizeof(path), "%s/%s", dir, file) != 0)
		return -ENAMETOOLONG;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	n = read(fd, out, size - 1);
	close(fd);
	if (n < 0)
		return -errno;
	out[n] = '\0';
	out[strcspn(out, "\n")] = '\0';
	return 0;
}

/* A limit in force: the lowest on the way from the session's cgroup to
 * the root, and whether any level had the file (the controller). */
struct effective {
	bool found;
	uint64_t value;		/* UINT64_MAX: "max" everywhere */
};

static void take(struct effective *e, uint64_t v)
{
	if (!e->found || v < e->value)
		e->value = v;
	e->found = true;
}

/* cpu.max "QUOTA PERIOD" as percent of one CPU, rounded up; "max" is none. */
static bool cpu_percent(const char *s, uint64_t *pct)
{
	unsigned long long quota, period;

	if (strncmp(s, "max", 3) == 0) {
		*pct = UINT64_MAX;
		return true;
	}
	char *end;

	errno = 0;
	quota = strtoull(s, &end, 10);
	if (errno || end == s || *end != ' ')
		return false;
	period = strtoull(end + 1, &end, 10);
	if (errno || period == 0 || quota > UINT64_MAX / 100)
		return false;
	*pct = (quota * 100 + period - 1) / period;
	return true;
}

static void read_level(const char *dir, struct effective e[4])
{
	char v[128];
	uint64_t n;

	if (read_line(dir, "memory.max", v, sizeof(v)) == 0)
		take(&e[0], strcmp(v, "max") == 0 ? UINT64_MAX : strtoull(v, NULL, 10));
	if (read_line(dir, "pids.max", v, sizeof(v)) == 0)
		take(&e[1], strcmp(v, "max") == 0 ? UINT64_MAX : strtoull(v, NULL, 10));
	if (read_line(dir, "cpu.max", v, sizeof(v)) == 0 && cpu_percent(v, &n))
		take(&e[2], n);
	if (read_line(dir, "memory.swap.max", v, sizeof(v)) == 0)
		take(&e[3], strcmp(v, "max") == 0 ? UINT64_MAX : strtoull(v, NULL, 10));
}

static const struct {
	enum sbx_limit limit;
	const char *file;
} cg_files[3] = {
	{ SBX_LIMIT_MEMORY_MAX, "memory.max" },
	{ SBX_LIMIT_PIDS_MAX, "pids.max" },
	{ SBX_LIMIT_CPU_MAX, "cpu.max" },
};

static void put_value(struct sbx_sbuf *b, unsigned i, uint64_t v)
{
	if (v == UINT64_MAX)
		sbx_sbuf_str(b, "max");
	else if (i == 2)
		sbx_sbuf_fmt(b, "%" PRIu64 "%%", v);
	else
		sbx_sbuf_fmt(b, "%" PRIu64, v);
}

/*
 * Read back the session's limits and record the cgroup_limits entry: held
 * when every requested limit is in force at or below the profile's value.
 * Called by the outer process before the sandbox's cgroup namespace.
 */
void sbx_cgroup_report(const struct sbx_profile *p, struct sbx_report *r)
{
	struct effective e[4] = { { 0 } };	/* memory, pids, cpu, swap */
	char mnt[SBX_PATH_MAX], rel[SBX_PATH_MAX], dir[2 * SBX_PATH_MAX], detail[256];
	struct sbx_sbuf b;
	bool held = true;
	size_t len;

	if (!sbx_cgroup_requested(p))
		return;
	if (cgroup2_mount(mnt, sizeof(mnt)) != 0) {
		sbx_report_set(r, SBX_F_CGROUP_LIMITS, false, false,
			       "no cgroup v2 mounted: only rlimits bound this session");
		return;
	}
	if (self_cgroup(rel, sizeof(rel)) != 0) {
		sbx_report_set(r, SBX_F_CGROUP_LIMITS, false, false,
			       "this process is in no cgroup v2 (/proc/self/cgroup has no 0:: line)");
		return;
	}
	/* From the session's cgroup up to the root, the lowest value wins. */
	if (sbx_snprintf(dir, sizeof(dir), "%s%s", mnt, strcmp(rel, "/") ? rel : "") != 0) {
		sbx_report_set(r, SBX_F_CGROUP_LIMITS, false, false, "cgroup path too long");
		return;
	}
	len = strlen(mnt);
	for (;;) {
		char *slash;

		read_level(dir, e);
		if (strlen(dir) <= len)
			break;
		slash = strrchr(dir + len, '/');
		if (!slash)
			break;
		*slash = '\0';
	}
	sbx_sbuf_init(&b, detail, sizeof(detail));
	for (unsigned i = 0; i < 3; i++) {
		enum sbx_limit l = cg_files[i].limit;

		if (!wants(p, l))
			continue;
		if (!e[i].found) {
			held = false;
			sbx_sbuf_fmt(&b, "%s%s: no such file on the session's cgroup v2 path "
				     "(controller not in cgroup v2 here)", b.len ? "; " : "",
				     cg_files[i].file);
			continue;
		}
		if (e[i].value > p->limits.value[l])
			held = false;
		sbx_sbuf_fmt(&b, "%s%s ", b.len ? ", " : "", cg_files[i].file);
		put_value(&b, i, e[i].value);
		if (e[i].value > p->limits.value[l]) {
			sbx_sbuf_str(&b, " > ");
			put_value(&b, i, p->limits.value[l]);
		}
	}
	/* memory_max bounds the session's swap too (none): else RAM up to
	 * memory.max plus all of the host's swap. */
	if (wants(p, SBX_LIMIT_MEMORY_MAX)) {
		if (!e[3].found || e[3].value != 0)
			held = false;
		if (!e[3].found)
			sbx_sbuf_str(&b, "; memory.swap.max: no such file (swap not accounted)");
		else if (e[3].value != 0)
			sbx_sbuf_str(&b, ", memory.swap.max not 0");
		else
			sbx_sbuf_str(&b, ", memory.swap.max 0");
	}
	sbx_sbuf_fmt(&b, " at %s", rel);
	if (!held)
		sbx_sbuf_str(&b, "; the PAM stage sets them on the logind session scope");
	sbx_report_set(r, SBX_F_CGROUP_LIMITS, held, held, "%s", detail);
}

/* ---- the PAM stage ---------------------------------------------------------- */

/* Run systemctl with argv; its first output line into msg. 0 on exit 0. */
static int run_systemctl(char *const argv[], char *msg, size_t size)
{
	static char *const envp[] = { (char *)"PATH=/usr/sbin:/usr/bin:/sbin:/bin",
				      (char *)"LANG=C", NULL };
	char *out = NULL;
	int status = 0, r;

	msg[0] = '\0';
	r = sbx_run_capture(argv, envp, NULL, SYSTEMCTL_TIMEOUT_MS, 64 * 1024, &out, &status);
	if (r == -ETIMEDOUT)
		snprintf(msg, size, "systemctl did not answer within %d s",
			 SYSTEMCTL_TIMEOUT_MS / 1000);
	if (r)
		return r;
	snprintf(msg, size, "%.*s", (int)strcspn(out, "\n"), out);
	free(out);
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -EIO;
}

/*
 * The PAM stage: put the profile's memory_max, pids_max and cpu_max on the
 * login's logind scope through systemd (systemctl set-property --runtime).
 * unit receives the scope's name. -ENOTSUP: systemd does not manage this
 * host; -ENOENT: the login is not in a session scope (no pam_systemd
 * before this module); -EIO: systemctl refused (err says why).
 */
int sbx_cgroup_session_apply(const struct sbx_profile *p, char *unit, size_t unit_size,
			     struct sbx_error *err)
{
	char rel[SBX_PATH_MAX], props[4][64], msg[256], systemctl[32];
	char *argv[10];
	const char *base;
	struct stat st;
	size_t n = 0;
	int r;

	unit[0] = '\0';
	if (!sbx_cgroup_requested(p))
		return 0;
	if (lstat("/run/systemd/system", &st) != 0 || !S_ISDIR(st.st_mode))
		return sbx_error_set(err, ENOTSUP, "systemd does not manage this host: "
				     "memory_max, pids_max and cpu_max need its session scope");
	r = self_cgroup(rel, sizeof(rel));
	if (r)
		return sbx_error_set(err, -r, "/proc/self/cgroup: no cgroup v2 path: %s",
				     strerror(-r));
	base = strrchr(rel, '/');
	base = base ? base + 1 : rel;
	if (strncmp(base, "session-", 8) != 0 || strlen(base) < 15 ||
	    strcmp(base + strlen(base) - 6, ".scope") != 0 || strpbrk(base, " \t\\"))
		return sbx_error_set(err, ENOENT, "the login is in %s, not a logind session "
				     "scope: put pam_systemd before pam_agent_sandbox.so in this "
				     "PAM stack", rel);
	if (sbx_strlcpy(unit, unit_size, base) != 0)
		return sbx_error_set(err, ENAMETOOLONG, "scope name too long");
	snprintf(systemctl, sizeof(systemctl), "%s",
		 access("/usr/bin/systemctl", X_OK) == 0 ? "/usr/bin/systemctl" : "/bin/systemctl");
	argv[n++] = systemctl;
	argv[n++] = (char *)"set-property";
	argv[n++] = (char *)"--runtime";
	argv[n++] = unit;
	if (wants(p, SBX_LIMIT_MEMORY_MAX)) {
		snprintf(props[0], sizeof(props[0]), "MemoryMax=%" PRIu64,
			 p->limits.value[SBX_LIMIT_MEMORY_MAX]);
		argv[n++] = props[0];
		/* No swap: memory_max is the session's memory, not its RAM. */
		snprintf(props[3], sizeof(props[3]), "MemorySwapMax=0");
		argv[n++] = props[3];
	}
	if (wants(p, SBX_LIMIT_PIDS_MAX)) {
		snprintf(props[1], sizeof(props[1]), "TasksMax=%" PRIu64,
			 p->limits.value[SBX_LIMIT_PIDS_MAX]);
		argv[n++] = props[1];
	}
	if (wants(p, SBX_LIMIT_CPU_MAX)) {
		snprintf(props[2], sizeof(props[2]), "CPUQuota=%" PRIu64 "%%",
			 p->limits.value[SBX_LIMIT_CPU_MAX]);
		argv[n++] = props[2];
	}
	argv[n] = NULL;
	r = run_systemctl(argv, msg, sizeof(msg));
	if (r)
		return sbx_error_set(err, -r, "systemctl set-property %s: %s", unit,
				     msg[0] ? msg : strerror(-r));
	return 0;
}
