/*
 * A stub of NVIDIA's NVML library (libnvidia-ml.so.1) for gpunode's tests.
 *
 * It exports every NVML function gpunode calls (internal/gpu, internal/miglive)
 * with NVML's C ABI, and answers from the JSON file named by the environment
 * variable GPUNODE_NVML_STUB (see dgx-h100.json and README.md beside this
 * file). Two failure modes:
 *
 *   GPUNODE_NVML_STUB_BLOCK=CALL[:GPU]  the named call (e.g.
 *       nvmlDeviceGetPowerUsage) never returns, for every GPU or only GPU
 *       index GPU: a wedged GPU whose driver call blocks in the kernel.
 *   GPUNODE_NVML_STUB_INIT=DRIVER_NOT_LOADED  nvmlInit fails with
 *       NVML_ERROR_DRIVER_NOT_LOADED (the library is there, the kernel module
 *       is not). Any NVML_ERROR_* name (without the prefix) works.
 *
 * The JSON keys "blockCall" and "initError" do the same from the file; the
 * environment wins. The struct layouts and constants are NVML's (nvml.h);
 * only what gpunode reads is declared here.
 */
#define _DEFAULT_SOURCE
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef int nvmlReturn_t;
enum {
	NVML_SUCCESS = 0,
	NVML_ERROR_UNINITIALIZED = 1,
	NVML_ERROR_INVALID_ARGUMENT = 2,
	NVML_ERROR_NOT_SUPPORTED = 3,
	NVML_ERROR_NO_PERMISSION = 4,
	NVML_ERROR_ALREADY_INITIALIZED = 5,
	NVML_ERROR_NOT_FOUND = 6,
	NVML_ERROR_INSUFFICIENT_SIZE = 7,
	NVML_ERROR_INSUFFICIENT_POWER = 8,
	NVML_ERROR_DRIVER_NOT_LOADED = 9,
	NVML_ERROR_TIMEOUT = 10,
	NVML_ERROR_IRQ_ISSUE = 11,
	NVML_ERROR_LIBRARY_NOT_FOUND = 12,
	NVML_ERROR_FUNCTION_NOT_FOUND = 13,
	NVML_ERROR_CORRUPTED_INFOROM = 14,
	NVML_ERROR_GPU_IS_LOST = 15,
	NVML_ERROR_RESET_REQUIRED = 16,
	NVML_ERROR_OPERATING_SYSTEM = 17,
	NVML_ERROR_LIB_RM_VERSION_MISMATCH = 18,
	NVML_ERROR_IN_USE = 19,
	NVML_ERROR_MEMORY = 20,
	NVML_ERROR_NO_DATA = 21,
	NVML_ERROR_UNKNOWN = 999,
};

typedef struct {
	char busIdLegacy[16];
	unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
	char busId[32];
} nvmlPciInfo_t;

typedef struct {
	unsigned long long total, free, used;
} nvmlMemory_t;

typedef struct {
	unsigned int gpu, memory;
} nvmlUtilization_t;

typedef struct {
	unsigned int multiprocessorCount, sharedCopyEngineCount, sharedDecoderCount, sharedEncoderCount,
	    sharedJpegCount, sharedOfaCount, gpuInstanceSliceCount, computeInstanceSliceCount;
	unsigned long long memorySizeMB;
} nvmlDeviceAttributes_t;

typedef struct {
	unsigned char clusterUuid[16];
	nvmlReturn_t status;
	unsigned int cliqueId;
	unsigned char state;
} nvmlGpuFabricInfo_t;

#define MAX_GPUS 64
#define MAX_LINKS 36

/* One GPU of the JSON file. */
struct gpu {
	int index;
	char name[96], uuid[96], busId[32];
	unsigned int domain, bus, dev, pciDeviceId, pciSubSystemId;
	unsigned int arch;
	int ccMajor, ccMinor;
	unsigned int smCount;
	unsigned long long memTotal, memUsed;
	unsigned int utilGpu, utilMem;
	int numaNode; /* -1: NOT_SUPPORTED */
	unsigned long long affinity[16]; /* CPU bit mask, 1024 CPUs */
	int persistence, computeMode, migCurrent, migPending;
	unsigned int clocks[4], appClocks[4], defAppClocks[4], maxClocks[4];
	unsigned long long eventReasons;
	int eccCurrent, eccPending;
	unsigned long long ecc[2][2]; /* [corrected,uncorrected][volatile,aggregate] */
	unsigned int remap[4];        /* correctable, uncorrectable, pending, failure */
	unsigned int retired[2];      /* single-bit, double-bit page counts */
	int retiredPending;
	unsigned int powerMW, powerLimitMW;
	unsigned int pcie[4]; /* gen, maxGen, width, maxWidth */
	unsigned int tempC;
	int nlinks;
	int linkActive[MAX_LINKS];
	char linkRemote[MAX_LINKS][32];
	unsigned long long linkErrors[MAX_LINKS][4];
	int fabric; /* 0: no fabric info (NOT_SUPPORTED) */
	unsigned char fabricState;
	nvmlReturn_t fabricStatus;
};

static struct {
	int loaded, inits;
	char driverVersion[80], nvmlVersion[80];
	int cudaVersion;
	int ngpus;
	struct gpu gpus[MAX_GPUS];
	char block[128];
	int blockGPU; /* -1: every GPU */
	nvmlReturn_t initError;
} S;

/* ---- a small JSON reader (objects, arrays, strings, numbers, literals) ---- */

enum jtype { J_NULL, J_BOOL, J_NUM, J_STR, J_ARR, J_OBJ };
struct jval {
	enum jtype t;
	double n;
	char *s;              /* J_STR */
	struct jval **items;  /* J_ARR, J_OBJ values */
	char **keys;          /* J_OBJ */
	int len;
};

struct jp {
	const char *p, *end;
	const char *err;
	int depth;
};

static void jws(struct jp *j) {
	while (j->p < j->end && isspace((unsigned char)*j->p))
		j->p++;
}

static struct jval *jnew(enum jtype t) {
	struct jval *v = calloc(1, sizeof *v);
	if (v)
		v->t = t;
	return v;
}

static struct jval *jparse(struct jp *j);

