/*
 * A stand-in for libnvidia-ml.so.1, built by tests/counters_nvml.rs with
 * `cc -shared -fPIC` so that rdma::counters::nvml is exercised without a GPU.
 * Names, prototypes, enum values and struct layouts are those of nvml.h.
 *
 * Two GPUs:
 *   0: 00000000:3B:00.0, utilisation 37 % / 12 %, PCIe throughput NOT_SUPPORTED,
 *      Gen4 x16 of Gen4 x16, 3 replays.
 *   1: 00000000:B1:00.0, utilisation GPU_IS_LOST, TX 123456 / RX 654321 KB/s,
 *      Gen3 x8 of Gen4 x16, 0 replays.
 * Build flags:
 *   -DFAKE_INIT_RC=9       nvmlInit_v2 fails with DRIVER_NOT_LOADED
 *   -DFAKE_OMIT_REPLAY     nvmlDeviceGetPcieReplayCounter is not defined
 * Counters a test can read through fake_nvml_calls(): "init", "shutdown", "throughput".
 */
#include <stdio.h>
#include <string.h>

typedef int nvmlReturn_t;
#define NVML_SUCCESS 0
#define NVML_ERROR_UNINITIALIZED 1
#define NVML_ERROR_INVALID_ARGUMENT 2
#define NVML_ERROR_NOT_SUPPORTED 3
#define NVML_ERROR_NOT_FOUND 6
#define NVML_ERROR_INSUFFICIENT_SIZE 7
#define NVML_ERROR_DRIVER_NOT_LOADED 9
#define NVML_ERROR_GPU_IS_LOST 15

#define NVML_TOPOLOGY_INTERNAL 0
#define NVML_TOPOLOGY_SYSTEM 50

typedef struct nvmlDevice_st *nvmlDevice_t;

typedef struct nvmlPciInfo_st {
    char busIdLegacy[16];
    unsigned int domain;
    unsigned int bus;
    unsigned int device;
    unsigned int pciDeviceId;
    unsigned int pciSubSystemId;
    char busId[32];
} nvmlPciInfo_t;

typedef struct nvmlUtilization_st {
    unsigned int gpu;
    unsigned int memory;
} nvmlUtilization_t;

struct nvmlDevice_st {
    const char *name;
    unsigned int bus;
    nvmlReturn_t util_rc;
    unsigned int util_gpu, util_mem;
    nvmlReturn_t tput_rc;
    unsigned int tx, rx;
    unsigned int gen_cur, gen_max, width_cur, width_max, replays;
};

static struct nvmlDevice_st devices[2] = {
    {"NVIDIA A100-SXM4-80GB", 0x3b, NVML_SUCCESS, 37, 12, NVML_ERROR_NOT_SUPPORTED, 0, 0,
     4, 4, 16, 16, 3},
    {"NVIDIA A100-SXM4-80GB", 0xb1, NVML_ERROR_GPU_IS_LOST, 0, 0, NVML_SUCCESS, 123456,
     654321, 3, 4, 8, 16, 0},
};

static int initialised, inits, shutdowns, throughputs;

int fake_nvml_calls(const char *what) {
    if (!strcmp(what, "init")) return inits;
    if (!strcmp(what, "shutdown")) return shutdowns;
    if (!strcmp(what, "throughput")) return throughputs;
    return -1;
}

const char *nvmlErrorString(nvmlReturn_t rc) {
    switch (rc) {
    case NVML_SUCCESS: return "Success";
    case NVML_ERROR_UNINITIALIZED: return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
    case NVML_ERROR_NOT_FOUND: return "Not Found";
    case NVML_ERROR_INSUFFICIENT_SIZE: return "Insufficient Size";
    case NVML_ERROR_DRIVER_NOT_LOADED: return "Driver Not Loaded";
    case NVML_ERROR_GPU_IS_LOST: return "GPU is lost";
    default: return "Unknown Error";
    }
}

