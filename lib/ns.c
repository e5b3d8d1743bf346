/* SPDX-License-Identifier: BSD-3-Clause */
/* Namespaces for the unprivileged stage: user, mount, pid, net, ipc, uts, cgroup. */
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "internal.h"

static int write_proc_file(const char *path, const char *text, struct sbx_error *err)
{
	size_t len = strlen(text);
	ssize_t n;
	int fd, r = 0;

	fd = open(path, O_WRONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		int e = errno;

		/* After a uid change without exec, /proc/self is root-owned. */
		return sbx_error_set(err, e, "open(%s): %s%s", path, strerror(e),
				     e == EACCES && prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) == 0 ?
				     " (process not dumpable)" : "");
	}
	/* uid_map and friends must be written in one write() call. */
	n = write(fd, text, len);
	if (n < 0)
		r = sbx_error_set(err, errno, "write(%s, \"%.*s\"): %s", path,
				  (int)strcspn(text, "\n"), text, strerror(errno));
	else if ((size_t)n != len)
		r = sbx_error_set(err, EIO, "write(%s): short write", path);
	if (close(fd) != 0 && r == 0)
		r = sbx_error_set(err, errno, "close(%s): %s", path, strerror(errno));
	return r;
}

int sbx_userns_write_maps(uid_t uid, gid_t gid, uid_t outer_uid, gid_t outer_gid,
			  struct sbx_error *err)
{
	char map[64];
	int r;

	/* "deny" first: an unprivileged writer may not map gids otherwise, and
	 * setgroups() in the namespace could drop a group used as a negative
	 * ACL on the host (CVE-2014-8989). */
	r = write_proc_file("/proc/self/setgroups", "deny", err);
	if (r < 0)
		return r;
	/* One entry each, own id to itself (bwrap's default): the agent is
	 * never uid 0 inside, and no other host id exists in here. */
	r = sbx_snprintf(map, sizeof(map), "%u %u 1\n", (unsigned)uid, (unsigned)outer_uid);
	if (r == 0)
		r = write_proc_file("/proc/self/uid_map", map, err);
	if (r < 0)
		return r;
	r = sbx_snprintf(map, sizeof(map), "%u %u 1\n", (unsigned)gid, (unsigned)outer_gid);
	if (r == 0)
		r = write_proc_file("/proc/self/gid_map", map, err);
	return r;
}

int sbx_userns_enter(uid_t uid, gid_t gid, struct sbx_error *err)
{
	uid_t outer_uid = geteuid();
	gid_t outer_gid = getegid();

	if (unshare(CLONE_NEWUSER) != 0)
		return sbx_error_set(err, errno, "unshare(user): %s", strerror(errno));
	return sbx_userns_write_maps(uid, gid, outer_uid, outer_gid, err);
}

static const struct {
	int flag;
	const char *name;
} ns_names[] = {
	{ CLONE_NEWUSER, "user" },
	{ CLONE_NEWNS, "mount" },
	{ CLONE_NEWPID, "pid" },
	{ CLONE_NEWNET, "net" },
	{ CLONE_NEWIPC, "ipc" },
	{ CLONE_NEWUTS, "uts" },
	{ CLONE_NEWCGROUP, "cgroup" },
	{ CLONE_NEWTIME, "time" },
};

/* "user,mount,pid" for the flags; -EINVAL (message set) when one of them
 * is not a namespace flag. */
static int ns_flag_names(int clone_flags, const char *call, char *names, size_t size,
			 struct sbx_error *err)
{
	int known = 0;
	size_t i;

	names[0] = '\0';
	for (i = 0; i < ARRAY_SIZE(ns_names); i++) {
		if (!(clone_flags & ns_names[i].flag))
			continue;
		known |= ns_names[i].flag;
		if (names[0])
			strncat(names, ",", size - strlen(names) - 1);
		strncat(names, ns_names[i].name, size - strlen(names) - 1);
	}
	if (clone_flags == 0 || (clone_flags & ~known))
		return sbx_error_set(err, EINVAL, "%s(0x%x): not only namespace flags", call,
				     (unsigned)clone_flags);
	return 0;
}

int sbx_ns_unshare(int clone_flags, struct sbx_error *err)
{
	char names[96];
	int r = ns_flag_names(clone_flags, "unshare", names, sizeof(names), err);

	if (r)
		return r;
	if (unshare(clone_flags) != 0)
		return sbx_error_set(err, errno, "unshare(%s): %s", names, strerror(errno));
	return 0;
}

int sbx_ns_clone(int clone_flags, pid_t *pid, struct sbx_error *err)
{
	char names[96];
	long r = ns_flag_names(clone_flags, "clone", names, sizeof(names), err);

	if (r)
		return (int)r;
	/* No CLONE_VM and no stack: the child goes on from here on its copy
	 * of this stack, as after fork(). */
	r = syscall(SYS_clone, (unsigned long)clone_flags | SIGCHLD, NULL, NULL, NULL, NULL);
	if (r < 0)
		return sbx_error_set(err, errno, "clone(%s): %s", names, strerror(errno));
	*pid = (pid_t)r;
	return 0;
}

int sbx_net_lo_up(struct sbx_error *err)
{
	struct ifreq ifr;
	int fd, r = 0;

	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return sbx_error_set(err, errno, "socket(AF_INET, SOCK_DGRAM): %s",
				     strerror(errno));
	memset(&ifr, 0, sizeof(ifr));
	sbx_strlcpy(ifr.ifr_name, sizeof(ifr.ifr_name), "lo");
	if (ioctl(fd, SIOCGIFFLAGS, &ifr) != 0) {
		r = sbx_error_set(err, errno, "ioctl(lo, SIOCGIFFLAGS): %s", strerror(errno));
		goto out;
	}
	if (ifr.ifr_flags & IFF_UP)
		goto out;
	ifr.ifr_flags |= IFF_UP;
	/* Needs CAP_NET_ADMIN in the user namespace owning this netns. */
	if (ioctl(fd, SIOCSIFFLAGS, &ifr) != 0)
		r = sbx_error_set(err, errno, "ioctl(lo, SIOCSIFFLAGS, IFF_UP): %s",
				  strerror(errno));
out:
	close(fd);
	return r;
}

unsigned long sbx_ns_inode(const char *name)
{
	char path[64];
	struct stat st;

	if (!name || !name[0] || strchr(name, '/') ||
	    sbx_snprintf(path, sizeof(path), "/proc/self/ns/%s", name) != 0)
		return 0;
	if (stat(path, &st) != 0)
		return 0;
	return (unsigned long)st.st_ino;
}
