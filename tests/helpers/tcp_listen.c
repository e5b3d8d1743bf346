/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tcp_listen: listen on 127.0.0.1:<port> (0 = any free port), print the
 * port, accept and close connections until killed or until the given
 * number of seconds passes. Used by the demo and the tests to give the
 * sandbox a host loopback service it must NOT reach.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t len = sizeof(sa);
	long seconds = argc > 1 ? strtol(argv[1], NULL, 10) : 60;
	time_t end = time(NULL) + (seconds > 0 && seconds < 3600 ? seconds : 60);
	int one = 1, fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0 ||
	    bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 || listen(fd, 16) != 0 ||
	    getsockname(fd, (struct sockaddr *)&sa, &len) != 0) {
		perror("tcp_listen");
		return 1;
	}
	printf("%u\n", ntohs(sa.sin_port));
	fflush(stdout);
	while (time(NULL) < end) {
		struct pollfd p = { .fd = fd, .events = POLLIN };

		if (poll(&p, 1, 500) > 0) {
			int c = accept(fd, NULL, NULL);

			if (c >= 0)
				close(c);
		}
	}
	return 0;
}