nvmlReturn_t nvmlInit_v2(void) {
#ifdef FAKE_INIT_RC
    return FAKE_INIT_RC;
#endif
    inits++;
    initialised++;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlShutdown(void) {
    if (!initialised) return NVML_ERROR_UNINITIALIZED;
    shutdowns++;
    initialised--;
    return NVML_SUCCESS;
}

#define CHECK_DEVICE(d)                                                 \
    do {                                                                \
        if (!initialised) return NVML_ERROR_UNINITIALIZED;              \
        if ((d) != &devices[0] && (d) != &devices[1])                   \
            return NVML_ERROR_INVALID_ARGUMENT;                         \
    } while (0)

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *count) {
    if (!initialised) return NVML_ERROR_UNINITIALIZED;
    *count = 2;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device) {
    if (!initialised) return NVML_ERROR_UNINITIALIZED;
    if (index >= 2) return NVML_ERROR_INVALID_ARGUMENT;
    *device = &devices[index];
    return NVML_SUCCESS;
}

/* Accepts "domain:bus:device.function" in hex, any digit count or case, as NVML does. */
nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char *busId, nvmlDevice_t *device) {
    unsigned int domain, bus, dev, fn;
    if (!initialised) return NVML_ERROR_UNINITIALIZED;
    if (sscanf(busId, "%x:%x:%x.%x", &domain, &bus, &dev, &fn) != 4)
        return NVML_ERROR_INVALID_ARGUMENT;
    for (int i = 0; i < 2; i++) {
        if (domain == 0 && bus == devices[i].bus && dev == 0 && fn == 0) {
            *device = &devices[i];
            return NVML_SUCCESS;
        }
    }
    return NVML_ERROR_NOT_FOUND;
}

nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t d, nvmlPciInfo_t *pci) {
    CHECK_DEVICE(d);
    memset(pci, 0, sizeof *pci);
    snprintf(pci->busIdLegacy, sizeof pci->busIdLegacy, "0000:%02X:00.0", d->bus);
    pci->domain = 0;
    pci->bus = d->bus;
    pci->device = 0;
    pci->pciDeviceId = 0x20b210de;
    pci->pciSubSystemId = 0x147f10de;
    snprintf(pci->busId, sizeof pci->busId, "00000000:%02X:00.0", d->bus);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t d, char *name, unsigned int length) {
    CHECK_DEVICE(d);
    if (strlen(d->name) + 1 > length) return NVML_ERROR_INSUFFICIENT_SIZE;
    strcpy(name, d->name);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t d, nvmlUtilization_t *u) {
    CHECK_DEVICE(d);
    if (d->util_rc != NVML_SUCCESS) return d->util_rc;
    u->gpu = d->util_gpu;
    u->memory = d->util_mem;
    return NVML_SUCCESS;
}

/* nvmlPcieUtilCounter_t: NVML_PCIE_UTIL_TX_BYTES 0, NVML_PCIE_UTIL_RX_BYTES 1. */
nvmlReturn_t nvmlDeviceGetPcieThroughput(nvmlDevice_t d, int counter, unsigned int *value) {
    CHECK_DEVICE(d);
    throughputs++;
    if (d->tput_rc != NVML_SUCCESS) return d->tput_rc;
    if (counter == 0) *value = d->tx;
    else if (counter == 1) *value = d->rx;
    else return NVML_ERROR_INVALID_ARGUMENT;
    return NVML_SUCCESS;
}

#define GETTER(fn, field)                                               \
    nvmlReturn_t fn(nvmlDevice_t d, unsigned int *value) {              \
        CHECK_DEVICE(d);                                                \
        *value = d->field;                                              \
        return NVML_SUCCESS;                                            \
    }

GETTER(nvmlDeviceGetCurrPcieLinkGeneration, gen_cur)
GETTER(nvmlDeviceGetMaxPcieLinkGeneration, gen_max)
GETTER(nvmlDeviceGetCurrPcieLinkWidth, width_cur)
GETTER(nvmlDeviceGetMaxPcieLinkWidth, width_max)
#ifndef FAKE_OMIT_REPLAY
GETTER(nvmlDeviceGetPcieReplayCounter, replays)
#endif

/* nvmlGpuTopologyLevel_t: the two GPUs sit on different sockets. */
nvmlReturn_t nvmlDeviceGetTopologyCommonAncestor(nvmlDevice_t a, nvmlDevice_t b, int *level) {
    CHECK_DEVICE(a);
    CHECK_DEVICE(b);
    *level = a == b ? NVML_TOPOLOGY_INTERNAL : NVML_TOPOLOGY_SYSTEM;
    return NVML_SUCCESS;
}
