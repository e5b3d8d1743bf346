/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sbx.h — the library's whole model, for agent-shell, the PAM module and the
 * tests (not installed: programs outside this tree use libsbx.h, whose
 * handles are opaque).
 *
 * Describe, then apply: everything that builds or queries a profile is free
 * of side effects (profile.c, config.c, restrict.c, describe.c, report.c);
 * only the apply path touches the kernel (see README, "privilege map").
 *
 * Error model: every function that can fail returns 0 or -errno and, on
 * failure, fills *err (when err is not NULL) with a message that names the
 * call, the object and the cause, e.g.
 *   "/etc/agent-sandbox/agent-sandbox.conf:12: key 'netwrok': unknown key".
 * Outputs are assigned only on success.
 */
#ifndef SBX_H
#define SBX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "libsbx.h"

#define SBX_VERSION "0.1.0"

/* ---- errors: struct sbx_error, SBX_ERROR_MAX (libsbx.h) ------------------ */

/* ---- egress (lib/egress.c): network = proxy ----------------------------- */

/*
 * The policy of agent-sandbox-egressd and its parsers: pure functions over
 * buffers, no I/O (docs/design.md section 13). A host is ASCII only
 * (IDNA is not decoded: an A-label "xn--..." is compared as written),
 * lower-cased, without a trailing dot; an IPv6 address is held without
 * brackets, in inet_ntop's form.
 */
#define SBX_EGRESS_HOST_MAX 256		/* 253 + "*." + NUL, rounded */
#define SBX_EGRESS_DEFAULT_PORT 443

/* egress_allow = HOST[:PORT]: a name, "*.SUFFIX" (subdomains of SUFFIX
 * only, not SUFFIX itself) or a literal address ("[v6]:port" with a port). */
struct sbx_egress_entry {
	char host[SBX_EGRESS_HOST_MAX];
	uint16_t port;
	bool wildcard;			/* host is "*.SUFFIX" */
	bool literal;			/* host is an IPv4 or IPv6 address */
};

/* A destination a client asked for (HTTP CONNECT or SOCKS5). */
struct sbx_egress_target {
	char host[SBX_EGRESS_HOST_MAX];
	uint16_t port;
	bool literal;
};

/* Normalize a host of len bytes (no NUL needed): ASCII, labels of
 * [A-Za-z0-9_-] (1-63 bytes, no '-' at either end), at most 253 bytes
 * without the trailing dot, lower-cased; or an IPv4 dotted quad or an
 * IPv6 address (brackets allowed when bracketed is true). A name whose
 * last label starts with a digit is refused: getaddrinfo would read
 * "127.1" or "2130706433" as an address. 0 or -EINVAL. */
int sbx_egress_host_norm(const char *in, size_t len, bool bracketed,
			 char *out, size_t size, bool *literal);

/* Parse one egress_allow value. 0 or -EINVAL (err names the cause). */
int sbx_egress_entry_parse(const char *s, struct sbx_egress_entry *out,
			   struct sbx_error *err);
/* Write an entry back as the config spells it. */
int sbx_egress_entry_format(const struct sbx_egress_entry *e, char *buf, size_t size);

/* Does entry e let a client ask for target t? Names match exactly or by
 * wildcard; a literal target matches only an entry naming that literal. */
bool sbx_egress_entry_matches(const struct sbx_egress_entry *e,
			      const struct sbx_egress_target *t);
/* Is every destination b allows also allowed by a? (Restrict) */
bool sbx_egress_entry_covers(const struct sbx_egress_entry *a,
			     const struct sbx_egress_entry *b);

/* Address classes the daemon refuses unless a literal entry names the
 * address (SBX_EGRESS_ADDR_PUBLIC is the only one allowed by a name). */
enum sbx_egress_addr_class {
	SBX_EGRESS_ADDR_PUBLIC = 0,
	SBX_EGRESS_ADDR_UNSPECIFIED,
	SBX_EGRESS_ADDR_LOOPBACK,
	SBX_EGRESS_ADDR_LINK_LOCAL,
	SBX_EGRESS_ADDR_PRIVATE,	/* 10/8, 172.16/12, 192.168/16, fc00::/7, fec0::/10 */
	SBX_EGRESS_ADDR_SHARED,		/* 100.64/10 (carrier-grade NAT) */
	SBX_EGRESS_ADDR_METADATA,	/* 169.254.169.254, 192.0.0.192, fd00:ec2::254, ... */
	SBX_EGRESS_ADDR_MULTICAST,
	SBX_EGRESS_ADDR_BROADCAST,
	SBX_EGRESS_ADDR_RESERVED,	/* 0/8, 192.0.0/24, 240/4, ... */
};

