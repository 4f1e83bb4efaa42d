//go:build cgo

package bench

/*
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct { long ops; unsigned seed; long touched; } gpunode_alloc_arg;

// Each thread keeps a ring of 256 live blocks of 16-1024 bytes and replaces
// one per operation: free the oldest, malloc a new one, write to it.
static void *gpunode_alloc_thread(void *p) {
	gpunode_alloc_arg *a = p;
	enum { RING = 256 };
	void *ring[RING];
	memset(ring, 0, sizeof ring);
	unsigned x = a->seed | 1;
	long touched = 0;
	for (long i = 0; i < a->ops; i++) {
		x ^= x << 13; x ^= x >> 17; x ^= x << 5;
		size_t sz = 16 + (x % 1009);
		int k = (int)(i % RING);
		free(ring[k]);
		char *b = malloc(sz);
		if (b == NULL) return (void *)1;
		b[0] = (char)i; b[sz - 1] = (char)x;
		touched += b[0];
		ring[k] = b;
	}
	for (int k = 0; k < RING; k++) free(ring[k]);
	a->touched = touched;
	return NULL;
}

static int gpunode_alloc_run(int threads, long ops) {
	pthread_t *t = calloc((size_t)threads, sizeof *t);
	gpunode_alloc_arg *args = calloc((size_t)threads, sizeof *args);
	if (t == NULL || args == NULL) return -1;
	int failed = 0, started = 0;
	for (int i = 0; i < threads; i++) {
		args[i].ops = ops;
		args[i].seed = 2654435761u * (unsigned)(i + 1);
		if (pthread_create(&t[i], NULL, gpunode_alloc_thread, &args[i]) != 0) { failed = 1; break; }
		started++;
	}
	for (int i = 0; i < started; i++) {
		void *r = NULL;
		pthread_join(t[i], &r);
		if (r != NULL) failed = 1;
	}
	free(t);
	free(args);
	return failed ? -1 : 0;
}
*/
import "C"

import "fmt"

// WorkloadAvailable reports whether ThreadsWorkload is compiled in.
const WorkloadAvailable = true

// ThreadsWorkload runs the built-in allocator workload in this process:
// threads POSIX threads, each doing ops malloc/free pairs of 16-1024 bytes
// with 256 blocks live, through the C library's malloc (or the LD_PRELOADed
// allocator's).
func ThreadsWorkload(threads int, ops int64) error {
	if threads < 1 || threads > 4096 || ops < 1 {
		return inputf("workload threads %d, ops %d", threads, ops)
	}
	if C.gpunode_alloc_run(C.int(threads), C.long(ops)) != 0 {
		return fmt.Errorf("allocator workload failed (malloc returned NULL or a thread could not start)")
	}
	return nil
}