static char *jstring(struct jp *j) {
	if (j->p >= j->end || *j->p != '"') {
		j->err = "want a string";
		return NULL;
	}
	j->p++;
	size_t cap = 16, n = 0;
	char *s = malloc(cap);
	while (s && j->p < j->end && *j->p != '"') {
		char c = *j->p++;
		if (c == '\\' && j->p < j->end) {
			c = *j->p++;
			switch (c) {
			case 'n': c = '\n'; break;
			case 't': c = '\t'; break;
			case 'r': c = '\r'; break;
			case 'b': c = '\b'; break;
			case 'f': c = '\f'; break;
			case 'u': /* keep ASCII only: \u00XX */
				if (j->end - j->p >= 4) {
					char hex[5] = {j->p[0], j->p[1], j->p[2], j->p[3], 0};
					c = (char)strtol(hex, NULL, 16);
					j->p += 4;
				}
				break;
			default: break; /* \" \\ \/ */
			}
		}
		if (n + 2 > cap) {
			cap *= 2;
			char *t = realloc(s, cap);
			if (!t) {
				free(s);
				return NULL;
			}
			s = t;
		}
		s[n++] = c;
	}
	if (!s || j->p >= j->end) {
		free(s);
		j->err = "unterminated string";
		return NULL;
	}
	j->p++;
	s[n] = 0;
	return s;
}

static int jappend(struct jval *v, char *key, struct jval *item) {
	struct jval **items = realloc(v->items, (size_t)(v->len + 1) * sizeof *items);
	if (!items)
		return -1;
	v->items = items;
	if (v->t == J_OBJ) {
		char **keys = realloc(v->keys, (size_t)(v->len + 1) * sizeof *keys);
		if (!keys)
			return -1;
		v->keys = keys;
		v->keys[v->len] = key;
	}
	v->items[v->len++] = item;
	return 0;
}

static struct jval *jparse(struct jp *j) {
	jws(j);
	if (j->p >= j->end) {
		j->err = "unexpected end of file";
		return NULL;
	}
	if (++j->depth > 32) {
		j->err = "nested too deep";
		return NULL;
	}
	struct jval *v = NULL;
	char c = *j->p;
	if (c == '{' || c == '[') {
		v = jnew(c == '{' ? J_OBJ : J_ARR);
		char close = c == '{' ? '}' : ']';
		j->p++;
		jws(j);
		if (j->p < j->end && *j->p == close) {
			j->p++;
			j->depth--;
			return v;
		}
		for (;;) {
			char *key = NULL;
			if (v->t == J_OBJ) {
				jws(j);
				key = jstring(j);
				if (!key)
					return NULL;
				jws(j);
				if (j->p >= j->end || *j->p != ':') {
					j->err = "want ':'";
					return NULL;
				}
				j->p++;
			}
			struct jval *item = jparse(j);
			if (!item || jappend(v, key, item) != 0)
				return NULL;
			jws(j);
			if (j->p < j->end && *j->p == ',') {
				j->p++;
				continue;
			}
			if (j->p < j->end && *j->p == close) {
				j->p++;
				break;
			}
			j->err = "want ',' or a closing bracket";
			return NULL;
		}
	} else if (c == '"') {
		v = jnew(J_STR);
		v->s = jstring(j);
		if (!v->s)
			return NULL;
	} else if (!strncmp(j->p, "true", 4) || !strncmp(j->p, "false", 5)) {
		v = jnew(J_BOOL);
		v->n = *j->p == 't';
		j->p += *j->p == 't' ? 4 : 5;
	} else if (!strncmp(j->p, "null", 4)) {
		v = jnew(J_NULL);
		j->p += 4;
	} else {
		char *e;
		v = jnew(J_NUM);
		v->n = strtod(j->p, &e);
		if (e == j->p) {
			j->err = "unexpected character";
			return NULL;
		}
		j->p = e;
	}
	j->depth--;
	return v;
}

static struct jval *jget(const struct jval *o, const char *key) {
	if (!o || o->t != J_OBJ)
		return NULL;
	for (int i = 0; i < o->len; i++)
		if (!strcmp(o->keys[i], key))
			return o->items[i];
	return NULL;
}

static double jnum(const struct jval *o, const char *key, double def) {
	const struct jval *v = jget(o, key);
	return v && (v->t == J_NUM || v->t == J_BOOL) ? v->n : def;
}

static void jstr(const struct jval *o, const char *key, char *dst, size_t n) {
	const struct jval *v = jget(o, key);
	if (v && v->t == J_STR)
		snprintf(dst, n, "%s", v->s);
}

/* ---- loading the description ---- */

static const char *const errNames[] = {
	[NVML_SUCCESS] = "SUCCESS",
	[NVML_ERROR_UNINITIALIZED] = "UNINITIALIZED",
	[NVML_ERROR_INVALID_ARGUMENT] = "INVALID_ARGUMENT",
	[NVML_ERROR_NOT_SUPPORTED] = "NOT_SUPPORTED",
	[NVML_ERROR_NO_PERMISSION] = "NO_PERMISSION",
	[NVML_ERROR_ALREADY_INITIALIZED] = "ALREADY_INITIALIZED",
	[NVML_ERROR_NOT_FOUND] = "NOT_FOUND",
	[NVML_ERROR_INSUFFICIENT_SIZE] = "INSUFFICIENT_SIZE",
	[NVML_ERROR_INSUFFICIENT_POWER] = "INSUFFICIENT_POWER",
	[NVML_ERROR_DRIVER_NOT_LOADED] = "DRIVER_NOT_LOADED",
	[NVML_ERROR_TIMEOUT] = "TIMEOUT",
	[NVML_ERROR_IRQ_ISSUE] = "IRQ_ISSUE",
	[NVML_ERROR_LIBRARY_NOT_FOUND] = "LIBRARY_NOT_FOUND",
	[NVML_ERROR_FUNCTION_NOT_FOUND] = "FUNCTION_NOT_FOUND",
	[NVML_ERROR_CORRUPTED_INFOROM] = "CORRUPTED_INFOROM",
	[NVML_ERROR_GPU_IS_LOST] = "GPU_IS_LOST",
	[NVML_ERROR_RESET_REQUIRED] = "RESET_REQUIRED",
	[NVML_ERROR_OPERATING_SYSTEM] = "OPERATING_SYSTEM",
	[NVML_ERROR_LIB_RM_VERSION_MISMATCH] = "LIB_RM_VERSION_MISMATCH",
	[NVML_ERROR_IN_USE] = "IN_USE",
	[NVML_ERROR_MEMORY] = "MEMORY",
	[NVML_ERROR_NO_DATA] = "NO_DATA",
};