/* Classify an address: family AF_INET (4 bytes) or AF_INET6 (16 bytes).
 * IPv4-mapped, IPv4-compatible and NAT64 (64:ff9b::/96) forms are the
 * class of the IPv4 address they carry. */
enum sbx_egress_addr_class sbx_egress_addr_classify(int family, const void *addr);
const char *sbx_egress_addr_class_name(enum sbx_egress_addr_class c);
/* The IPv4 address an IPv6 address carries, in the forms classify reads
 * as their IPv4 address (mapped, compatible, NAT64 64:ff9b::/96, 6to4
 * 2002::/16): true with it in v4, false for any other address. */
bool sbx_egress_addr_v4_carried(const uint8_t a[16], uint8_t v4[4]);

/* The request parsers: 0 when complete (*used: bytes consumed), -EAGAIN
 * when more bytes are needed, or the refusal:
 *   HTTP: -EINVAL malformed (400), -EOPNOTSUPP not CONNECT (405),
 *         -E2BIG header block over SBX_EGRESS_HTTP_MAX (431).
 *   SOCKS5: -EINVAL malformed, -EOPNOTSUPP a command other than CONNECT
 *         (reply 0x07), -EAFNOSUPPORT an unknown address type (0x08). */
#define SBX_EGRESS_HTTP_MAX 8192
int sbx_egress_http_connect_parse(const char *buf, size_t len, size_t *used,
				  struct sbx_egress_target *out);
/* The method selection: 0 with *noauth when method 0x00 is offered. */
int sbx_egress_socks5_greeting_parse(const uint8_t *buf, size_t len, size_t *used,
				     bool *noauth);
int sbx_egress_socks5_request_parse(const uint8_t *buf, size_t len, size_t *used,
				    struct sbx_egress_target *out);

/* The server name of a TLS ClientHello at the start of buf (handshake
 * records reassembled up to SBX_EGRESS_TLS_MAX bytes of handshake):
 * 0 with the name normalized in out, -ENOENT a ClientHello without one,
 * -EAGAIN more bytes needed, -EINVAL not a ClientHello or malformed
 * (a name that is not a valid host included), -EOPNOTSUPP a well-formed
 * ClientHello that carries Encrypted Client Hello (RFC 9849 or a draft's
 * code point) or ESNI, whose real server name is encrypted. */
#define SBX_EGRESS_TLS_MAX 16384
int sbx_egress_tls_sni(const uint8_t *buf, size_t len, char *out, size_t size);

/*
 * The sandbox's bridge and agent-sandbox-egressd (docs/design.md 13.6).
 * Inside, a proxy session's programs reach 127.0.0.1:SBX_EGRESS_PROXY_PORT
 * (HTTP CONNECT and SOCKS5 on one port). The bridge that listens there
 * hands each connection's socket to the daemon over a new unix stream
 * connection: one hello, with the socket in SCM_RIGHTS for kind CONNECT,
 * then one verdict byte back. A PING asks whether a uid is a proxy agent
 * with a given list, and is answered with a struct sbx_egress_pong.
 */
#define SBX_EGRESS_PROXY_PORT 3128
#define SBX_EGRESS_HELLO_MAGIC "SBXB"
#define SBX_EGRESS_HELLO_VERSION 1
enum sbx_egress_hello_kind {
	SBX_EGRESS_HELLO_CONNECT = 'C',
	SBX_EGRESS_HELLO_PING = 'P',
};
enum sbx_egress_verdict {
	SBX_EGRESS_ALLOWED = 'A',
	SBX_EGRESS_REFUSED = 'R',
	SBX_EGRESS_FAILED = 'F',	/* listed, but not reached */
	SBX_EGRESS_NO_REQUEST = 'N',	/* closed before sending anything */
};
struct sbx_egress_hello {
	char magic[4];
	uint8_t version;
	uint8_t kind;		/* enum sbx_egress_hello_kind */
	uint8_t pad[2];
	uint32_t uid;		/* PING: the uid asked about (only root asks for another) */
	char session[40];	/* the session id (hex), NUL-terminated */
	char list_hash[65];	/* sbx_egress_list_hash of the session's profile */
	char pad2[3];
};
struct sbx_egress_pong {
	char magic[4];
	uint8_t ok;		/* the uid is a proxy agent, with that list */
	uint8_t pad[3];
	char why[184];		/* when not ok, NUL-terminated */
};
/* A hello of len bytes: 0 (*out filled), -EAGAIN short, -EINVAL not one
 * (magic, version, kind, a field without its NUL, a session id that is
 * not hex, a hash that is not 64 hex digits or empty). */
