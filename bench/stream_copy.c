/* For bench/cpu-vs-llamacpp.sh: memory bandwidth as STREAM's copy kernel
 * measures it (a[i] = b[i] over arrays far larger than the caches, bytes read
 * plus bytes written), on THREADS threads each copying its own slice: the
 * physical limit of a decode step, which reads every weight once.
 * Usage: stream_copy THREADS [MiB per array, default 512]. Prints GB/s (best of 5). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct slice {
  double *a, *b;
  size_t n;
};

static void* copy(void* p) {
  struct slice* s = p;
  for (size_t i = 0; i < s->n; ++i) s->a[i] = s->b[i];
  return NULL;
}

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int main(int argc, char** argv) {
  const int threads = argc > 1 ? atoi(argv[1]) : 1;
  const size_t n = (size_t)(argc > 2 ? atoi(argv[2]) : 512) * 1024 * 1024 / sizeof(double);
  double *a = malloc(n * sizeof(double)), *b = malloc(n * sizeof(double));
  if (!a || !b || threads < 1 || threads > 256) return 1;
  memset(a, 0, n * sizeof(double));
  for (size_t i = 0; i < n; ++i) b[i] = (double)i;
  pthread_t t[256];
  struct slice s[256];
  double best = 1e30;
  for (int rep = 0; rep < 5; ++rep) {
    const double start = now_s();
    for (int k = 0; k < threads; ++k) {
      const size_t lo = n * (size_t)k / (size_t)threads, hi = n * (size_t)(k + 1) / (size_t)threads;
      s[k] = (struct slice){a + lo, b + lo, hi - lo};
      pthread_create(&t[k], NULL, copy, &s[k]);
    }
    for (int k = 0; k < threads; ++k) pthread_join(t[k], NULL);
    const double took = now_s() - start;
    if (took < best) best = took;
  }
  printf("%.1f\n", 2.0 * (double)n * sizeof(double) / best / 1e9);
  return a[n / 2] == b[n / 2] ? 0 : 1;
}