/* errorByName maps "DRIVER_NOT_LOADED" or "NVML_ERROR_DRIVER_NOT_LOADED". */
static nvmlReturn_t errorByName(const char *name) {
	if (!strncmp(name, "NVML_ERROR_", 11))
		name += 11;
	for (size_t i = 1; i < sizeof errNames / sizeof errNames[0]; i++)
		if (errNames[i] && !strcmp(errNames[i], name))
			return (nvmlReturn_t)i;
	return NVML_ERROR_UNKNOWN;
}

static int parseBusId(const char *s, unsigned int *dom, unsigned int *bus, unsigned int *dev) {
	unsigned int fn;
	return sscanf(s, "%x:%x:%x.%x", dom, bus, dev, &fn) == 4 ? 0 : -1;
}

/* cpulist "0-55,112-167" into a bit mask. */
static void parseCPUList(const char *s, unsigned long long *mask, int words) {
	while (*s) {
		char *e;
		long a = strtol(s, &e, 10), b = a;
		if (e == s)
			return;
		if (*e == '-')
			b = strtol(e + 1, &e, 10);
		for (long c = a; c <= b && c < words * 64; c++)
			if (c >= 0)
				mask[c / 64] |= 1ULL << (c % 64);
		s = *e == ',' ? e + 1 : e;
		if (*e != ',')
			return;
	}
}

static void clockSet(const struct jval *o, unsigned int *dst) {
	dst[0] = (unsigned int)jnum(o, "graphics", 0);
	dst[1] = (unsigned int)jnum(o, "sm", 0);
	dst[2] = (unsigned int)jnum(o, "mem", 0);
	dst[3] = (unsigned int)jnum(o, "video", 0);
}

static void loadGPU(const struct jval *o, struct gpu *g, int i) {
	memset(g, 0, sizeof *g);
	g->index = (int)jnum(o, "index", i);
	jstr(o, "name", g->name, sizeof g->name);
	jstr(o, "uuid", g->uuid, sizeof g->uuid);
	jstr(o, "busId", g->busId, sizeof g->busId);
	parseBusId(g->busId, &g->domain, &g->bus, &g->dev);
	g->pciDeviceId = (unsigned int)jnum(o, "pciDeviceId", 0);
	g->pciSubSystemId = (unsigned int)jnum(o, "pciSubSystemId", 0);
	g->arch = (unsigned int)jnum(o, "architecture", 0);
	const struct jval *cc = jget(o, "computeCapability");
	if (cc && cc->t == J_ARR && cc->len == 2) {
		g->ccMajor = (int)cc->items[0]->n;
		g->ccMinor = (int)cc->items[1]->n;
	}
	g->smCount = (unsigned int)jnum(o, "multiprocessorCount", 0);
	const struct jval *m = jget(o, "memory");
	g->memTotal = (unsigned long long)jnum(m, "total", 0);
	g->memUsed = (unsigned long long)jnum(m, "used", 0);
	const struct jval *u = jget(o, "utilization");
	g->utilGpu = (unsigned int)jnum(u, "gpu", 0);
	g->utilMem = (unsigned int)jnum(u, "memory", 0);
	g->numaNode = (int)jnum(o, "numaNode", -1);
	char cpus[512] = "";
	jstr(o, "cpuAffinity", cpus, sizeof cpus);
	parseCPUList(cpus, g->affinity, 16);
	g->persistence = (int)jnum(o, "persistence", 0);
	g->computeMode = (int)jnum(o, "computeMode", 0);
	const struct jval *mig = jget(o, "mig");
	g->migCurrent = (int)jnum(mig, "current", 0);
	g->migPending = (int)jnum(mig, "pending", 0);
	clockSet(jget(o, "clocks"), g->clocks);
	clockSet(jget(o, "applicationsClocks"), g->appClocks);
	clockSet(jget(o, "defaultApplicationsClocks"), g->defAppClocks);
	clockSet(jget(o, "maxClocks"), g->maxClocks);
	g->eventReasons = (unsigned long long)jnum(o, "clocksEventReasons", 0);
	const struct jval *ecc = jget(o, "ecc");
	g->eccCurrent = (int)jnum(ecc, "current", 0);
	g->eccPending = (int)jnum(ecc, "pending", 0);
	const struct jval *vol = jget(ecc, "volatile"), *agg = jget(ecc, "aggregate");
	g->ecc[0][0] = (unsigned long long)jnum(vol, "corrected", 0);
	g->ecc[1][0] = (unsigned long long)jnum(vol, "uncorrected", 0);
	g->ecc[0][1] = (unsigned long long)jnum(agg, "corrected", 0);
	g->ecc[1][1] = (unsigned long long)jnum(agg, "uncorrected", 0);
	const struct jval *rr = jget(o, "remappedRows");
	g->remap[0] = (unsigned int)jnum(rr, "correctable", 0);
	g->remap[1] = (unsigned int)jnum(rr, "uncorrectable", 0);
	g->remap[2] = (unsigned int)jnum(rr, "pending", 0);
	g->remap[3] = (unsigned int)jnum(rr, "failure", 0);
	const struct jval *rp = jget(o, "retiredPages");
	g->retired[0] = (unsigned int)jnum(rp, "singleBit", 0);
	g->retired[1] = (unsigned int)jnum(rp, "doubleBit", 0);
	g->retiredPending = (int)jnum(rp, "pending", 0);
	g->powerMW = (unsigned int)jnum(o, "powerUsageMilliwatts", 0);
	g->powerLimitMW = (unsigned int)jnum(o, "enforcedPowerLimitMilliwatts", 0);
	const struct jval *p = jget(o, "pcie");
	g->pcie[0] = (unsigned int)jnum(p, "gen", 0);
	g->pcie[1] = (unsigned int)jnum(p, "maxGen", 0);
	g->pcie[2] = (unsigned int)jnum(p, "width", 0);
	g->pcie[3] = (unsigned int)jnum(p, "maxWidth", 0);
	g->tempC = (unsigned int)jnum(o, "temperatureC", 0);
	const struct jval *links = jget(o, "nvlinks");
	if (links && links->t == J_ARR) {
		g->nlinks = links->len < MAX_LINKS ? links->len : MAX_LINKS;
		for (int l = 0; l < g->nlinks; l++) {
			const struct jval *lk = links->items[l];
			g->linkActive[l] = (int)jnum(lk, "active", 0);
			jstr(lk, "remoteBusId", g->linkRemote[l], sizeof g->linkRemote[l]);
			const struct jval *e = jget(lk, "errors");
			g->linkErrors[l][0] = (unsigned long long)jnum(e, "replay", 0);
			g->linkErrors[l][1] = (unsigned long long)jnum(e, "recovery", 0);
			g->linkErrors[l][2] = (unsigned long long)jnum(e, "crcFlit", 0);
			g->linkErrors[l][3] = (unsigned long long)jnum(e, "crcData", 0);
		}
	}
	const struct jval *f = jget(o, "fabric");
	if (f && f->t == J_OBJ) {
		g->fabric = 1;
		g->fabricState = (unsigned char)jnum(f, "state", 0);
		g->fabricStatus = (nvmlReturn_t)jnum(f, "status", 0);
	}
}