int sbx_egress_hello_parse(const uint8_t *buf, size_t len, struct sbx_egress_hello *out);

/* ---- the profile ------------------------------------------------------- */

/* Ordered narrowest first: Restrict takes the minimum. Numbers are stable. */
enum sbx_access {
	SBX_ACCESS_DENY = 0,
	SBX_ACCESS_GATED = 1,
	SBX_ACCESS_ALLOW = 2,
};

/* Ordered narrowest first: ephemeral keeps nothing, real shares the host home. */
enum sbx_home {
	SBX_HOME_EPHEMERAL = 0,
	SBX_HOME_ISOLATED = 1,
	SBX_HOME_REAL = 2,
};

enum sbx_isolation {
	SBX_ISOLATION_SANDBOXED = 0,
	SBX_ISOLATION_UNCONFINED = 1,
};

enum sbx_level {
	SBX_LEVEL_NONE = 0,
	SBX_LEVEL_DEGRADED = 1,
	SBX_LEVEL_FULL = 2,
};

/* Guarantees: fail-closed booleans computed from achieved+verified report entries. */
enum sbx_guarantee {
	SBX_G_PROCESS_BOUNDARY = 1u << 0,
	SBX_G_WRITE_BOUNDARY = 1u << 1,
	SBX_G_READ_BOUNDARY = 1u << 2,
	SBX_G_NETWORK_BOUNDARY = 1u << 3,
	SBX_G_ENV_SCRUB = 1u << 4,
	SBX_G_HOME_ISOLATION = 1u << 5,
	SBX_G_EXEC_BOUNDARY = 1u << 6,
	SBX_G_NO_PRIVILEGE_GAIN = 1u << 7,
	SBX_G_SYSCALL_FILTER = 1u << 8,
	SBX_G_RESOURCE_LIMITS = 1u << 9,
	/* network = proxy: only the listed destinations are reached, and
	 * the list is enforced outside the sandbox (agent-sandbox-egressd).
	 * A session that holds network_boundary reaches none, so it meets a
	 * floor that requires this one too. */
	SBX_G_NETWORK_EGRESS = 1u << 10,
};
#define SBX_G_COUNT 11
#define SBX_G_ALL ((1u << SBX_G_COUNT) - 1)

enum sbx_limit {
	SBX_LIMIT_NPROC = 0,	/* RLIMIT_NPROC */
	SBX_LIMIT_NOFILE,	/* RLIMIT_NOFILE */
	SBX_LIMIT_FSIZE,	/* RLIMIT_FSIZE, bytes */
	SBX_LIMIT_AS,		/* RLIMIT_AS, bytes */
	SBX_LIMIT_CPU,		/* RLIMIT_CPU, seconds */
	SBX_LIMIT_CORE,		/* RLIMIT_CORE, bytes; always forced to 0 at apply */
	SBX_LIMIT_SESSION_TIME,	/* wall-clock seconds per session */
	SBX_LIMIT_MAX_SESSIONS,	/* concurrent sessions per account */
	SBX_LIMIT_TMP_SIZE,	/* size of the private /tmp and /dev/shm, bytes */
	SBX_LIMIT_MEMORY_MAX,	/* the session's cgroup memory.max, bytes */
	SBX_LIMIT_PIDS_MAX,	/* the session's cgroup pids.max */
	SBX_LIMIT_CPU_MAX,	/* the session's cgroup cpu.max, percent of one CPU */
	SBX_LIMIT_COUNT,
};

/* A limit is "unset" (inherit / unlimited) unless its bit is in set_mask. */
struct sbx_limits {
	uint64_t value[SBX_LIMIT_COUNT];
	uint32_t set_mask;	/* 1u << enum sbx_limit */
};

#define SBX_NAME_MAX 64		/* profile, user, group, service names, incl. NUL */
/* Size of a tmpfs (/tmp, /dev/shm, an ephemeral home) when the profile sets
 * no tmp_size. */
#define SBX_DEFAULT_TMP_SIZE (256ull << 20)

#define SBX_PATH_MAX 1024	/* every path in a profile, incl. NUL */
#define SBX_MAX_ROOTS 32
#define SBX_MAX_DENY 32
#define SBX_MAX_GATE 64
#define SBX_MAX_UNIX_ALLOW 16
#define SBX_MAX_SERVICES 16
#define SBX_SERVICE_NONE "-"	/* the only entry of an empty service list */
#define SBX_MAX_EGRESS 64
#define SBX_NETWORK_PROXY SBX_ACCESS_GATED

struct sbx_root {
	char path[SBX_PATH_MAX];
	enum sbx_access read;
	enum sbx_access write;
};

