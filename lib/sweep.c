/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sweep.c — end the processes of one session: every process of the agent's
 * uid in the mount namespace the PAM stage made for it. Used by the PAM
 * module when a session closes, and by agent-shell --end.
 */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "internal.h"

/*
 * Nothing of a closed session outlives it: every process of the agent's
 * uid still in the mount namespace this session created is killed. (With
 * user namespaces agent-shell's PID-1 init already ended its tree; this
 * catches what runs without them, e.g. a setsid'ed daemon.) The namespace
 * inode makes it exact: other sessions of the same account have their
 * own. Each process costs one stat of its namespace link; only one in the
 * session's namespace is opened as a pidfd, which pins it between the
 * check and the kill, and checked again through it (the pid may name
 * another process since the stat): its uid, then its namespace.
 *
 * One pass over /proc is not enough: a process that keeps forking can make
 * a child after the scan went past the child's pid (seen: 2 of 3 such
 * children survived one pass), and a survivor also drops out of the
 * max_sessions count. So passes repeat until one finds nothing alive (a
 * killed process loses its namespace links as it exits), at most
 * SWEEP_PASSES times.
 */
#define SWEEP_PASSES 100

int sbx_proc_mntns(const char *pid, unsigned long *ino)
{
	char path[96];
	struct dirent *de;
	struct stat st;
	DIR *d;
	int e;

	snprintf(path, sizeof(path), "/proc/%.20s/ns/mnt", pid);
	if (stat(path, &st) == 0) {
		*ino = (unsigned long)st.st_ino;
		return 0;
	}
	e = errno ? errno : EIO;
	/* A leader that called exit(2) while its threads run on has no
	 * namespace links of its own: its threads have. (All threads of a
	 * process are in one mount namespace: neither unshare nor setns
	 * moves a thread that shares its filesystem context.) */
	if (e != ENOENT)
		return -e;
	snprintf(path, sizeof(path), "/proc/%.20s/task", pid);
	d = opendir(path);
	if (!d)
		return -ENOENT;
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%.20s/task/%.20s/ns/mnt", pid, de->d_name);
		if (stat(path, &st) == 0) {
			closedir(d);
			*ino = (unsigned long)st.st_ino;
			return 0;
		}
	}
	closedir(d);
	return -ENOENT;
}

/* Is pid in the mount namespace mntns now? */
static bool in_mntns(const char *pid, unsigned long mntns)
{
	unsigned long ino = 0;

	return sbx_proc_mntns(pid, &ino) == 0 && ino == mntns;
}

/* The processes a sweep has killed, so that one still dying when the next
 * pass looks (its namespace links go late in its exit: seen under a
 * sanitizer, where a killed process took longer than the pause between
 * passes) is signalled again but counted once. Past the room it counts
 * again: only the log's number can be off, never who is killed. */
struct sweep_killed {
	pid_t pid[64];
	unsigned n, total;
};

static void note_killed(struct sweep_killed *k, pid_t pid)
{
	for (unsigned i = 0; i < k->n; i++)
		if (k->pid[i] == pid)
			return;
	if (k->n < ARRAY_SIZE(k->pid))
		k->pid[k->n++] = pid;
	k->total++;
}

/* One pass: how many processes it signalled (new or still dying). */
static unsigned sweep_pass(uid_t uid, unsigned long mntns, struct sweep_killed *k)
{
	long self = (long)getpid();
	struct dirent *de;
	unsigned signalled = 0;
	DIR *d;

	d = opendir("/proc");
	if (!d)
		return 0;
	while ((de = readdir(d)) != NULL) {
		int pidfd;
		long pid;

		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		pid = strtol(de->d_name, NULL, 10);
		if (pid <= 1 || pid == self || !in_mntns(de->d_name, mntns))
			continue;
		pidfd = (int)syscall(SYS_pidfd_open, (pid_t)pid, 0);
		if (pidfd < 0)
			continue;
		if (sbx_proc_status_number((pid_t)pid, "Uid") == (long)uid &&
		    in_mntns(de->d_name, mntns) &&
		    syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0) == 0) {
			signalled++;
			note_killed(k, (pid_t)pid);
		}
		close(pidfd);
	}
	closedir(d);
	return signalled;
}

