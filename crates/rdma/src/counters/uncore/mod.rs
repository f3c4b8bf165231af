/*!
CPU-side bus traffic from the perf uncore PMUs (linux-counters.md 6): bytes through each
socket's memory channels, over the inter-socket links, and into and out of each PCIe root
bus (IIO stack). These are the links of Hostping 3.2 that no RNIC or GPU counter sees.

# Discovery

Every PMU the kernel registered is a folder `sys/bus/event_source/devices/<pmu>/`
([`pmu_names`], [`Pmu::load`]):

| file | meaning | policy |
|---|---|---|
| `type` | decimal `perf_event_attr.type` | required |
| `cpumask` | cpulist, one CPU per socket or die (`0,64`); open one counter per CPU | optional (core PMUs have none) |
| `format/<field>` | the config bits of a field: `config:0-7`, `config:8-15,24-27`, `config1:0-31` ([`FormatField`]) | required, each |
| `events/<name>` | an alias: `event=0x04,umask=0x03` ([`parse_terms`]) | required, each |
| `events/<name>.scale`, `.unit` | count x scale = value in unit (`6.103515625e-5` `MiB`: 64 B) | optional |
| `die<X>` (`uncore_iio_<n>`) | `SSSS:BB`, the root bus of stack n on die X ([`RootBus`]; Linux 5.10+, `Documentation/ABI/testing/sysfs-devices-mapping`) | optional: a stack without PCIe has none |
| `sys/devices/system/cpu/cpu<N>/topology/physical_package_id` | the socket of a cpumask CPU | required for a PMU that is counted |

A config word is built by writing each term's value into its field's bits, lowest value bit
into the lowest field bit, as perf does ([`Pmu::config`]).

# Metrics

| [`BusMetric`] | PMU | event | bytes per count |
|---|---|---|---|
| `MemoryRead`/`MemoryWrite{socket}` | Intel `uncore_imc_<n>` | aliases `cas_count_read`, `cas_count_write` (the kernel's encoding for this CPU) | `.scale` x `.unit` (64) |
| same | AMD `amd_umc_<n>` (Linux 6.8+, Zen 4) | `event=0x0a,rdwrmask=1` / `2` | 64 |
| `InterSocketTx{socket, pmu}` | Intel `uncore_upi_<n>` | `UNC_UPI_TxL_FLITS.ALL_DATA` `event=0x02,umask=0x0f` | 64/9 |
| `RootPortIn`/`RootPortOut{root_bus}` | Intel `uncore_iio_free_running_<n>` | aliases `bw_in_port<k>` / `bw_out_port<k>`, summed over the stack's ports | `.scale` x `.unit` (4 or 32) |

A socket is the `physical_package_id` of the cpumask CPU that counts it. The free-running
IIO PMU n counts the same stack as `uncore_iio_<n>`, whose `die<X>` files name its root bus
(the kernel sets the mapping attributes on `uncore_iio` only, arch/x86/events/intel/
uncore_snbep.c; a free-running PMU's own `die<X>` files are used if it has any); the k-th CPU of a cpumask serves die k (the
cpumask holds the first CPU of each die, and dies are numbered in the order their first CPU
came up). Where a PMU is missing the metric is a [`Gap`] saying why: virtual machines have
no uncore PMUs at all (only `cpu`, `software`, `tracepoint`, `breakpoint`, `kprobe`,
`uprobe`, maybe `msr`), AMD has no perf PMU for xGMI or root ports, Ice Lake counts root
ports inbound only.

# Counting

[`Counter::open`] is `perf_event_open(attr, pid -1, cpu, group -1, PERF_FLAG_FD_CLOEXEC)`,
system-wide on one CPU, with `read_format` `TOTAL_TIME_ENABLED | TOTAL_TIME_RUNNING` so a
multiplexed count can be scaled by enabled/running. That needs
`/proc/sys/kernel/perf_event_paranoid` <= 0 or `CAP_PERFMON` (`CAP_SYS_ADMIN` before Linux
5.8); without it the whole monitor is [`Unavailable`], naming the setting's value. Hardware
counters are 48 bits wide and wrap, so [`rates`] takes differences modulo 2^48 (the
kernel's 64-bit running totals give the same difference, as no interval moves 2^48 counts).
*/

mod counting;
mod discovery;
mod events;

pub(crate) use counting::scaled;
pub use counting::{
    open_failure, rates, BusRate, BusReading, Counter, CounterValue, SampledCounter, UncoreMonitor,
    UncoreSample,
};
pub use discovery::{
    parse_cpulist, parse_terms, pmu_names, ConfigError, ConfigWord, EventAlias, EventConfig,
    FormatField, Pmu, RootBus, Term,
};
pub use events::{plan, BusFamily, BusMetric, CounterSpec, Gap, Plan, PlanError, Unavailable};

/// Where the kernel lists its PMUs, below the root.
const DEVICES: &str = "sys/bus/event_source/devices";