struct sbx_profile {
	char name[SBX_NAME_MAX];
	/* Absolute; may hold %u (user) and %h (passwd home) until
	 * sbx_profile_expand(). Empty in a ceiling: the ceiling's workspace_*
	 * fields then cap whatever workspace the requested profile names. */
	char workspace_root[SBX_PATH_MAX];
	enum sbx_access workspace_read;
	enum sbx_access workspace_write;
	enum sbx_access host_read;
	enum sbx_access host_write;
	/* deny < proxy < allow; proxy is SBX_NETWORK_PROXY (the middle
	 * value, "gated" in enum sbx_access): inside, the same private
	 * network as deny; outside, agent-sandbox-egressd lets the session
	 * reach the egress list. */
	enum sbx_access network;
	enum sbx_access command;	/* gated: only gate_allow executables run */
	/* Under the gate: allow lets programs make executable memory (a JIT);
	 * deny (the default) keeps memory W^X (docs/design.md section 6). */
	enum sbx_access gate_jit;
	enum sbx_home home;
	enum sbx_isolation isolation;
	bool ack_unconfined;		/* required for isolation = unconfined */
	char shell[SBX_PATH_MAX];	/* the real shell run inside; "" = /bin/bash */
	/* pam_stage = required: refuse a session that pam_agent_sandbox.so's
	 * session stage did not prepare (no verified record for this login). */
	bool pam_required;

	size_t n_roots;
	struct sbx_root roots[SBX_MAX_ROOTS];		/* additional roots */
	size_t n_deny_read;
	char deny_read[SBX_MAX_DENY][SBX_PATH_MAX];	/* secrets: no read, no write */
	size_t n_gate;
	char gate_allow[SBX_MAX_GATE][SBX_PATH_MAX];	/* command = gated */
	/* Host pathname unix sockets the sandbox may connect to (a socket, or
	 * a directory holding sockets), besides the ones it made itself in
	 * places it may write. unix_allow_any: no list restricts (only the
	 * identity ceiling and a [ceiling] section without the key). */
	size_t n_unix_allow;
	char unix_allow[SBX_MAX_UNIX_ALLOW][SBX_PATH_MAX];
	bool unix_allow_any;
	/* network = proxy: the destinations agent-sandbox-egressd lets
	 * through (empty: none). egress_any: no list restricts (only the
	 * identity ceiling and a [ceiling] section without the key). */
	size_t n_egress;
	struct sbx_egress_entry egress[SBX_MAX_EGRESS];
	bool egress_any;
	/* 0 = no cap (the built-in default list); one entry SBX_SERVICE_NONE
	 * = no service allowed (Restrict of two disjoint lists). */
	size_t n_services;
	char services[SBX_MAX_SERVICES][SBX_NAME_MAX];	/* PAM services allowed */

	struct sbx_limits limits;
	enum sbx_level min_level;	/* the floor */
	uint32_t require;		/* SBX_G_* that must hold, or refuse */
};

/* *dst = *src, moving only the lists' entries in use (a profile is
 * mostly unused list room). dst's room past each count is left as it was:
 * nothing reads past a count. */
void sbx_profile_copy(struct sbx_profile *dst, const struct sbx_profile *src);
/* Zero every field and count, leaving the lists' room as it is. */
void sbx_profile_clear(struct sbx_profile *p);
/* sbx_profile_init_default and _open without zeroing the lists' room (it
 * stays as it was: zero when p came from calloc). For hot paths; code
 * that appends to a list writes the whole entry. */
void sbx_profile_reset_default(struct sbx_profile *p);
void sbx_profile_reset_open(struct sbx_profile *p);

/* The built-in default profile (used by the demo and when no config exists
 * for --run): workspace rw, host read-only, network deny, command allow,
 * ephemeral home, sandboxed, a few deny_read secrets, floor "degraded". */
void sbx_profile_init_default(struct sbx_profile *p);

/* A profile's require for its network: under network = proxy the boundary
 * a session can hold is its list, so network_boundary there reads as
 * network_egress (the config and the report both apply it). */
uint32_t sbx_require_for_network(uint32_t require, enum sbx_access network);

/* The identity ceiling: allows everything, restricts nothing. */
void sbx_profile_init_open(struct sbx_profile *p);

/* Expand %u and %h in every path, then check each is absolute, canonical
 * (no "//", no "." or ".." segments, no trailing "/") and fits. Lexical
 * only: existence is checked at apply time. */
int sbx_profile_expand(struct sbx_profile *p, const char *user,
		       const char *home, struct sbx_error *err);

/* Structural validation (unconfined needs ack, ranges, duplicates). */
int sbx_profile_validate(const struct sbx_profile *p, struct sbx_error *err);
/* The same for a ceiling: workspace_root may be empty (the ceiling's
 * workspace_* fields then cap whatever workspace a profile names). */
