/* Reference pointer chase for bench's integration test: a buffer of N MiB
 * (mmap, first touched here), one 64-byte line per slot, linked into one
 * cycle in a random order (xorshift shuffle), then followed for S samples of
 * L loads each. Prints the best and the median nanoseconds per load. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>

static uint64_t rng = 88172645463325252ull;
static uint64_t next(void) { rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17; return rng; }
static int cmp(const void *a, const void *b) { double x = *(const double *)a, y = *(const double *)b; return (x > y) - (x < y); }

int main(int argc, char **argv) {
	if (argc != 4) { fprintf(stderr, "usage: chase MIB SAMPLES LOADS\n"); return 2; }
	size_t bytes = (size_t)atol(argv[1]) << 20;
	int samples = atoi(argv[2]);
	long loads = atol(argv[3]);
	if (samples < 1 || samples > 100000 || loads < 1) return 2;
	uint64_t *w = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (w == MAP_FAILED) { perror("mmap"); return 1; }
	size_t lines = bytes / 64, stride = 8;
	uint32_t *order = malloc(lines * sizeof *order);
	if (!order) return 1;
	for (size_t i = 0; i < lines; i++) order[i] = (uint32_t)i;
	for (size_t i = lines - 1; i > 0; i--) { size_t j = next() % (i + 1); uint32_t t = order[i]; order[i] = order[j]; order[j] = t; }
	for (size_t i = 0; i < lines; i++) w[(size_t)order[i] * stride] = (uint64_t)order[(i + 1) % lines] * stride;
	free(order);
	double *ns = malloc((size_t)samples * sizeof *ns);
	volatile uint64_t sink;
	uint64_t p = 0;
	for (long k = 0; k < loads; k++) p = w[p]; /* warm-up */
	for (int s = 0; s < samples; s++) {
		struct timespec a, b;
		clock_gettime(CLOCK_MONOTONIC, &a);
		for (long k = 0; k < loads; k++) p = w[p];
		clock_gettime(CLOCK_MONOTONIC, &b);
		ns[s] = ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / (double)loads;
	}
	sink = p;
	(void)sink;
	qsort(ns, (size_t)samples, sizeof *ns, cmp);
	printf("best %.3f median %.3f\n", ns[0], ns[samples / 2]);
	return 0;
}
