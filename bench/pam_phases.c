/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench/pam_phases: what the PAM stage costs a login, without ssh around
 * it. Each measurement forks a root child that enters a world's mount
 * namespace (bench/ssh.sh's), then runs pam_start, pam_acct_mgmt,
 * pam_open_session, pam_close_session and pam_end for one account through
 * one service, as sshd's monitor does, and exits; the time is from the fork
 * to its reaping. Commands run round-robin, each once per round (each
 * round starting one command later), so that the load of a moment is
 * shared by all of them.
 *
 * Usage: pam_phases ROUNDS WARMUP OUT.json NAME=PID:SERVICE:USER...
 *   PID: a process in the world's mount namespace (its holder)
 * OUT.json has hyperfine's "results" layout (seconds), with "median_diff"
 * against the first command, as bench/interleave.py writes it, and
 * "phases": the median of each PAM call alone (pam_start, pam_acct_mgmt,
 * pam_open_session, pam_close_session, pam_end), timed in the child.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>

#include <security/pam_appl.h>

#define MAX_CMDS 8
#define MAX_ROUNDS 10000

/* The PAM calls a login makes, timed one by one in the child. */
enum { PH_START, PH_ACCT, PH_OPEN, PH_CLOSE, PH_END, PH_N };
static const char *const phase_names[PH_N] = { "pam_start", "pam_acct_mgmt", "pam_open_session",
					       "pam_close_session", "pam_end" };

struct cmd {
	char name[160];
	char service[64];
	char user[64];
	int mnt_fd;
	double *t;
	double *ph[PH_N];
};

static int conv_none(int n, const struct pam_message **msg, struct pam_response **resp,
		     void *data)
{
	(void)n;
	(void)msg;
	(void)resp;
	(void)data;
	return PAM_CONV_ERR;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The child: 0 when every phase succeeded; each call's time in ph[]. */
static int login(const struct cmd *c, double ph[PH_N])
{
	static const struct pam_conv conv = { conv_none, NULL };
	pam_handle_t *h = NULL;
	double t;
	int r;

	if (setns(c->mnt_fd, CLONE_NEWNS) != 0)
		return 10;
	t = now_s();
	if (pam_start(c->service, c->user, &conv, &h) != PAM_SUCCESS)
		return 11;
	ph[PH_START] = now_s() - t;
	r = pam_set_item(h, PAM_RHOST, "127.0.0.1");
	t = now_s();
	if (r == PAM_SUCCESS)
		r = pam_acct_mgmt(h, 0);
	ph[PH_ACCT] = now_s() - t;
	t = now_s();
	if (r == PAM_SUCCESS)
		r = pam_open_session(h, 0);
	ph[PH_OPEN] = now_s() - t;
	t = now_s();
	if (r == PAM_SUCCESS)
		r = pam_close_session(h, 0);
	ph[PH_CLOSE] = now_s() - t;
	t = now_s();
	pam_end(h, r);
	ph[PH_END] = now_s() - t;
	return r == PAM_SUCCESS ? 0 : 12;
}

/* One login, from the fork to the reaping; the child's phase times in ph. */
static double measure(const struct cmd *c, double ph[PH_N])
{
	double t0;
	int status = 0, p[2];
	pid_t pid;

	if (pipe2(p, O_CLOEXEC) != 0) {
		perror("pam_phases: pipe2");
		exit(1);
	}
	fflush(NULL);
	t0 = now_s();
	pid = fork();
	if (pid < 0) {
		perror("pam_phases: fork");
		exit(1);
	}
	if (pid == 0) {
		double mine[PH_N] = { 0 };
		int r;

		close(p[0]);
		r = login(c, mine);
		(void)!write(p[1], mine, sizeof(mine));
		_exit(r);
	}
	close(p[1]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	t0 = now_s() - t0;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		fprintf(stderr, "pam_phases: %s: the login failed (status 0x%x)\n", c->name,
			(unsigned)status);
		exit(1);
	}
	if (read(p[0], ph, PH_N * sizeof(double)) != (ssize_t)(PH_N * sizeof(double))) {
		fprintf(stderr, "pam_phases: %s: no phase times from the child\n", c->name);
		exit(1);
	}
	close(p[0]);
	return t0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(const double *v, int n)
{
	double *s = malloc((size_t)n * sizeof(*s));
	double m;

	if (!s)
		exit(1);
	memcpy(s, v, (size_t)n * sizeof(*s));
	qsort(s, (size_t)n, sizeof(*s), cmp_double);
	m = n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
	free(s);
	return m;
}

int main(int argc, char **argv)
{
	struct cmd cmds[MAX_CMDS];
	int rounds, warmup, n = 0;
	double *diff;
	FILE *out;

	if (argc < 5 || argc - 4 > MAX_CMDS) {
		fprintf(stderr, "usage: pam_phases ROUNDS WARMUP OUT.json NAME=PID:SERVICE:USER...\n");
		return 2;
	}
	rounds = atoi(argv[1]);
	warmup = atoi(argv[2]);
	if (rounds < 2 || rounds > MAX_ROUNDS || warmup < 0 || warmup > MAX_ROUNDS) {
		fprintf(stderr, "pam_phases: ROUNDS 2..%d, WARMUP 0..%d\n", MAX_ROUNDS, MAX_ROUNDS);
		return 2;
	}
	for (int i = 4; i < argc; i++, n++) {
		struct cmd *c = &cmds[n];
		char path[64];
		unsigned long pid;
		const char *eq = strchr(argv[i], '=');

		if (!eq || (size_t)(eq - argv[i]) >= sizeof(c->name) ||
		    sscanf(eq + 1, "%lu:%63[^:]:%63s", &pid, c->service, c->user) != 3) {
			fprintf(stderr, "pam_phases: %s: not NAME=PID:SERVICE:USER\n", argv[i]);
			return 2;
		}
		memcpy(c->name, argv[i], (size_t)(eq - argv[i]));
		c->name[eq - argv[i]] = '\0';
		snprintf(path, sizeof(path), "/proc/%lu/ns/mnt", pid);
		c->mnt_fd = open(path, O_RDONLY | O_CLOEXEC);
		c->t = calloc((size_t)rounds, sizeof(double));
		for (int k = 0; k < PH_N; k++) {
			c->ph[k] = calloc((size_t)rounds, sizeof(double));
			if (!c->ph[k])
				c->t = NULL;
		}
		if (c->mnt_fd < 0 || !c->t) {
			fprintf(stderr, "pam_phases: %s: %s\n", path, strerror(errno));
			return 1;
		}
	}
	for (int r = 0; r < warmup + rounds; r++) {
		/* Each round starts one command later: what a login leaves
		 * behind (its close's sweep, namespaces the kernel frees
		 * later) falls on every other command equally often. */
		for (int k = 0; k < n; k++) {
			int i = (r + k) % n;
			double ph[PH_N];
			double t = measure(&cmds[i], ph);

			if (r < warmup)
				continue;
			cmds[i].t[r - warmup] = t;
			for (int p = 0; p < PH_N; p++)
				cmds[i].ph[p][r - warmup] = ph[p];
		}
	}
	diff = calloc((size_t)rounds, sizeof(double));
	out = fopen(argv[3], "w");
	if (!diff || !out) {
		perror("pam_phases: output");
		return 1;
	}
	fprintf(out, "{\"rounds\":%d,\"warmup\":%d,\"results\":[", rounds, warmup);
	for (int i = 0; i < n; i++) {
		double sum = 0, sq = 0, mn = cmds[i].t[0], mx = cmds[i].t[0], mean;

		for (int r = 0; r < rounds; r++) {
			double t = cmds[i].t[r];

			sum += t;
			mn = t < mn ? t : mn;
			mx = t > mx ? t : mx;
			diff[r] = t - cmds[0].t[r];
		}
		mean = sum / rounds;
		for (int r = 0; r < rounds; r++)
			sq += (cmds[i].t[r] - mean) * (cmds[i].t[r] - mean);
		fprintf(out, "%s{\"command\":\"%s\",\"mean\":%.9f,\"stddev\":%.9f,\"median\":%.9f,"
			"\"min\":%.9f,\"max\":%.9f,\"median_diff\":%.9f,\"phases\":{", i ? "," : "",
			cmds[i].name, mean, rounds > 1 ? sqrt(sq / (rounds - 1)) : 0.0,
			median(cmds[i].t, rounds), mn, mx, median(diff, rounds));
		for (int p = 0; p < PH_N; p++)
			fprintf(out, "%s\"%s\":%.9f", p ? "," : "", phase_names[p],
				median(cmds[i].ph[p], rounds));
		fprintf(out, "}}");
	}
	fprintf(out, "]}\n");
	return fclose(out) == 0 ? 0 : 1;
}
