/* SPDX-License-Identifier: BSD-3-Clause */
/* The one decision: what a profile gets on this kernel, and what its report is expected to say. */
#include <errno.h>
#include <string.h>

#include "internal.h"

/* Landlock ABIs that bring a right (docs/design.md, "Kernel facts"). */
#define ABI_TCP 4
#define ABI_IOCTL_DEV 5
#define ABI_SCOPES 6

int sbx_decide(const struct sbx_profile *p, const struct sbx_probe *probe,
	       const struct sbx_decide_opts *opts, struct sbx_decision *d,
	       struct sbx_error *err)
{
	int limit = opts ? opts->landlock_abi_limit : 0;
	bool private_netns = opts && opts->private_netns;

	memset(d, 0, sizeof(*d));
	if (p->isolation != SBX_ISOLATION_SANDBOXED)
		return sbx_error_set(err, EPERM,
				     "profile %s is unconfined; agent-sandbox only runs sandboxed "
				     "sessions", p->name);
	/* The filter has no fallback: every session loads it. */
	if (!probe->seccomp)
		return sbx_error_set(err, EOPNOTSUPP,
				     "seccomp: the kernel has no seccomp filter mode "
				     "(CONFIG_SECCOMP_FILTER); no session runs without it");

	/* The mount view needs mount_setattr(2) (Linux 5.12) and has no
	 * fallback: without it, take the degraded path (no namespaces)
	 * rather than refuse every session. */
	d->ns = probe->userns && probe->mountns && probe->pidns && probe->mount_setattr;
	if (!d->ns)
		sbx_strlcpy(d->ns_why, sizeof(d->ns_why),
			    !probe->userns ? (probe->userns_why[0] ? probe->userns_why :
					      "user namespaces unavailable to this uid") :
			    !probe->mount_setattr ?
			    "mount_setattr(2) unavailable (Linux < 5.12): no mount view" :
			    "mount or pid namespaces unavailable to this uid");
	d->network_denied = p->network != SBX_ACCESS_ALLOW;
	d->netns = d->ns && d->network_denied && probe->netns;
	if (d->ns && d->network_denied && !probe->netns)
		sbx_strlcpy(d->ns_why, sizeof(d->ns_why), "network namespaces unavailable");
	d->ipcns = d->ns && probe->ipcns;
	d->utsns = d->ns && probe->utsns;
	d->cgroupns = d->ns && probe->cgroupns;
	d->cgroup2 = probe->cgroup2 && probe->cgroup2_limits;
	d->caps_bounding = d->ns;
	d->host_pids = !d->ns;

	d->landlock_abi = probe->landlock_abi > 0 ? probe->landlock_abi : 0;
	if (limit > 0 && limit < d->landlock_abi)
		d->landlock_abi = limit;
	sbx_strlcpy(d->landlock_why, sizeof(d->landlock_why),
		    probe->landlock_why[0] ? probe->landlock_why : "kernel reports no ABI");
	/* With a private network namespace the sandbox's own loopback stays
	 * usable; Landlock TCP rules have no address, so they are only the
	 * boundary when there is no namespace. */
	d->landlock_tcp = d->network_denied && !d->netns;
	/* Landlock keeps /proc read-only for the program (writes to
	 * /proc/<pid>/mem rewrite code pages); without it the mount does. */
	d->proc_readonly = d->landlock_abi == 0;
	/* Without a mount view nothing mounts a tmpfs at $HOME: a home that
	 * does not exist on the host must not end the session in Landlock's
	 * "mandatory rule" check. */
	d->home_rule_optional = !d->ns;

	/* With a mount view, secrets are masked. Landlock cannot carve a
	 * hole in an allowed tree except by granting each sibling (which
	 * would also stop the agent creating files next to a secret), so
	 * the holes are used only when there is no mount view. */
	d->deny_read = SBX_DENY_READ_NONE;
	if (p->n_deny_read > 0 && d->ns)
		d->deny_read = SBX_DENY_READ_MASKS;
	else if (p->n_deny_read > 0 && d->landlock_abi > 0)
		d->deny_read = SBX_DENY_READ_LANDLOCK;

	/* Host daemons' pathname sockets are part of the network. Abstract
	 * names are the host's unless some network namespace is private:
	 * bind() is then decided outside the sandbox too. */
	d->unix_mediated = d->network_denied;
	d->unix_bind_mediated = d->network_denied && !(d->netns || private_netns);
	d->inet_denied = d->network_denied && !d->netns;

	/* network = proxy: the bridge listens on the sandbox's own loopback;
	 * without a network namespace of the sandbox's, inet sockets are
	 * refused altogether (inet_denied) and nothing could reach it. */
	d->egress = p->network == SBX_NETWORK_PROXY && d->netns;
	if (p->network == SBX_NETWORK_PROXY && !d->egress)
		snprintf(d->egress_why, sizeof(d->egress_why),
			 "no egress: the bridge needs the sandbox's own network namespace (%s); "
			 "the session reaches only its private loopback",
			 d->ns_why[0] ? d->ns_why : "network namespaces unavailable");