/* load reads GPUNODE_NVML_STUB; on failure it says why on stderr. */
static nvmlReturn_t load(void) {
	const char *path = getenv("GPUNODE_NVML_STUB");
	if (!path || !*path) {
		fprintf(stderr, "nvml-stub: GPUNODE_NVML_STUB is not set (the JSON file to answer from)\n");
		return NVML_ERROR_UNKNOWN;
	}
	FILE *f = fopen(path, "rb");
	if (!f) {
		fprintf(stderr, "nvml-stub: %s: %s\n", path, strerror(errno));
		return NVML_ERROR_UNKNOWN;
	}
	static char buf[4 << 20];
	size_t n = fread(buf, 1, sizeof buf, f);
	fclose(f);
	struct jp j = {buf, buf + n, NULL, 0};
	struct jval *root = jparse(&j);
	if (!root || root->t != J_OBJ) {
		fprintf(stderr, "nvml-stub: %s: offset %ld: %s\n", path, (long)(j.p - buf), j.err ? j.err : "want an object");
		return NVML_ERROR_UNKNOWN;
	}
	memset(&S, 0, sizeof S);
	jstr(root, "driverVersion", S.driverVersion, sizeof S.driverVersion);
	jstr(root, "nvmlVersion", S.nvmlVersion, sizeof S.nvmlVersion);
	S.cudaVersion = (int)jnum(root, "cudaDriverVersion", 0);
	const struct jval *gpus = jget(root, "gpus");
	if (gpus && gpus->t == J_ARR) {
		S.ngpus = gpus->len < MAX_GPUS ? gpus->len : MAX_GPUS;
		for (int i = 0; i < S.ngpus; i++)
			loadGPU(gpus->items[i], &S.gpus[i], i);
	}
	char v[128] = "";
	jstr(root, "initError", v, sizeof v);
	const char *e = getenv("GPUNODE_NVML_STUB_INIT");
	if (e && *e)
		snprintf(v, sizeof v, "%s", e);
	S.initError = *v ? errorByName(v) : NVML_SUCCESS;
	jstr(root, "blockCall", S.block, sizeof S.block);
	e = getenv("GPUNODE_NVML_STUB_BLOCK");
	if (e && *e)
		snprintf(S.block, sizeof S.block, "%s", e);
	S.blockGPU = -1;
	char *colon = strchr(S.block, ':');
	if (colon) {
		*colon = 0;
		S.blockGPU = atoi(colon + 1);
	}
	S.loaded = 1;
	return NVML_SUCCESS; /* the parsed tree is kept: it is small and lives as long as the process */
}

/* ---- helpers ---- */

typedef struct gpu *nvmlDevice_t;
typedef void *nvmlGpuInstance_t;
typedef void *nvmlComputeInstance_t;

/* enter blocks forever when call (for device d, or any) is the blocked one. */
static void enter(const char *call, const struct gpu *d) {
	if (!S.block[0] || strcmp(S.block, call) != 0)
		return;
	if (S.blockGPU >= 0 && (!d || d->index != S.blockGPU))
		return;
	for (;;)
		pause();
}

#define CHECK_INIT()                                                                                                   \
	do {                                                                                                           \
		if (S.inits <= 0)                                                                                      \
			return NVML_ERROR_UNINITIALIZED;                                                               \
	} while (0)

static int validDev(nvmlDevice_t d) {
	return d && d >= &S.gpus[0] && d < &S.gpus[S.ngpus];
}

#define DEVICE(call)                                                                                                   \
	CHECK_INIT();                                                                                                  \
	if (!validDev(dev))                                                                                            \
		return NVML_ERROR_INVALID_ARGUMENT;                                                                    \
	enter(call, dev)

#define OUT(p)                                                                                                         \
	do {                                                                                                           \
		if (!(p))                                                                                              \
			return NVML_ERROR_INVALID_ARGUMENT;                                                            \
	} while (0)

static nvmlReturn_t copyString(char *dst, unsigned int n, const char *src) {
	OUT(dst);
	if (strlen(src) + 1 > n)
		return NVML_ERROR_INSUFFICIENT_SIZE;
	memcpy(dst, src, strlen(src) + 1);
	return NVML_SUCCESS;
}

static void fillPci(nvmlPciInfo_t *p, const char *busId) {
	unsigned int dom = 0, bus = 0, dev = 0;
	memset(p, 0, sizeof *p);
	parseBusId(busId, &dom, &bus, &dev);
	p->domain = dom;
	p->bus = bus;
	p->device = dev;
	/* NVML's bus ids have an 8-digit domain, upper-case hex. */
	snprintf(p->busId, sizeof p->busId, "%08X:%02X:%02X.0", dom, bus, dev);
	snprintf(p->busIdLegacy, sizeof p->busIdLegacy, "%04X:%02X:%02X.0", dom & 0xffff, bus, dev);
}