unsigned sbx_session_sweep(uid_t uid, unsigned long mntns, unsigned *passes)
{
	struct sweep_killed k = { .n = 0 };
	unsigned i;

	*passes = 0;
	if (uid == 0 || mntns == 0)
		return 0;
	for (i = 0; i < SWEEP_PASSES; i++) {
		unsigned n = sweep_pass(uid, mntns, &k);

		(*passes)++;
		if (n == 0)
			break;
		/* Let the killed ones leave their namespace before looking again. */
		usleep(2000);
	}
	return k.total;
}

/* One process as the scan saw it. */
struct proc_seen {
	pid_t pid, ppid;
	bool in_session;
};

/*
 * The session's tree: the agent's processes in the session's mount
 * namespace, and every descendant of theirs of the same uid. The sandbox's
 * own processes live in mount namespaces of their own (agent-shell's user
 * namespace), reached only through the parent links.
 */
int sbx_session_procs(uid_t uid, unsigned long mntns, pid_t *out, size_t max, size_t *n_out)
{
	struct proc_seen *seen = NULL;
	size_t n = 0, cap = 0, found = 0;
	struct dirent *de;
	bool grew;
	DIR *d;

	*n_out = 0;
	if (uid == 0 || mntns == 0)
		return -EINVAL;
	d = opendir("/proc");
	if (!d)
		return -errno;
	while ((de = readdir(d)) != NULL) {
		long pid, ppid;

		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		pid = strtol(de->d_name, NULL, 10);
		if (pid <= 1 || pid == (long)getpid() ||
		    sbx_proc_status_number((pid_t)pid, "Uid") != (long)uid)
			continue;
		ppid = sbx_proc_status_number((pid_t)pid, "PPid");
		if (ppid < 0)
			continue;	/* gone since readdir */
		if (n == cap) {
			struct proc_seen *bigger;

			cap = cap ? cap * 2 : 64;
			bigger = realloc(seen, cap * sizeof(*seen));
			if (!bigger) {
				closedir(d);
				free(seen);
				return -ENOMEM;
			}
			seen = bigger;
		}
		seen[n].pid = (pid_t)pid;
		seen[n].ppid = (pid_t)ppid;
		seen[n].in_session = in_mntns(de->d_name, mntns);
		n++;
	}
	closedir(d);
	/* Descendants: a fixed point over the parent links (trees are shallow). */
	do {
		grew = false;
		for (size_t i = 0; i < n; i++) {
			if (seen[i].in_session)
				continue;
			for (size_t j = 0; j < n; j++) {
				if (seen[j].in_session && seen[j].pid == seen[i].ppid) {
					seen[i].in_session = true;
					grew = true;
					break;
				}
			}
		}
	} while (grew);
	for (size_t i = 0; i < n; i++) {
		if (!seen[i].in_session)
			continue;
		if (found < max)
			out[found] = seen[i].pid;
		found++;
	}
	free(seen);
	*n_out = found;
	return 0;
}

unsigned sbx_session_end(uid_t uid, unsigned long mntns, unsigned *passes)
{
	struct sweep_killed killed = { .n = 0 };
	pid_t pids[1024];
	unsigned i;
	size_t n;

	*passes = 0;
	for (i = 0; i < SWEEP_PASSES; i++) {
		if (sbx_session_procs(uid, mntns, pids, ARRAY_SIZE(pids), &n) != 0 || n == 0)
			break;
		(*passes)++;
		for (size_t k = 0; k < n && k < ARRAY_SIZE(pids); k++) {
			/* The pidfd pins the process: the uid read after it
			 * opened names the same process the signal reaches. */
			int pidfd = (int)syscall(SYS_pidfd_open, pids[k], 0);

			if (pidfd < 0)
				continue;
			if (sbx_proc_status_number(pids[k], "Uid") == (long)uid &&
			    syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0) == 0)
				note_killed(&killed, pids[k]);
			close(pidfd);
		}
		usleep(5000);
	}
	return killed.total;
}
