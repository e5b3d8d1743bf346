/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tcp_listen: listen on 127.0.0.1:<port> (0 = any free port), print the
 * port, accept and close connections until killed or until the given
 * number of seconds passes. Used by the demo and the tests to give the
 * sandbox a host loopback service it must NOT reach.
 *
 *   tcp_listen [SECONDS]                  127.0.0.1, any free port
 *   tcp_listen --abstract NAME [SECONDS]  the abstract unix socket NAME
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static void serve(int fd, time_t end)
{
	while (time(NULL) < end) {
		struct pollfd p = { .fd = fd, .events = POLLIN };

		if (poll(&p, 1, 500) > 0) {
			int c = accept(fd, NULL, NULL);

			if (c >= 0)
				close(c);
		}
	}
}

static long seconds_arg(const char *arg)
{
	long seconds = arg ? strtol(arg, NULL, 10) : 60;

	return seconds > 0 && seconds < 3600 ? seconds : 60;
}

static int listen_abstract(const char *name, long seconds)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	size_t n = strlen(name);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (n + 1 > sizeof(sa.sun_path) || fd < 0) {
		fprintf(stderr, "tcp_listen: bad abstract name or socket failed\n");
		return 1;
	}
	memcpy(sa.sun_path + 1, name, n);
	if (bind(fd, (struct sockaddr *)&sa, (socklen_t)(sizeof(sa.sun_family) + 1 + n)) != 0 ||
	    listen(fd, 16) != 0) {
		perror("tcp_listen");
		return 1;
	}
	printf("@%s\n", name);
	fflush(stdout);
	serve(fd, time(NULL) + seconds);
	return 0;
}

int main(int argc, char **argv)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t len = sizeof(sa);
	long seconds = seconds_arg(argc > 1 ? argv[1] : NULL);
	int one = 1, fd;

	if (argc > 2 && !strcmp(argv[1], "--abstract"))
		return listen_abstract(argv[2], seconds_arg(argc > 3 ? argv[3] : NULL));
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0 ||
	    bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 || listen(fd, 16) != 0 ||
	    getsockname(fd, (struct sockaddr *)&sa, &len) != 0) {
		perror("tcp_listen");
		return 1;
	}
	printf("%u\n", ntohs(sa.sin_port));
	fflush(stdout);
	serve(fd, time(NULL) + seconds);
	return 0;
}
