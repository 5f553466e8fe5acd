// An LD_PRELOAD shim for tests: a full disk for one file. write(2) to a
// file whose path contains $GRAPH_FULL_DISK fails with ENOSPC once it has
// taken 4 KiB, as a disk that filled up during the write would; every
// other write is the C library's.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

ssize_t write(int fd, const void *buf, size_t count) {
  static ssize_t (*real)(int, const void *, size_t);
  if (!real)
    real = (ssize_t(*)(int, const void *, size_t))dlsym(RTLD_NEXT, "write");
  const char *match = getenv("GRAPH_FULL_DISK");
  if (match && *match) {
    char link[64], path[PATH_MAX];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, path, sizeof path - 1);
    if (n > 0) {
      path[n] = '\0';
      off_t at = lseek(fd, 0, SEEK_CUR);
      if (strstr(path, match) && at >= 0 && (size_t)at + count > 4096) {
        errno = ENOSPC;
        return -1;
      }
    }
  }
  return real(fd, buf, count);
}