int sbx_profile_validate_ceiling(const struct sbx_profile *p, struct sbx_error *err);

/* Effective access at an absolute canonical path: DENY at or under any
 * deny_read entry (whatever is nested in it); else the longest component
 * prefix among roots and the workspace root (the narrowest value on a tie);
 * else the host fields. want_write selects the write axis. */
enum sbx_access sbx_profile_path_access(const struct sbx_profile *p,
					const char *path, bool want_write);

/* Restrict(requested, ceiling): the result is never wider than either input
 * on any field or at any path (including deny roots nested in an allowed
 * tree). *out may not alias an input. After an error in the inputs' checks it is
 * untouched; after any later error it is cleared (nameless, every field
 * deny, every list empty), never a half result. */
int sbx_profile_restrict(const struct sbx_profile *requested,
			 const struct sbx_profile *ceiling,
			 struct sbx_profile *out, struct sbx_error *err);

/* Describe: text for humans, JSON for tools. Return 0 or -errno. */
int sbx_profile_to_text(const struct sbx_profile *p, FILE *out);
int sbx_profile_to_json(const struct sbx_profile *p, FILE *out);

/* Stable hash: SHA-256 of the canonical JSON; out gets 64 hex chars + NUL. */
void sbx_profile_hash(const struct sbx_profile *p, char out[65]);

/* Names for enum values, and their parsers (0 or -EINVAL). */
const char *sbx_access_name(enum sbx_access a);
const char *sbx_home_name(enum sbx_home h);
const char *sbx_isolation_name(enum sbx_isolation i);
const char *sbx_level_name(enum sbx_level l);
const char *sbx_guarantee_name(enum sbx_guarantee g);	/* one bit */
const char *sbx_limit_name(enum sbx_limit l);
int sbx_access_parse(const char *s, enum sbx_access *out);
/* network's own spelling: deny, proxy, allow ("gated", its old name for
 * the middle value, is still read). */
const char *sbx_network_name(enum sbx_access a);
int sbx_network_parse(const char *s, enum sbx_access *out);
int sbx_home_parse(const char *s, enum sbx_home *out);
int sbx_isolation_parse(const char *s, enum sbx_isolation *out);
int sbx_level_parse(const char *s, enum sbx_level *out);
int sbx_guarantee_parse(const char *s, enum sbx_guarantee *out);

/* ---- configuration ----------------------------------------------------- */

#define SBX_CONFIG_PATH "/etc/agent-sandbox/agent-sandbox.conf"
#define SBX_STATE_DIR "/var/lib/agent-sandbox"
#define SBX_EGRESS_SOCKET "/run/agent-sandbox/egress.sock"
/* The main file and its drop-ins together (each is read whole). */
#define SBX_CONFIG_MAX_BYTES (1u << 20)
/* Drop-ins: <directory of the main file>/conf.d/NAME.conf. A login reads
 * them all, so their number is bounded like their size. */
#define SBX_CONFIG_DROPIN_DIR "conf.d"
#define SBX_CONFIG_MAX_DROPINS 128
#define SBX_CONFIG_MAX_LINE 4096
/* Most inherit links from a profile to one without inherit: resolving
 * recurses once per link, and a 1 MiB config holds a chain (~30000 links)
 * deep enough to overflow the stack. */
#define SBX_CONFIG_MAX_INHERIT 32

enum sbx_match_kind { SBX_MATCH_USER, SBX_MATCH_GROUP };

struct sbx_match {
	enum sbx_match_kind kind;
	char name[SBX_NAME_MAX];
	char profile[SBX_NAME_MAX];
	const char *file;		/* the file of the rule: one of cfg->files */
	unsigned line;
};

struct sbx_config {
	char path[SBX_PATH_MAX];	/* the main file */
	size_t n_files;
	char **files;			/* the main file, then its drop-ins as read */
	char state_dir[SBX_PATH_MAX];	/* default /var/lib/agent-sandbox */
	char agent_shell[SBX_PATH_MAX];	/* the login shell agent accounts must have */
	char egress_socket[SBX_PATH_MAX];	/* agent-sandbox-egressd's socket */
	struct sbx_profile ceiling;	/* host-wide; open when not configured */
	size_t n_profiles;
	struct sbx_profile *profiles;
	size_t n_matches;
	struct sbx_match *matches;
};

enum sbx_config_flags {
	SBX_CONFIG_SKIP_TRUST = 1u << 0,	/* tests and --check-config of a draft only */
};

/* Parse a config held in memory; name is used in messages ("file:line"). */
int sbx_config_parse_buffer(const char *buf, size_t len, const char *name,
			    struct sbx_config **out, struct sbx_error *err);