/* ---- init and system ---- */

nvmlReturn_t nvmlInit_v2(void) {
	if (!S.loaded) {
		nvmlReturn_t r = load();
		if (r != NVML_SUCCESS)
			return r;
	}
	enter("nvmlInit", NULL);
	enter("nvmlInit_v2", NULL);
	if (S.initError != NVML_SUCCESS)
		return S.initError;
	S.inits++;
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlInit(void) { return nvmlInit_v2(); }
nvmlReturn_t nvmlInitWithFlags(unsigned int flags) {
	(void)flags;
	return nvmlInit_v2();
}

nvmlReturn_t nvmlShutdown(void) {
	CHECK_INIT();
	S.inits--;
	return NVML_SUCCESS;
}

const char *nvmlErrorString(nvmlReturn_t r) {
	switch (r) {
	case NVML_SUCCESS: return "Success";
	case NVML_ERROR_UNINITIALIZED: return "Uninitialized";
	case NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
	case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
	case NVML_ERROR_NO_PERMISSION: return "Insufficient Permissions";
	case NVML_ERROR_ALREADY_INITIALIZED: return "Already Initialized";
	case NVML_ERROR_NOT_FOUND: return "Not Found";
	case NVML_ERROR_INSUFFICIENT_SIZE: return "Insufficient Size";
	case NVML_ERROR_INSUFFICIENT_POWER: return "Insufficient External Power";
	case NVML_ERROR_DRIVER_NOT_LOADED: return "Driver Not Loaded";
	case NVML_ERROR_TIMEOUT: return "Timeout";
	case NVML_ERROR_IRQ_ISSUE: return "Interrupt Request Issue";
	case NVML_ERROR_LIBRARY_NOT_FOUND: return "NVML Shared Library Not Found";
	case NVML_ERROR_FUNCTION_NOT_FOUND: return "Function Not Found";
	case NVML_ERROR_CORRUPTED_INFOROM: return "Corrupted infoROM";
	case NVML_ERROR_GPU_IS_LOST: return "GPU is lost";
	case NVML_ERROR_RESET_REQUIRED: return "GPU requires reset";
	case NVML_ERROR_OPERATING_SYSTEM: return "GPU access blocked by the operating system";
	case NVML_ERROR_LIB_RM_VERSION_MISMATCH: return "Driver/library version mismatch";
	case NVML_ERROR_IN_USE: return "In use by another client";
	case NVML_ERROR_MEMORY: return "Insufficient Memory";
	case NVML_ERROR_NO_DATA: return "No data";
	default: return "Unknown Error";
	}
}

nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned int length) {
	CHECK_INIT();
	enter("nvmlSystemGetDriverVersion", NULL);
	return copyString(version, length, S.driverVersion);
}

nvmlReturn_t nvmlSystemGetNVMLVersion(char *version, unsigned int length) {
	CHECK_INIT();
	return copyString(version, length, S.nvmlVersion);
}

nvmlReturn_t nvmlSystemGetCudaDriverVersion(int *v) {
	CHECK_INIT();
	OUT(v);
	enter("nvmlSystemGetCudaDriverVersion", NULL);
	*v = S.cudaVersion;
	return NVML_SUCCESS;
}
nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *v) { return nvmlSystemGetCudaDriverVersion(v); }

/* ---- device handles ---- */

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *n) {
	CHECK_INIT();
	OUT(n);
	enter("nvmlDeviceGetCount", NULL);
	*n = (unsigned int)S.ngpus;
	return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetCount(unsigned int *n) { return nvmlDeviceGetCount_v2(n); }

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int i, nvmlDevice_t *dev) {
	CHECK_INIT();
	OUT(dev);
	if (i >= (unsigned int)S.ngpus)
		return NVML_ERROR_INVALID_ARGUMENT;
	enter("nvmlDeviceGetHandleByIndex", &S.gpus[i]);
	*dev = &S.gpus[i];
	return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int i, nvmlDevice_t *dev) {
	return nvmlDeviceGetHandleByIndex_v2(i, dev);
}

nvmlReturn_t nvmlDeviceGetHandleByUUID(const char *uuid, nvmlDevice_t *dev) {
	CHECK_INIT();
	OUT(uuid && dev);
	for (int i = 0; i < S.ngpus; i++)
		if (!strcmp(S.gpus[i].uuid, uuid)) {
			*dev = &S.gpus[i];
			return NVML_SUCCESS;
		}
	return NVML_ERROR_NOT_FOUND;
}

nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char *busId, nvmlDevice_t *dev) {
	CHECK_INIT();
	OUT(busId && dev);
	unsigned int d0, b0, v0;
	if (parseBusId(busId, &d0, &b0, &v0) != 0)
		return NVML_ERROR_INVALID_ARGUMENT;
	for (int i = 0; i < S.ngpus; i++)
		if (S.gpus[i].domain == d0 && S.gpus[i].bus == b0 && S.gpus[i].dev == v0) {
			*dev = &S.gpus[i];
			return NVML_SUCCESS;
		}
	return NVML_ERROR_NOT_FOUND;
}
nvmlReturn_t nvmlDeviceGetHandleByPciBusId(const char *busId, nvmlDevice_t *dev) {
	return nvmlDeviceGetHandleByPciBusId_v2(busId, dev);
}

/* ---- identity ---- */

nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t dev, unsigned int *i) {
	DEVICE("nvmlDeviceGetIndex");
	OUT(i);
	*i = (unsigned int)dev->index;
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t dev, char *uuid, unsigned int length) {
	DEVICE("nvmlDeviceGetUUID");
	return copyString(uuid, length, dev->uuid);
}

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t dev, char *name, unsigned int length) {
	DEVICE("nvmlDeviceGetName");
	return copyString(name, length, dev->name);
}

nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t dev, nvmlPciInfo_t *p) {
	DEVICE("nvmlDeviceGetPciInfo");
	OUT(p);
	fillPci(p, dev->busId);
	p->pciDeviceId = dev->pciDeviceId;
	p->pciSubSystemId = dev->pciSubSystemId;
	return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetPciInfo_v2(nvmlDevice_t dev, nvmlPciInfo_t *p) { return nvmlDeviceGetPciInfo_v3(dev, p); }
nvmlReturn_t nvmlDeviceGetPciInfo(nvmlDevice_t dev, nvmlPciInfo_t *p) { return nvmlDeviceGetPciInfo_v3(dev, p); }

nvmlReturn_t nvmlDeviceGetArchitecture(nvmlDevice_t dev, unsigned int *arch) {
	DEVICE("nvmlDeviceGetArchitecture");
	OUT(arch);
	*arch = dev->arch;
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t dev, int *major, int *minor) {
	DEVICE("nvmlDeviceGetCudaComputeCapability");
	OUT(major && minor);
	*major = dev->ccMajor;
	*minor = dev->ccMinor;
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetAttributes_v2(nvmlDevice_t dev, nvmlDeviceAttributes_t *a) {
	DEVICE("nvmlDeviceGetAttributes");
	OUT(a);
	memset(a, 0, sizeof *a);
	a->multiprocessorCount = dev->smCount;
	a->memorySizeMB = dev->memTotal >> 20;
	return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetAttributes(nvmlDevice_t dev, nvmlDeviceAttributes_t *a) {
	return nvmlDeviceGetAttributes_v2(dev, a);
}

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t dev, nvmlMemory_t *m) {
	DEVICE("nvmlDeviceGetMemoryInfo");
	OUT(m);
	m->total = dev->memTotal;
	m->used = dev->memUsed;
	m->free = dev->memTotal - dev->memUsed;
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t dev, nvmlUtilization_t *u) {
	DEVICE("nvmlDeviceGetUtilizationRates");
	OUT(u);
	u->gpu = dev->utilGpu;
	u->memory = dev->utilMem;
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetNumaNodeId(nvmlDevice_t dev, unsigned int *node) {
	DEVICE("nvmlDeviceGetNumaNodeId");
	OUT(node);
	if (dev->numaNode < 0)
		return NVML_ERROR_NOT_SUPPORTED;
	*node = (unsigned int)dev->numaNode;
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetCpuAffinity(nvmlDevice_t dev, unsigned int cpuSetSize, unsigned long *cpuSet) {
	DEVICE("nvmlDeviceGetCpuAffinity");
	OUT(cpuSet);
	for (unsigned int w = 0; w < cpuSetSize; w++) {
		/* unsigned long is 64 bits on the Linux targets gpunode supports */
		cpuSet[w] = w < 16 ? (unsigned long)dev->affinity[w] : 0;
	}
	return NVML_SUCCESS;
}

/* ---- modes ---- */

nvmlReturn_t nvmlDeviceGetPersistenceMode(nvmlDevice_t dev, int *mode) {
	DEVICE("nvmlDeviceGetPersistenceMode");
	OUT(mode);
	*mode = dev->persistence;
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceSetPersistenceMode(nvmlDevice_t dev, int mode) {
	DEVICE("nvmlDeviceSetPersistenceMode");
	if (mode != 0 && mode != 1)
		return NVML_ERROR_INVALID_ARGUMENT;
	dev->persistence = mode;
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetComputeMode(nvmlDevice_t dev, int *mode) {
	DEVICE("nvmlDeviceGetComputeMode");
	OUT(mode);
	*mode = dev->computeMode;
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t dev, unsigned int *current, unsigned int *pending) {
	DEVICE("nvmlDeviceGetMigMode");
	OUT(current && pending);
	*current = (unsigned int)dev->migCurrent;
	*pending = (unsigned int)dev->migPending;
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceSetMigMode(nvmlDevice_t dev, unsigned int mode, nvmlReturn_t *activationStatus) {
	DEVICE("nvmlDeviceSetMigMode");
	OUT(activationStatus);
	if (mode > 1)
		return NVML_ERROR_INVALID_ARGUMENT;
	dev->migPending = (int)mode;
	*activationStatus = NVML_ERROR_RESET_REQUIRED; /* takes effect after a GPU reset, as on real H100s */
	return NVML_SUCCESS;
}

/* ---- clocks ---- */

static nvmlReturn_t clockOf(const unsigned int *set, int type, unsigned int *mhz) {
	OUT(mhz);
	if (type < 0 || type > 3)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (set[type] == 0)
		return NVML_ERROR_NOT_SUPPORTED;
	*mhz = set[type];
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t dev, int type, unsigned int *mhz) {
	DEVICE("nvmlDeviceGetClockInfo");
	return clockOf(dev->clocks, type, mhz);
}

nvmlReturn_t nvmlDeviceGetApplicationsClock(nvmlDevice_t dev, int type, unsigned int *mhz) {
	DEVICE("nvmlDeviceGetApplicationsClock");
	return clockOf(dev->appClocks, type, mhz);
}

nvmlReturn_t nvmlDeviceGetDefaultApplicationsClock(nvmlDevice_t dev, int type, unsigned int *mhz) {
	DEVICE("nvmlDeviceGetDefaultApplicationsClock");
	return clockOf(dev->defAppClocks, type, mhz);
}

nvmlReturn_t nvmlDeviceGetMaxClockInfo(nvmlDevice_t dev, int type, unsigned int *mhz) {
	DEVICE("nvmlDeviceGetMaxClockInfo");
	return clockOf(dev->maxClocks, type, mhz);
}

nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t dev, unsigned long long *reasons) {
	DEVICE("nvmlDeviceGetCurrentClocksEventReasons");
	OUT(reasons);
	*reasons = dev->eventReasons;
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_t dev, unsigned long long *reasons) {
	DEVICE("nvmlDeviceGetCurrentClocksThrottleReasons");
	OUT(reasons);
	*reasons = dev->eventReasons;
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceSetGpuLockedClocks(nvmlDevice_t dev, unsigned int minMHz, unsigned int maxMHz) {
	DEVICE("nvmlDeviceSetGpuLockedClocks");
	if (minMHz > maxMHz || maxMHz > dev->maxClocks[0])
		return NVML_ERROR_INVALID_ARGUMENT;
	dev->clocks[0] = dev->clocks[1] = maxMHz;
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceResetGpuLockedClocks(nvmlDevice_t dev) {
	DEVICE("nvmlDeviceResetGpuLockedClocks");
	return NVML_SUCCESS;
}

/* ---- memory health ---- */

nvmlReturn_t nvmlDeviceGetEccMode(nvmlDevice_t dev, int *current, int *pending) {
	DEVICE("nvmlDeviceGetEccMode");
	OUT(current && pending);
	*current = dev->eccCurrent;
	*pending = dev->eccPending;
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t dev, int errorType, int counterType, unsigned long long *count) {
	DEVICE("nvmlDeviceGetTotalEccErrors");
	OUT(count);
	if (errorType < 0 || errorType > 1 || counterType < 0 || counterType > 1)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (!dev->eccCurrent)
		return NVML_ERROR_NOT_SUPPORTED;
	*count = dev->ecc[errorType][counterType];
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetRemappedRows(nvmlDevice_t dev, unsigned int *corr, unsigned int *unc, unsigned int *pending,
				       unsigned int *failure) {
	DEVICE("nvmlDeviceGetRemappedRows");
	OUT(corr && unc && pending && failure);
	*corr = dev->remap[0];
	*unc = dev->remap[1];
	*pending = dev->remap[2];
	*failure = dev->remap[3];
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetRetiredPages(nvmlDevice_t dev, int cause, unsigned int *pageCount, unsigned long long *addresses) {
	DEVICE("nvmlDeviceGetRetiredPages");
	OUT(pageCount);
	if (cause < 0 || cause > 1)
		return NVML_ERROR_INVALID_ARGUMENT;
	unsigned int have = dev->retired[cause];
	if (*pageCount < have) {
		*pageCount = have;
		return NVML_ERROR_INSUFFICIENT_SIZE;
	}
	for (unsigned int i = 0; i < have && addresses; i++)
		addresses[i] = 0x1000ULL * (i + 1);
	*pageCount = have;
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetRetiredPagesPendingStatus(nvmlDevice_t dev, int *pending) {
	DEVICE("nvmlDeviceGetRetiredPagesPendingStatus");
	OUT(pending);
	*pending = dev->retiredPending;
	return NVML_SUCCESS;
}

/* ---- power, PCIe, temperature ---- */

nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t dev, unsigned int *mw) {
	DEVICE("nvmlDeviceGetPowerUsage");
	OUT(mw);
	*mw = dev->powerMW;
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t dev, unsigned int *mw) {
	DEVICE("nvmlDeviceGetEnforcedPowerLimit");
	OUT(mw);
	*mw = dev->powerLimitMW;
	return NVML_SUCCESS;
}

static nvmlReturn_t pcieOf(nvmlDevice_t dev, int k, unsigned int *v) {
	OUT(v);
	if (!dev->pcie[k])
		return NVML_ERROR_NOT_SUPPORTED;
	*v = dev->pcie[k];
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetCurrPcieLinkGeneration(nvmlDevice_t dev, unsigned int *v) {
	DEVICE("nvmlDeviceGetCurrPcieLinkGeneration");
	return pcieOf(dev, 0, v);
}
nvmlReturn_t nvmlDeviceGetMaxPcieLinkGeneration(nvmlDevice_t dev, unsigned int *v) {
	DEVICE("nvmlDeviceGetMaxPcieLinkGeneration");
	return pcieOf(dev, 1, v);
}
nvmlReturn_t nvmlDeviceGetCurrPcieLinkWidth(nvmlDevice_t dev, unsigned int *v) {
	DEVICE("nvmlDeviceGetCurrPcieLinkWidth");
	return pcieOf(dev, 2, v);
}
nvmlReturn_t nvmlDeviceGetMaxPcieLinkWidth(nvmlDevice_t dev, unsigned int *v) {
	DEVICE("nvmlDeviceGetMaxPcieLinkWidth");
	return pcieOf(dev, 3, v);
}

nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t dev, int sensor, unsigned int *c) {
	DEVICE("nvmlDeviceGetTemperature");
	OUT(c);
	if (sensor != 0)
		return NVML_ERROR_INVALID_ARGUMENT;
	*c = dev->tempC;
	return NVML_SUCCESS;
}

/* ---- NVLink and fabric ---- */

nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t dev, unsigned int link, int *active) {
	DEVICE("nvmlDeviceGetNvLinkState");
	OUT(active);
	if (dev->nlinks == 0)
		return NVML_ERROR_NOT_SUPPORTED;
	if (link >= (unsigned int)dev->nlinks)
		return NVML_ERROR_INVALID_ARGUMENT;
	*active = dev->linkActive[link];
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo_v2(nvmlDevice_t dev, unsigned int link, nvmlPciInfo_t *p) {
	DEVICE("nvmlDeviceGetNvLinkRemotePciInfo");
	OUT(p);
	if (link >= (unsigned int)dev->nlinks || !dev->linkRemote[link][0])
		return NVML_ERROR_INVALID_ARGUMENT;
	fillPci(p, dev->linkRemote[link]);
	return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo(nvmlDevice_t dev, unsigned int link, nvmlPciInfo_t *p) {
	return nvmlDeviceGetNvLinkRemotePciInfo_v2(dev, link, p);
}

nvmlReturn_t nvmlDeviceGetNvLinkErrorCounter(nvmlDevice_t dev, unsigned int link, int counter, unsigned long long *v) {
	DEVICE("nvmlDeviceGetNvLinkErrorCounter");
	OUT(v);
	if (link >= (unsigned int)dev->nlinks || counter < 0 || counter > 3)
		return NVML_ERROR_INVALID_ARGUMENT;
	*v = dev->linkErrors[link][counter];
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetGpuFabricInfo(nvmlDevice_t dev, nvmlGpuFabricInfo_t *f) {
	DEVICE("nvmlDeviceGetGpuFabricInfo");
	OUT(f);
	if (!dev->fabric)
		return NVML_ERROR_NOT_SUPPORTED;
	memset(f, 0, sizeof *f);
	f->state = dev->fabricState;
	f->status = dev->fabricStatus;
	return NVML_SUCCESS;
}

/* ---- MIG: the stub's GPUs have MIG off and no instances ---- */

nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t dev, unsigned int *n) {
	DEVICE("nvmlDeviceGetMaxMigDeviceCount");
	OUT(n);
	*n = dev->migCurrent ? 7 : 0;
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t dev, unsigned int i, nvmlDevice_t *mig) {
	DEVICE("nvmlDeviceGetMigDeviceHandleByIndex");
	(void)i;
	OUT(mig);
	return NVML_ERROR_NOT_FOUND;
}

/* The MIG device calls below take a MIG device handle, which the stub never
 * hands out: any handle is an invalid argument. */
nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t dev, unsigned int *id) {
	(void)dev;
	(void)id;
	CHECK_INIT();
	return NVML_ERROR_INVALID_ARGUMENT;
}
nvmlReturn_t nvmlDeviceGetComputeInstanceId(nvmlDevice_t dev, unsigned int *id) {
	(void)dev;
	(void)id;
	CHECK_INIT();
	return NVML_ERROR_INVALID_ARGUMENT;
}

static nvmlReturn_t migOff(nvmlDevice_t dev) {
	return dev->migCurrent ? NVML_ERROR_NOT_FOUND : NVML_ERROR_NOT_SUPPORTED;
}

nvmlReturn_t nvmlDeviceGetGpuInstanceById(nvmlDevice_t dev, unsigned int id, nvmlGpuInstance_t *gi) {
	DEVICE("nvmlDeviceGetGpuInstanceById");
	(void)id;
	OUT(gi);
	return migOff(dev);
}

nvmlReturn_t nvmlDeviceGetGpuInstanceProfileInfo(nvmlDevice_t dev, unsigned int profile, void *info) {
	DEVICE("nvmlDeviceGetGpuInstanceProfileInfo");
	(void)profile;
	OUT(info);
	return NVML_ERROR_NOT_SUPPORTED;
}

nvmlReturn_t nvmlDeviceGetGpuInstancePossiblePlacements_v2(nvmlDevice_t dev, unsigned int profileId, void *placements,
							   unsigned int *count) {
	DEVICE("nvmlDeviceGetGpuInstancePossiblePlacements");
	(void)profileId;
	(void)placements;
	OUT(count);
	return NVML_ERROR_NOT_SUPPORTED;
}
nvmlReturn_t nvmlDeviceGetGpuInstancePossiblePlacements(nvmlDevice_t dev, unsigned int profileId, void *placements,
							unsigned int *count) {
	return nvmlDeviceGetGpuInstancePossiblePlacements_v2(dev, profileId, placements, count);
}

nvmlReturn_t nvmlDeviceCreateGpuInstanceWithPlacement(nvmlDevice_t dev, unsigned int profileId, const void *placement,
						      nvmlGpuInstance_t *gi) {
	DEVICE("nvmlDeviceCreateGpuInstanceWithPlacement");
	(void)profileId;
	(void)placement;
	OUT(gi);
	return NVML_ERROR_NOT_SUPPORTED;
}

nvmlReturn_t nvmlDeviceCreateGpuInstance(nvmlDevice_t dev, unsigned int profileId, nvmlGpuInstance_t *gi) {
	DEVICE("nvmlDeviceCreateGpuInstance");
	(void)profileId;
	OUT(gi);
	return NVML_ERROR_NOT_SUPPORTED;
}

nvmlReturn_t nvmlDeviceGetGpuInstances(nvmlDevice_t dev, unsigned int profileId, nvmlGpuInstance_t *gis,
				       unsigned int *count) {
	DEVICE("nvmlDeviceGetGpuInstances");
	(void)profileId;
	(void)gis;
	OUT(count);
	if (!dev->migCurrent)
		return NVML_ERROR_NOT_SUPPORTED;
	*count = 0;
	return NVML_SUCCESS;
}

/* GPU and compute instance handles are never handed out (see above). */
nvmlReturn_t nvmlGpuInstanceGetInfo(nvmlGpuInstance_t gi, void *info) {
	(void)gi;
	(void)info;
	CHECK_INIT();
	return NVML_ERROR_INVALID_ARGUMENT;
}
nvmlReturn_t nvmlGpuInstanceDestroy(nvmlGpuInstance_t gi) {
	(void)gi;
	CHECK_INIT();
	return NVML_ERROR_INVALID_ARGUMENT;
}
nvmlReturn_t nvmlGpuInstanceGetComputeInstanceProfileInfo(nvmlGpuInstance_t gi, unsigned int profile,
							  unsigned int engProfile, void *info) {
	(void)gi;
	(void)profile;
	(void)engProfile;
	(void)info;
	CHECK_INIT();
	return NVML_ERROR_INVALID_ARGUMENT;
}
nvmlReturn_t nvmlGpuInstanceCreateComputeInstance(nvmlGpuInstance_t gi, unsigned int profileId,
						  nvmlComputeInstance_t *ci) {
	(void)gi;
	(void)profileId;
	(void)ci;
	CHECK_INIT();
	return NVML_ERROR_INVALID_ARGUMENT;
}
nvmlReturn_t nvmlGpuInstanceGetComputeInstances(nvmlGpuInstance_t gi, unsigned int profileId,
						nvmlComputeInstance_t *cis, unsigned int *count) {
	(void)gi;
	(void)profileId;
	(void)cis;
	(void)count;
	CHECK_INIT();
	return NVML_ERROR_INVALID_ARGUMENT;
}
nvmlReturn_t nvmlComputeInstanceDestroy(nvmlComputeInstance_t ci) {
	(void)ci;
	CHECK_INIT();
	return NVML_ERROR_INVALID_ARGUMENT;
}
nvmlReturn_t nvmlComputeInstanceGetInfo_v2(nvmlComputeInstance_t ci, void *info) {
	(void)ci;
	(void)info;
	CHECK_INIT();
	return NVML_ERROR_INVALID_ARGUMENT;
}
nvmlReturn_t nvmlComputeInstanceGetInfo(nvmlComputeInstance_t ci, void *info) {
	return nvmlComputeInstanceGetInfo_v2(ci, info);
}