	/* The gate holds only where the host can be made noexec (ld.so maps
	 * programs, it does not execve them). */
	if (p->command == SBX_ACCESS_ALLOW)
		d->gate = SBX_GATE_NONE;
	else if (p->command == SBX_ACCESS_DENY)
		d->gate = SBX_GATE_REFUSE_ALL;
	else if (d->ns)
		d->gate = SBX_GATE_MOUNT_VIEW;
	else if (d->landlock_abi > 0)
		d->gate = SBX_GATE_LANDLOCK;
	else
		d->gate = SBX_GATE_SHELL;
	/* Memory W^X under the gate unless the profile lets programs JIT:
	 * the kernel's MDWE (6.3) with the filter's rules for what it leaves
	 * open, else the filter alone. It needs no namespace: every path of
	 * a gated session gets it. */
	if (d->gate == SBX_GATE_NONE || p->gate_jit == SBX_ACCESS_ALLOW)
		d->wx = SBX_WX_NONE;
	else
		d->wx = probe->mdwe ? SBX_WX_MDWE : SBX_WX_SECCOMP;
	/* A write through /proc/self/mem reaches pages the mapping does not
	 * let the program write (FOLL_FORCE), executable ones included, MDWE
	 * or not. Landlock keeps /proc read-only, and so does the mount
	 * view's own /proc without it; with neither, W^X is partial. */
	d->wx_partial = d->wx != SBX_WX_NONE && !d->ns && d->landlock_abi == 0;
	return 0;
}

static void expect(struct sbx_report *r, enum sbx_feature f, bool achieved, const char *why)
{
	if (r->entry[f].requested)
		sbx_report_set(r, f, achieved, achieved, "%s", achieved ? "expected" : why);
}

static void expect_landlock(const struct sbx_decision *d, struct sbx_report *r)
{
	char why[320];
	int abi = d->landlock_abi;

	if (abi == 0) {
		snprintf(why, sizeof(why), "Landlock unavailable: %s", d->landlock_why);
		expect(r, SBX_F_LANDLOCK_FS, false, why);
		expect(r, SBX_F_LANDLOCK_NET, false, why);
		expect(r, SBX_F_LANDLOCK_IOCTL, false, why);
		expect(r, SBX_F_LANDLOCK_SCOPE, false, why);
		return;
	}
	expect(r, SBX_F_LANDLOCK_FS, true, NULL);
	snprintf(why, sizeof(why), "kernel Landlock ABI %d < %d: no TCP rules", abi, ABI_TCP);
	expect(r, SBX_F_LANDLOCK_NET, abi >= ABI_TCP, why);
	snprintf(why, sizeof(why), "kernel Landlock ABI %d < %d: IOCTL_DEV unavailable", abi,
		 ABI_IOCTL_DEV);
	expect(r, SBX_F_LANDLOCK_IOCTL, abi >= ABI_IOCTL_DEV, why);
	snprintf(why, sizeof(why), "kernel Landlock ABI %d < %d: no scopes", abi, ABI_SCOPES);
	expect(r, SBX_F_LANDLOCK_SCOPE, abi >= ABI_SCOPES, why);
}

void sbx_decision_expect(const struct sbx_decision *d, struct sbx_report *r)
{
	static const enum sbx_feature ns_features[] = {
		SBX_F_USERNS, SBX_F_PIDNS, SBX_F_MOUNTNS, SBX_F_MOUNT_VIEW, SBX_F_HOME,
	};

	for (size_t i = 0; i < ARRAY_SIZE(ns_features); i++)
		expect(r, ns_features[i], d->ns, d->ns_why);
	expect(r, SBX_F_IPCNS, d->ipcns, d->ns ? "IPC namespaces unavailable" : d->ns_why);
	expect(r, SBX_F_UTSNS, d->utsns, d->ns ? "UTS namespaces unavailable" : d->ns_why);
	expect(r, SBX_F_CGROUPNS, d->cgroupns,
	       d->ns ? "cgroup namespaces unavailable" : d->ns_why);
	expect(r, SBX_F_NETNS, d->netns, d->ns_why);
	expect(r, SBX_F_ENV_SCRUB, true, NULL);
	expect(r, SBX_F_FD_HYGIENE, true, NULL);
	expect(r, SBX_F_CAPS, true, NULL);
	expect(r, SBX_F_NO_NEW_PRIVS, true, NULL);
	expect(r, SBX_F_RLIMITS, true, NULL);
	/* Set at login on the logind scope, read back by the session: the
	 * prediction can only say whether there is a cgroup v2 to hold them. */
	expect(r, SBX_F_CGROUP_LIMITS, d->cgroup2,
	       "no cgroup v2 with the memory, pids and cpu controllers: only rlimits bound "
	       "this session");
	expect(r, SBX_F_SECCOMP, true, NULL);
	expect(r, SBX_F_UNIX_SOCKETS, d->unix_mediated, NULL);
	expect(r, SBX_F_NETWORK_EGRESS, d->egress, d->egress_why);
	expect(r, SBX_F_DENY_READ, d->deny_read != SBX_DENY_READ_NONE,
	       "no mount view and no Landlock: nothing keeps the secrets out");
	if (d->netns)
		sbx_report_set_requested(r, SBX_F_LANDLOCK_NET, false,
					 "not needed: the private network namespace is the boundary "
					 "and keeps the sandbox's own loopback usable");
	expect_landlock(d, r);
	expect(r, SBX_F_COMMAND_GATE, d->gate == SBX_GATE_REFUSE_ALL || d->gate == SBX_GATE_MOUNT_VIEW,
	       d->gate == SBX_GATE_LANDLOCK ?
	       "partial: Landlock EXECUTE on the allow-list only; without a mount view the host "
	       "cannot be made noexec, so ld.so can load any readable program" :
	       "partial: no mount view and no Landlock; the allow-list is checked by agent-shell "
	       "only");
	expect(r, SBX_F_MEMORY_WX, d->wx != SBX_WX_NONE && !d->wx_partial, SBX_WX_PARTIAL_WHY);
	r->landlock_abi = d->landlock_abi;
	sbx_report_finish(r);
}