/* One file of a config: the main file first, then its drop-ins. */
struct sbx_config_source {
	const char *name;		/* for messages ("file:line") */
	const char *buf;
	size_t len;
};

/* Parse files as one config, in order: as if concatenated, except that
 * each file starts outside any section, [global] and [ceiling] may appear
 * once per file, and a once-only key or a [match] rule given again in a
 * later file is an error naming both places (agent-sandbox.conf(5),
 * "Drop-ins"). */
int sbx_config_parse_sources(const struct sbx_config_source *src, size_t n,
			     struct sbx_config **out, struct sbx_error *err);

/* Open path with O_NOFOLLOW, check the opened fd and every parent directory
 * (root-owned, not group/world writable, regular file), then the same for
 * <dir of path>/conf.d (optional) and each of its [A-Za-z0-9_.-]+.conf
 * not starting with "." in bytewise order, and parse them as one config
 * (sbx_config_parse_sources). -ENOENT only when path itself is missing. */
int sbx_config_load(const char *path, unsigned flags,
		    struct sbx_config **out, struct sbx_error *err);

void sbx_config_free(struct sbx_config *cfg);

/* Pick the profile for user (member of groups): a user rule beats group
 * rules; two group rules naming different profiles is an error naming both
 * lines. -ENOENT when the account is not an agent account. *out points into
 * cfg (not yet restricted or expanded). */
int sbx_config_select(const struct sbx_config *cfg, const char *user,
		      const char *const *groups, size_t n_groups,
		      const struct sbx_profile **out, struct sbx_error *err);

const struct sbx_profile *sbx_config_find_profile(const struct sbx_config *cfg,
						  const char *name);

/* Check that an open fd is trusted config: regular file or directory as
 * expected, owned by root, not group/world writable. */
int sbx_trust_check_fd(int fd, const char *what, bool want_dir,
		       struct sbx_error *err);

/* ---- probe --------------------------------------------------------------- */

struct sbx_probe {
	char kernel[128];		/* uname -r */
	int landlock_abi;		/* 0 when unavailable */
	int landlock_errata;
	char landlock_why[256];		/* why unavailable and the admin fix */
	bool seccomp;
	bool seccomp_kill_process;
	bool userns;			/* this uid can create a user namespace */
	bool mountns, pidns, netns, ipcns, utsns, cgroupns;	/* inside that userns */
	char userns_why[256];		/* which layer blocks it and the fix */
	bool cgroup2;			/* cgroup v2 mounted */
	bool cgroup2_delegated;		/* a writable, delegated subtree for this uid */
	bool cgroup2_limits;		/* memory, pids and cpu controllers in cgroup v2 */
	bool mount_setattr;		/* mount_setattr(2) available */
	bool mdwe;			/* PR_SET_MDWE (Linux 6.3): W^X by the kernel */
	char ns_source[160];		/* where the namespace fields came from (text only) */
};

/* Probe once and cache (side-effect free for the caller: namespace tries
 * run in a throwaway child). */
int sbx_probe_get(const struct sbx_probe **out, struct sbx_error *err);

/* Write the probe as text (with the blocking layer and fix for each missing
 * feature) or JSON. */
int sbx_probe_to_text(const struct sbx_probe *p, FILE *out);
int sbx_probe_to_json(const struct sbx_probe *p, FILE *out);
/* Parse what sbx_probe_to_json wrote (agent-shell --doctor reads the probe
 * a child ran as the agent). Strict and bounded: every key once, the
 * features in the writer's order; *out set only on success. */
int sbx_probe_from_json(const char *buf, size_t len, struct sbx_probe *out,
			struct sbx_error *err);

/* ---- the decision -------------------------------------------------------- */

struct sbx_report;

/*
 * What a profile gets on a kernel, decided once (decide.c) from the profile
 * and the probe: which layers run, by which mechanism, and what the report
 * is expected to say. The session builds its plans from it, --explain
 * prints its expectation, and the PAM stage refuses with it before a
 * session starts. A session's report may only fall short of the
 * expectation where a canary failed to verify a layer.
 */
enum sbx_gate_mech {
	SBX_GATE_NONE,		/* command = allow: no gate */
	SBX_GATE_REFUSE_ALL,	/* command = deny: agent-shell runs nothing */
	SBX_GATE_MOUNT_VIEW,	/* host noexec, the allow-list's closure executable */
	SBX_GATE_LANDLOCK,	/* partial: Landlock EXECUTE only (ld.so gets around it) */
	SBX_GATE_SHELL,		/* partial: agent-shell's own check only */
};

