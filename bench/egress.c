/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench/egress: bulk throughput and connect latency of a TCP connection,
 * direct or through an HTTP CONNECT proxy (network = proxy's bridge on
 * 127.0.0.1:3128 inside a session), for make bench to compare in one run.
 *
 * Usage: egress serve ADDR PORT
 *        egress relay ADDR PORT TO_ADDR TO_PORT
 *        egress upload|download HOST PORT BYTES [--via ADDR:PORT]
 *        egress latency HOST PORT N [--via ADDR:PORT]
 *
 * serve answers one connection at a time (the benchmark runs one client at
 * a time) and prints "ready PORT" once listening (PORT 0: any free port).
 * A client's first byte names what it wants: 'U' and an 8-byte big-endian
 * size (the server reads that many bytes, then answers one byte), 'D' and
 * a size (the server sends that many bytes), 'P' (the server answers one
 * byte and closes).
 *
 * relay is the reference a proxy is measured against: a bare splice(2)
 * relay on the host's loopback, no sandbox, no request, no policy, one
 * connection at a time, each to TO_ADDR:TO_PORT, with 1 MiB pipes (the
 * default pipe-max-size) and splices until one would block. What it costs
 * over direct TCP is what any splice proxy costs on this machine: a second
 * TCP connection and a third process.
 *
 * The clients print one JSON object. With --via, the client sends
 * "CONNECT HOST:PORT" to the proxy and reads its 200 first; its first
 * byte after that is the request byte above, sent at once, so the proxy's
 * wait for a TLS ClientHello on ports other than 443 (egressd's peek,
 * 300 ms) ends with that byte and is not part of any figure.
 *
 * upload, download: the time from the request byte to the last byte (the
 * server's answer for upload, the last data byte for download); reads and
 * writes of CHUNK bytes. latency: for each of N connections, the time
 * from socket() to the server's answer byte (for --via: connect to the
 * proxy, CONNECT, the 200, the request byte, the answer through the
 * relay), TCP_NODELAY on, and the samples in microseconds.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define CHUNK (128 * 1024)
#define MAX_SAMPLES 100000

static uint8_t buf[CHUNK];

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *what)
{
	fprintf(stderr, "egress: %s: %s\n", what, errno ? strerror(errno) : "failed");
	exit(1);
}

static unsigned long long number(const char *s, unsigned long long max)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *end || v == 0 || v > max) {
		fprintf(stderr, "egress: bad number %s\n", s);
		exit(2);
	}
	return v;
}

/* port: 1-65535, or 0 when any_port (the server's "pick one"). */
static struct sockaddr_in address(const char *host, const char *port, bool any_port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };

	if (inet_pton(AF_INET, host, &sin.sin_addr) != 1) {
		fprintf(stderr, "egress: %s: not an IPv4 address\n", host);
		exit(2);
	}
	sin.sin_port = any_port && !strcmp(port, "0") ? 0 : htons((uint16_t)number(port, 65535));
	return sin;
}

/* 0, or -1 (errno set; 0 for a connection closed early). */
static int send_full(int fd, const void *p, size_t n)
{
	const uint8_t *b = p;

	while (n) {
		ssize_t w = send(fd, b, n, MSG_NOSIGNAL);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		b += w;
		n -= (size_t)w;
	}
	return 0;
}

static int recv_full(int fd, void *p, size_t n)
{
	uint8_t *b = p;

	while (n) {
		ssize_t r = recv(fd, b, n, 0);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			if (r == 0)
				errno = 0;
			return -1;
		}
		b += r;
		n -= (size_t)r;
	}
	return 0;
}

static void write_all(int fd, const void *p, size_t n)
{
	if (send_full(fd, p, n) < 0)
		die("send");
}

static void read_all(int fd, void *p, size_t n)
{
	if (recv_full(fd, p, n) < 0)
		die(errno ? "recv" : "recv: connection closed early");
}

static void put_size(uint8_t *p, uint64_t v)
{
	for (int i = 7; i >= 0; i--, v >>= 8)
		p[i] = (uint8_t)v;
}

static uint64_t get_size(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

/* ---- the server ----------------------------------------------------------- */

/* One connection; any failure just ends it. */
static void serve_one(int fd)
{
	uint8_t req[9];
	uint64_t left;

	if (recv_full(fd, req, 1) < 0)
		return;
	if (req[0] == 'P') {
		(void)send_full(fd, "p", 1);
		return;
	}
	if (recv_full(fd, req + 1, 8) < 0)
		return;
	left = get_size(req + 1);
	if (req[0] == 'U') {
		while (left) {
			ssize_t r = recv(fd, buf, left < sizeof(buf) ? left : sizeof(buf), 0);

			if (r < 0 && errno == EINTR)
				continue;
			if (r <= 0)
				return;
			left -= (uint64_t)r;
		}
		(void)send_full(fd, "k", 1);
	} else if (req[0] == 'D') {
		while (left) {
			size_t n = left < sizeof(buf) ? left : sizeof(buf);

			if (send_full(fd, buf, n) < 0)
				return;
			left -= n;
		}
	}
}

/* One connection at a time, in this process: no fork or thread start in
 * any figure. A client that stalls is dropped after 10 s. */
static void __attribute__((noreturn)) serve(const char *host, const char *port)
{
	struct sockaddr_in sin = address(host, port, true);
	socklen_t sl = sizeof(sin);
	struct timeval tmo = { .tv_sec = 10 };
	int one = 1, lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (lfd < 0 || setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    bind(lfd, (struct sockaddr *)&sin, sizeof(sin)) < 0 || listen(lfd, 64) < 0 ||
	    getsockname(lfd, (struct sockaddr *)&sin, &sl) < 0)
		die("listen");
	printf("ready %u\n", (unsigned)ntohs(sin.sin_port));
	fflush(stdout);
	for (;;) {
		int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);

		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			die("accept");
		}
		(void)setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tmo, sizeof(tmo));
		(void)setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tmo, sizeof(tmo));
		serve_one(fd);
		close(fd);
	}
}