/* How the gate keeps memory W^X (docs/design.md section 6). */
enum sbx_wx_mech {
	SBX_WX_NONE,		/* no gate, or gate_jit = allow */
	SBX_WX_MDWE,		/* PR_SET_MDWE, and seccomp for what it leaves */
	SBX_WX_SECCOMP,		/* seccomp alone (Linux < 6.3) */
};

enum sbx_deny_read_mech {
	SBX_DENY_READ_NONE,	/* no entries, or nothing can hold them */
	SBX_DENY_READ_MASKS,	/* masked in the mount view */
	SBX_DENY_READ_LANDLOCK,	/* left out of Landlock rules (holes) */
};

struct sbx_decision {
	/* User, mount and pid namespaces, and with them the mount view, the
	 * home and the masks. Needs mount_setattr(2): no fallback. */
	bool ns;
	bool netns, ipcns, utsns, cgroupns;
	char ns_why[256];		/* why ns or netns is off, and the fix */
	int landlock_abi;		/* applied: min(probe, limit); 0 = none */
	char landlock_why[256];
	bool landlock_tcp;		/* TCP rules: network denied, no netns */
	enum sbx_deny_read_mech deny_read;
	bool home_rule_optional;	/* no mount view: $HOME may not exist */
	bool proc_readonly;		/* no Landlock: the /proc mount is read-only */
	bool caps_bounding;		/* the bounding set can be cleared (userns) */
	bool network_denied;		/* network != allow */
	bool inet_denied;		/* inet sockets refused by seccomp (no netns) */
	bool unix_mediated;		/* connect() (and bind()) decided outside */
	bool unix_bind_mediated;	/* bind() too: abstract names are the host's */
	bool host_pids;			/* no pid namespace: other pids reachable */
	bool cgroup2;			/* a cgroup v2 that could hold the session's limits */
	enum sbx_gate_mech gate;
	enum sbx_wx_mech wx;
	/* W^X partial: nothing keeps /proc/self/mem from being opened for
	 * writing (no Landlock, no mount view), and its writes reach
	 * executable pages. */
	bool wx_partial;
	/* network = proxy: a bridge in the sandbox's own network namespace
	 * (nothing else can be told from the host's loopback); why not. */
	bool egress;
	char egress_why[384];
};

/* The newest Landlock ABI whose rights and flags this code uses. */
#define SBX_LANDLOCK_ABI_NEWEST 7

struct sbx_decide_opts {
	int landlock_abi_limit;		/* 0: the probe's ABI */
	bool private_netns;		/* the PAM stage already made one */
};

/* Decide. -EOPNOTSUPP (with the layer named in err) when the profile
 * cannot run here at all: a sandboxed profile needs seccomp, and an
 * unconfined one is never run. opts may be NULL. */
int sbx_decide(const struct sbx_profile *p, const struct sbx_probe *probe,
	       const struct sbx_decide_opts *opts, struct sbx_decision *d,
	       struct sbx_error *err);

/* Fill r (from sbx_report_init with the same profile) with what the
 * decision expects, each entry marked verified as a canary would, then
 * finish it: r's level and floor are the expectation's. */
void sbx_decision_expect(const struct sbx_decision *d, struct sbx_report *r);

/* The network_egress entry once the bridge's start (or, for a prediction,
 * the daemon's answer) is known: rc 0 and the list, or the reason in err.
 * The session and --explain both write it here, so they say the same. */
void sbx_egress_report(struct sbx_report *r, const char *socket_path, int rc,
		       const struct sbx_error *err);

/* ---- the report ---------------------------------------------------------- */

enum sbx_feature {
	SBX_F_ENV_SCRUB = 0,
	SBX_F_FD_HYGIENE,
	SBX_F_USERNS,
	SBX_F_PIDNS,
	SBX_F_MOUNTNS,
	SBX_F_NETNS,
	SBX_F_IPCNS,
	SBX_F_UTSNS,
	SBX_F_CGROUPNS,
	SBX_F_MOUNT_VIEW,	/* read-only host, binds, /proc, /dev, /tmp */
	SBX_F_HOME,		/* isolated or ephemeral home at $HOME */
	SBX_F_DENY_READ,	/* secrets masked / not readable */
	SBX_F_CAPS,
	SBX_F_NO_NEW_PRIVS,
	SBX_F_LANDLOCK_FS,
	SBX_F_LANDLOCK_NET,
	SBX_F_LANDLOCK_IOCTL,
	SBX_F_LANDLOCK_SCOPE,
	SBX_F_UNIX_SOCKETS,	/* connect() to host pathname unix sockets mediated */
	SBX_F_RLIMITS,
	SBX_F_CGROUP_LIMITS,	/* memory_max, pids_max, cpu_max on the session's cgroup */
	SBX_F_SECCOMP,
	SBX_F_COMMAND_GATE,
	SBX_F_MEMORY_WX,	/* under the gate: no memory writable and executable */
	SBX_F_NETWORK_EGRESS,	/* network = proxy: the bridge to agent-sandbox-egressd */
	SBX_F_COUNT,
};

struct sbx_report_entry {
	bool requested;
	bool achieved;
	bool verified;		/* a canary inside the confined process proved it */
	char detail[256];	/* why, or the kernel limit */
};

struct sbx_report {
	char session_id[40];
	char user[SBX_NAME_MAX];
	uid_t uid;
	char client[128];		/* SSH_CONNECTION's client address, or "local" */
	char service[SBX_NAME_MAX];	/* sshd, login, su, run, demo, … */
	char profile_name[SBX_NAME_MAX];
	char profile_hash[65];
	enum sbx_isolation isolation;
	int landlock_abi;
	struct sbx_report_entry entry[SBX_F_COUNT];
	uint32_t guarantees;		/* computed */
	uint32_t required;		/* from the profile */
	enum sbx_level level;		/* computed */
	enum sbx_level min_level;
	bool floor_met;			/* computed */
	char refusal[512];		/* why the floor was not met */
	/* Profile facts the guarantees depend on, copied by sbx_report_init
	 * so that sbx_report_finish needs no profile (and a report parsed
	 * back from JSON can be re-finished). */
	enum sbx_access host_read;
	enum sbx_access host_write;
	enum sbx_access network;
	enum sbx_access command;
	enum sbx_home home;
	size_t n_deny_read;
	/* When and what (schema 1, docs/design.md section 12). Times are Unix
	 * seconds, 0 when unknown; the end and the exit status are known only
	 * to the copy written after the program ended (agent-shell's). */
	int64_t started;
	int64_t ended;
	int exit_status;		/* 0-255 (128+N: signal N), -1 unknown */
	/* The command's words, scrubbed, NUL-separated in argv_buf: at most
	 * SBX_REPORT_ARGV_MAX words and sizeof(argv_buf) bytes, each word cut
	 * to fit; argv_truncated when anything was left out or cut. */
	unsigned argc;
	bool argv_truncated;
	char argv_buf[1024];
	/* network = proxy: the egress list as the session had it ("host:port"
	 * entries, ", "-separated, cut with egress_list_truncated), and the
	 * bridge's count of agent-sandbox-egressd's verdicts, known to the
	 * copy written after the program ended. */
	char egress_list[1024];
	bool egress_list_truncated;
	uint64_t egress_allowed;
	uint64_t egress_refused;
	uint64_t egress_failed;
	/* handed to the daemon, verdict not seen before the session ended
	 * (a connection still being decided: it may have been allowed) */
	uint64_t egress_unanswered;
};

/* The report JSON's schema version: raised only by a change an older
 * reader would misread (a key removed or its meaning changed). Keys added
 * do not raise it: readers skip keys they do not know. */
#define SBX_REPORT_SCHEMA 1
#define SBX_REPORT_ARGV_MAX 32

/* Record argv (scrubbed and bounded as struct sbx_report says). */
void sbx_report_set_argv(struct sbx_report *r, char *const *argv);

const char *sbx_feature_name(enum sbx_feature f);

/* Mark what the profile requests; clears everything else. */
void sbx_report_init(struct sbx_report *r, const struct sbx_profile *p);

/* Record an outcome. verified may only be true when achieved is. */
void sbx_report_set(struct sbx_report *r, enum sbx_feature f, bool achieved,
		    bool verified, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

/* Compute guarantees, level and the floor verdict (fail closed). */
void sbx_report_finish(struct sbx_report *r);

int sbx_report_to_json(const struct sbx_report *r, FILE *out);
/* Write the JSON to path (created 0600, truncated, never through a
 * symlink). 0 or -errno. */
int sbx_report_write_file(const char *path, const struct sbx_report *r);
/* The same, name relative to an open directory (AT_FDCWD: the cwd), so
 * a directory checked once cannot be swapped before the write. */
int sbx_report_write_at(int dirfd, const char *name, const struct sbx_report *r);
int sbx_report_to_text(const struct sbx_report *r, FILE *out);
/* One structured line for syslog: key=value pairs, no newline. */
int sbx_report_to_logline(const struct sbx_report *r, char *buf, size_t size);
/* Parse the JSON written by sbx_report_to_json (for --report and tests). */
int sbx_report_from_json(const char *buf, size_t len, struct sbx_report *r,
			 struct sbx_error *err);

#endif /* SBX_H */