/* ---- the reference relay ------------------------------------------------------ */

struct relay_dir {
	int from, to, pipe[2];
	size_t in_pipe, cap;
	bool stalled, eof, done;
};

static bool relay_wants_input(const struct relay_dir *d)
{
	return !d->eof && !d->stalled && d->in_pipe < d->cap;
}

static int relay_pump(struct relay_dir *d)
{
	for (;;) {
		bool progress = false;
		ssize_t n;

		if (relay_wants_input(d)) {
			n = splice(d->from, NULL, d->pipe[1], NULL, d->cap - d->in_pipe,
				   SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
			if (n == 0)
				d->eof = true;
			else if (n > 0)
				d->in_pipe += (size_t)n, progress = true;
			else if (errno == EAGAIN)
				d->stalled = d->in_pipe > 0;
			else
				return -1;
		}
		if (d->in_pipe) {
			n = splice(d->pipe[0], NULL, d->to, NULL, d->in_pipe,
				   SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
			if (n < 0 && errno != EAGAIN)
				return -1;
			if (n > 0)
				d->in_pipe -= (size_t)n, d->stalled = false, progress = true;
		}
		if (!progress)
			break;
	}
	if (d->eof && !d->in_pipe && !d->done) {
		shutdown(d->to, SHUT_WR);
		d->done = true;
	}
	return 0;
}

static void relay_one(int a, const struct sockaddr_in *to)
{
	struct relay_dir d[2] = { { .from = a, .pipe = { -1, -1 } }, { .to = a, .pipe = { -1, -1 } } };
	int b = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), i;

	if (b < 0 || connect(b, (const struct sockaddr *)to, sizeof(*to)) < 0)
		goto out;
	d[0].to = d[1].from = b;
	for (i = 0; i < 2; i++) {
		if (pipe2(d[i].pipe, O_CLOEXEC | O_NONBLOCK) < 0)
			goto out;
		(void)fcntl(d[i].pipe[1], F_SETPIPE_SZ, 1 << 20);
		d[i].cap = (size_t)fcntl(d[i].pipe[1], F_GETPIPE_SZ);
	}
	(void)fcntl(a, F_SETFL, O_NONBLOCK);
	(void)fcntl(b, F_SETFL, O_NONBLOCK);
	while (!(d[0].done && d[1].done)) {
		struct pollfd p[2] = { { .fd = a }, { .fd = b } };

		for (i = 0; i < 2; i++) {
			if (relay_wants_input(&d[i]))
				p[i].events |= POLLIN;
			if (d[i].in_pipe)
				p[1 - i].events |= POLLOUT;
		}
		if (poll(p, 2, 10000) <= 0 || relay_pump(&d[0]) < 0 || relay_pump(&d[1]) < 0)
			break;
	}
out:
	for (i = 0; i < 2; i++) {
		if (d[i].pipe[0] >= 0)
			close(d[i].pipe[0]);
		if (d[i].pipe[1] >= 0)
			close(d[i].pipe[1]);
	}
	if (b >= 0)
		close(b);
}

static void __attribute__((noreturn)) relay(const char *host, const char *port,
					    const char *to_host, const char *to_port)
{
	struct sockaddr_in sin = address(host, port, true), to = address(to_host, to_port, false);
	socklen_t sl = sizeof(sin);
	int one = 1, lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (lfd < 0 || setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    bind(lfd, (struct sockaddr *)&sin, sizeof(sin)) < 0 || listen(lfd, 64) < 0 ||
	    getsockname(lfd, (struct sockaddr *)&sin, &sl) < 0)
		die("listen");
	printf("ready %u\n", (unsigned)ntohs(sin.sin_port));
	fflush(stdout);
	for (;;) {
		int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);

		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			die("accept");
		}
		relay_one(fd, &to);
		close(fd);
	}
}

/* ---- the clients ------------------------------------------------------------ */

/* A connection to HOST:PORT, through the proxy at via when via is set. */
static int open_conn(const char *host, const char *port, const char *via, bool nodelay)
{
	struct sockaddr_in sin;
	char req[256];
	int one = 1, fd;
	size_t got = 0;

	if (via) {
		char vhost[64], *colon;

		if (snprintf(vhost, sizeof(vhost), "%s", via) >= (int)sizeof(vhost) ||
		    !(colon = strrchr(vhost, ':'))) {
			fprintf(stderr, "egress: --via ADDR:PORT\n");
			exit(2);
		}
		*colon = '\0';
		sin = address(vhost, colon + 1, false);
	} else {
		sin = address(host, port, false);
	}
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		die("socket");
	if (nodelay && setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) < 0)
		die("TCP_NODELAY");
	if (connect(fd, (struct sockaddr *)&sin, sizeof(sin)) < 0)
		die("connect");
	if (!via)
		return fd;
	snprintf(req, sizeof(req), "CONNECT %s:%s HTTP/1.1\r\nHost: %s:%s\r\n\r\n", host, port,
		 host, port);
	write_all(fd, req, strlen(req));
	/* The reply's header block, a byte at a time: nothing after it may
	 * be read here. */
	while (got < sizeof(req) - 1) {
		read_all(fd, req + got, 1);
		got++;
		if (got >= 4 && memcmp(req + got - 4, "\r\n\r\n", 4) == 0)
			break;
	}
	req[got] = '\0';
	if (strncmp(req, "HTTP/1.1 200", 12) != 0) {
		errno = 0;
		fprintf(stderr, "egress: proxy answered: %.80s\n", req);
		exit(1);
	}
	return fd;
}

static double cpu_s(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

static int transfer(bool up, const char *host, const char *port, uint64_t bytes,
		    const char *via)
{
	int fd = open_conn(host, port, via, false);
	uint8_t req[9];
	uint64_t left = bytes;
	double t0, t1, c0 = cpu_s();

	req[0] = up ? 'U' : 'D';
	put_size(req + 1, bytes);
	t0 = now_s();
	write_all(fd, req, sizeof(req));
	if (up) {
		while (left) {
			size_t n = left < sizeof(buf) ? left : sizeof(buf);

			write_all(fd, buf, n);
			left -= n;
		}
		read_all(fd, req, 1);
	} else {
		while (left) {
			ssize_t r = recv(fd, buf, left < sizeof(buf) ? left : sizeof(buf), 0);

			if (r < 0 && errno == EINTR)
				continue;
			if (r <= 0) {
				errno = r < 0 ? errno : 0;
				die("recv: connection closed early");
			}
			left -= (uint64_t)r;
		}
	}
	t1 = now_s();
	close(fd);
	printf("{\"test\":\"%s\",\"via\":\"%s\",\"bytes\":%llu,\"seconds\":%.6f,"
	       "\"mib_per_s\":%.1f,\"client_cpu_s\":%.3f}\n",
	       up ? "upload" : "download", via ? "proxy" : "direct",
	       (unsigned long long)bytes, t1 - t0, (double)bytes / (t1 - t0) / 1048576.0,
	       cpu_s() - c0);
	return 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static int latency(const char *host, const char *port, unsigned long long n, const char *via)
{
	static double us[MAX_SAMPLES];
	double c0 = cpu_s();
	uint8_t b;

	for (unsigned long long i = 0; i < n; i++) {
		double t0 = now_s();
		int fd = open_conn(host, port, via, true);

		write_all(fd, "P", 1);
		read_all(fd, &b, 1);
		us[i] = (now_s() - t0) * 1e6;
		close(fd);
	}
	printf("{\"test\":\"latency\",\"via\":\"%s\",\"connections\":%llu,\"samples_us\":[",
	       via ? "proxy" : "direct", n);
	for (unsigned long long i = 0; i < n; i++)
		printf("%s%.1f", i ? "," : "", us[i]);
	qsort(us, n, sizeof(us[0]), cmp_double);
	printf("],\"median_us\":%.1f,\"p10_us\":%.1f,\"p90_us\":%.1f,\"client_cpu_s\":%.3f}\n",
	       n % 2 ? us[n / 2] : (us[n / 2 - 1] + us[n / 2]) / 2, us[n / 10], us[n * 9 / 10],
	       cpu_s() - c0);
	return 0;
}

static void usage(void)
{
	fprintf(stderr, "usage: egress serve ADDR PORT\n"
			"       egress relay ADDR PORT TO_ADDR TO_PORT\n"
			"       egress upload|download HOST PORT BYTES [--via ADDR:PORT]\n"
			"       egress latency HOST PORT N [--via ADDR:PORT]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	const char *via = NULL;

	if (argc == 4 && !strcmp(argv[1], "serve"))
		serve(argv[2], argv[3]);
	if (argc == 6 && !strcmp(argv[1], "relay"))
		relay(argv[2], argv[3], argv[4], argv[5]);
	if (argc == 7 && !strcmp(argv[5], "--via"))
		via = argv[6];
	else if (argc != 5)
		usage();
	if (!strcmp(argv[1], "upload") || !strcmp(argv[1], "download"))
		return transfer(argv[1][0] == 'u', argv[2], argv[3],
				number(argv[4], 1ULL << 40), via);
	if (!strcmp(argv[1], "latency"))
		return latency(argv[2], argv[3], number(argv[4], MAX_SAMPLES), via);
	usage();
	return 2;
}
