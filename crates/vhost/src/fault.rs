//! Fault injection: the `--inject` grammar of DESIGN 4.2, parsed strictly against a host.
//!
//! ```text
//! degrade:<link>:<fraction>      link keeps <fraction> of its capacity (0 < f <= 1)
//! flap:<link>:<fraction>         alternates healthy / degraded to <fraction> over time
//! overload:<link>:<utilization>  other traffic occupies that share of the link (0 <= u <= 1)
//! acs:<switch>|all               ACS P2P redirect enabled on that PCIe switch (or on all)
//! ats-off:<rnic>                 ATS disabled on the RNIC
//! slow-start:<rnic>              RNIC "slow start" enabled
//! tx-window:<rnic>:<bytes>       per-QP in-flight limit on the RNIC (bytes > 0)
//! service:<rnic>:<gbps>[:<endpoint>]
//!                                service traffic received by the RNIC (gbps > 0)
//! iommu:<rnic>:<working_set_mib>[:4k|2m]
//!                                the IOMMU translates the RNIC's DMA; its active buffers span
//!                                that many MiB (> 0) in pages of that size (default 4k)
//! membw:<mem>:<fraction>         CPU cores' traffic occupies that share of the memory node's
//!                                bandwidth (0 <= f <= 1)
//! odp:<rnic>:damming|flood[:<qps>]
//!                                an application on the RNIC uses ODP memory regions and hits
//!                                that pitfall (flood only: over <qps> QPs >= 1, default 8)
//! ```
//!
//! The optional fourth field of `service` is an extension of DESIGN 4.2: it names the
//! endpoint the traffic is written to (Hostping 6 #11 and #12 steer an RNIC's traffic to one
//! memory node). Without it the traffic is spread equally over the RNIC's affinitive
//! endpoints.
//!
//! Every error is one line naming the input and the reason; [`Fault`]'s `Display` prints
//! the canonical string back, so `parse(display(f)) == f`.

use model::{limits, ComponentClass, ComponentId, HostTopology, LinkId};
use std::fmt;

/// The page size of an RNIC's DMA mappings under the IOMMU (HotNets'22 3.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PageSize {
    /// 4 KiB pages (`4k`, the default).
    K4,
    /// 2 MiB huge pages (`2m`).
    M2,
}

impl PageSize {
    /// Bytes in one page.
    pub fn bytes(self) -> u64 {
        match self {
            PageSize::K4 => model::iommu::PAGE_4K,
            PageSize::M2 => model::iommu::PAGE_2M,
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            PageSize::K4 => "4k",
            PageSize::M2 => "2m",
        }
    }
}

/// The ODP pitfall an application hits (ISPASS'21).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OdpPitfall {
    /// A page fault on a READ loses a packet, and the requester waits out the transport
    /// timeout, which firmware will not set below ~500 ms.
    Damming,
    /// With client-side ODP over many QPs, page-status updates fail across QPs and
    /// requests are retransmitted in a storm.
    Flood {
        /// QPs the application reads over, at least 1.
        qps: u32,
    },
}

/// QPs of `odp:<rnic>:flood` when the count is left out (ISPASS'21's microbenchmark sweeps
/// QPs; 8 is where its storm is well under way).
pub const FLOOD_DEFAULT_QPS: u32 = 8;

/// One injected fault (DESIGN 4.2). Build one with [`Fault::parse`], which checks it
/// against the host it will be injected into.
#[derive(Debug, Clone, PartialEq)]
pub enum Fault {
    /// The link keeps `fraction` of its capacity (Hostping 6 #1 to #5).
    Degrade {
        /// The failed link.
        link: LinkId,
        /// Share of the capacity left, in (0, 1].
        fraction: f64,
    },
    /// The link alternates between healthy and degraded to `fraction` (Hostping 6 #6): a
    /// square wave on the engine clock, degraded in odd half-periods.
    Flap {
        /// The flapping link.
        link: LinkId,
        /// Share of the capacity left while degraded, in (0, 1].
        fraction: f64,
    },
    /// Other traffic occupies `utilization` of the link, in both directions; it is fixed
    /// and does not yield to the probe (Hostping 6 #11, #12).
    Overload {
        /// The overloaded link.
        link: LinkId,
        /// Share of the capacity taken, in [0, 1].
        utilization: f64,
    },
    /// ACS P2P redirect on a PCIe switch, or on every switch when `switch` is `None`
    /// (Hostping 6 #7).
    Acs {
        /// The switch, or `None` for `acs:all`.
        switch: Option<ComponentId>,
    },
    /// ATS disabled on an RNIC (Hostping 6 #8).
    AtsOff {
        /// The RNIC.
        rnic: ComponentId,
    },
    /// RNIC "slow start" enabled (Hostping 6 #9).
    SlowStart {
        /// The RNIC.
        rnic: ComponentId,
    },
    /// Per-QP in-flight limit ("Tx window") on an RNIC (Hostping 6 #10).
    TxWindow {
        /// The RNIC.
        rnic: ComponentId,
        /// Bytes one QP may keep in flight, more than 0.
        bytes: u64,
    },
    /// Service traffic received by an RNIC and written to an endpoint (the host is busy).
    Service {
        /// The receiving RNIC.
        rnic: ComponentId,
        /// Offered rate, Gb/s, more than 0.
        gbps: f64,
        /// Where it is written; `None` spreads it over the RNIC's affinitive endpoints.
        endpoint: Option<ComponentId>,
    },
    /// The IOMMU translates the RNIC's DMA, whose active buffers span `working_set_mib` in
    /// pages of `page` (HotNets'22 3.1).
    Iommu {
        /// The RNIC.
        rnic: ComponentId,
        /// MiB the RNIC's active buffers span, more than 0.
        working_set_mib: f64,
        /// Page size of its mappings.
        page: PageSize,
    },
    /// CPU cores' memory traffic occupies `fraction` of a memory node's bandwidth
    /// (HotNets'22 3.2); it does not yield to DMA.
    MemBw {
        /// The memory node.
        mem: ComponentId,
        /// Share of the node's bandwidth taken by the cores, in [0, 1].
        fraction: f64,
    },
    /// An application on the RNIC uses ODP memory regions and hits `pitfall` (ISPASS'21).
    /// Probes never use ODP memory: only the RNIC's counters and MR state show it.
    Odp {
        /// The RNIC.
        rnic: ComponentId,
        /// Damming or flood.
        pitfall: OdpPitfall,
    },
}

/// A fault string that cannot be injected into a host, in one line.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("bad fault `{input}`: {reason}")]
pub struct FaultError {
    /// The fault string as given.
    pub input: String,
    /// What is wrong with it.
    pub reason: String,
}

/// The fault kinds, in grammar order, with their shape for error messages and help texts.
pub const KINDS: [(&str, &str); 11] = [
    ("degrade", "degrade:<link>:<fraction>"),
    ("flap", "flap:<link>:<fraction>"),
    ("overload", "overload:<link>:<utilization>"),
    ("acs", "acs:<switch>|all"),
    ("ats-off", "ats-off:<rnic>"),
    ("slow-start", "slow-start:<rnic>"),
    ("tx-window", "tx-window:<rnic>:<bytes>"),
    ("service", "service:<rnic>:<gbps>[:<endpoint>]"),
    ("iommu", "iommu:<rnic>:<working_set_mib>[:4k|2m]"),
    ("membw", "membw:<mem>:<fraction>"),
    ("odp", "odp:<rnic>:damming|flood[:<qps>]"),
];

/// How many ids an error lists before `...`.
const LISTED: usize = 8;

impl Fault {
    /// Parses one fault of the DESIGN 4.2 grammar and checks it against `host`: the link,
    /// switch, RNIC or endpoint must exist and be of the right class, and numbers must be in
    /// range.
    ///
    /// ```
    /// let host = model::builtin::load("dgx-a100").unwrap().unwrap();
    /// let f = vhost::Fault::parse("degrade:rnic0--lsw0:0.5", &host).unwrap();
    /// assert_eq!(f.to_string(), "degrade:rnic0--lsw0:0.5");
    /// let e = vhost::Fault::parse("degrade:foo:0.5", &host).unwrap_err();
    /// assert!(e.to_string().starts_with("bad fault `degrade:foo:0.5`: no link `foo` in dgx-a100"));
    /// ```
    pub fn parse(text: &str, host: &HostTopology) -> Result<Fault, FaultError> {
        let fault = parse_fields(text, host).map_err(|reason| FaultError {
            input: text.to_string(),
            reason,
        })?;
        Ok(fault)
    }

    /// Checks a fault built by hand against `host`, as [`Fault::parse`] does.
    pub fn check(&self, host: &HostTopology) -> Result<(), FaultError> {
        // Printing and parsing back runs exactly the checks of the grammar.
        Fault::parse(&self.to_string(), host).map(|_| ())
    }
}

/// Parses the faults of one host and checks them together: each setting is given at
/// most once ([`Fault::contradicts`]). The error names the later fault and the earlier one
/// it contradicts.
///
/// ```
/// let host = model::builtin::load("dgx-a100").unwrap().unwrap();
/// let both = ["degrade:gpu4--lsw4:0.5", "degrade:gpu4--lsw4:0.3"];
/// let e = vhost::parse_faults(&both, &host).unwrap_err();
/// assert!(e.to_string().starts_with(
///     "bad fault `degrade:gpu4--lsw4:0.3`: link gpu4--lsw4 already keeps a share of its capacity by `degrade:gpu4--lsw4:0.5`"));
/// ```
pub fn parse_faults<S: AsRef<str>>(
    texts: &[S],
    host: &HostTopology,
) -> Result<Vec<Fault>, FaultError> {
    let mut faults: Vec<Fault> = Vec::with_capacity(texts.len());
    for text in texts {
        let fault = Fault::parse(text.as_ref(), host)?;
        if let Some(reason) = faults.iter().find_map(|earlier| fault.contradicts(earlier)) {
            return Err(FaultError {
                input: text.as_ref().to_string(),
                reason,
            });
        }
        faults.push(fault);
    }
    Ok(faults)
}

/// What a fault sets, and on what: two faults that set the same thing contradict each
/// other, whatever their values.
#[derive(PartialEq)]
enum Setting<'a> {
    /// The share of its capacity a link keeps (`degrade`, `flap`): a link keeps one.
    Capacity(&'a LinkId),
    /// The share other traffic takes of a link (`overload`).
    Overload(&'a LinkId),
    /// ACS on a switch; `None` is every switch.
    Acs(Option<&'a ComponentId>),
    /// A setting of an RNIC, by fault kind (`ats-off`, `slow-start`, `tx-window`, `iommu`,
    /// `odp`).
    Rnic(&'static str, &'a ComponentId),
    /// Service traffic from an RNIC to an endpoint (`None`: spread).
    Service(&'a ComponentId, Option<&'a ComponentId>),
    /// The share the cores take of a memory node (`membw`).
    MemBw(&'a ComponentId),
}

impl Fault {
    fn setting(&self) -> Setting<'_> {
        match self {
            Fault::Degrade { link, .. } | Fault::Flap { link, .. } => Setting::Capacity(link),
            Fault::Overload { link, .. } => Setting::Overload(link),
            Fault::Acs { switch } => Setting::Acs(switch.as_ref()),
            Fault::AtsOff { rnic } => Setting::Rnic("ats-off", rnic),
            Fault::SlowStart { rnic } => Setting::Rnic("slow-start", rnic),
            Fault::TxWindow { rnic, .. } => Setting::Rnic("tx-window", rnic),
            Fault::Iommu { rnic, .. } => Setting::Rnic("iommu", rnic),
            Fault::Odp { rnic, .. } => Setting::Rnic("odp", rnic),
            Fault::Service { rnic, endpoint, .. } => Setting::Service(rnic, endpoint.as_ref()),
            Fault::MemBw { mem, .. } => Setting::MemBw(mem),
        }
    }

    /// Why this fault contradicts `earlier`, if it does: both set the same thing. Two
    /// `degrade` (or a `degrade` and a `flap`) on one link would leave the share of its
    /// capacity ambiguous, so each link takes one; likewise one `overload` per link, one
    /// `membw` per memory node, one of each RNIC setting per RNIC, one `service` per RNIC
    /// and endpoint (give the total), and `acs:all` covers every switch.
    pub fn contradicts(&self, earlier: &Fault) -> Option<String> {
        let (now, then) = (self.setting(), earlier.setting());
        let all_switches = matches!(
            (&now, &then),
            (Setting::Acs(None), Setting::Acs(_)) | (Setting::Acs(_), Setting::Acs(None))
        );
        if all_switches {
            return Some(format!(
                "acs:all covers every switch, and `{earlier}` is given"
            ));
        }
        if now != then {
            return None;
        }
        let what = match now {
            Setting::Capacity(link) => format!(
                "link {link} already keeps a share of its capacity by `{earlier}`: \
                 give one degrade or flap per link, with the share it keeps"
            ),
            Setting::Overload(link) => format!(
                "link {link} is already overloaded by `{earlier}`: give one overload per \
                 link, with the share all other traffic takes"
            ),
            Setting::MemBw(mem) => format!(
                "{mem} is already loaded by `{earlier}`: give one membw per memory node, \
                 with the share all cores take"
            ),
            Setting::Service(rnic, endpoint) => format!(
                "{rnic} already receives service traffic{} by `{earlier}`: give one \
                 service per RNIC and endpoint, with the total rate",
                endpoint.map_or(String::new(), |e| format!(" for {e}"))
            ),
            Setting::Rnic(kind, rnic) => {
                format!("{rnic} already has `{earlier}`: give one {kind} per RNIC")
            }
            Setting::Acs(_) => format!("`{earlier}` is already given"),
        };
        Some(what)
    }
}

fn parse_fields(text: &str, host: &HostTopology) -> Result<Fault, String> {
    let fields: Vec<&str> = text.split(':').collect();
    let kind = fields[0];
    let Some(&(_, shape)) = KINDS.iter().find(|(k, _)| *k == kind) else {
        let known: Vec<&str> = KINDS.iter().map(|(k, _)| *k).collect();
        return Err(format!(
            "unknown fault kind `{kind}` (known: {})",
            known.join(", ")
        ));
    };
    let args = &fields[1..];
    let arity = |lo: usize, hi: usize| {
        if args.len() < lo || args.len() > hi {
            Err(format!("expected `{shape}`"))
        } else {
            Ok(())
        }
    };
    Ok(match kind {
        "degrade" | "flap" | "overload" => {
            arity(2, 2)?;
            let link = link(host, args[0])?;
            if kind == "overload" {
                let utilization = number("utilization", args[1])?;
                if !(0.0..=1.0).contains(&utilization) {
                    return Err(format!("utilization must be in [0, 1], got {}", args[1]));
                }
                Fault::Overload { link, utilization }
            } else {
                let fraction = number("fraction", args[1])?;
                if !(fraction > 0.0 && fraction <= 1.0) {
                    return Err(format!("fraction must be in (0, 1], got {}", args[1]));
                }
                if kind == "degrade" {
                    Fault::Degrade { link, fraction }
                } else {
                    Fault::Flap { link, fraction }
                }
            }
        }
        "acs" => {
            arity(1, 1)?;
            let switch = if args[0] == "all" {
                None
            } else {
                Some(component(host, args[0], Class::Switch)?)
            };
            Fault::Acs { switch }
        }
        "ats-off" | "slow-start" => {
            arity(1, 1)?;
            let rnic = component(host, args[0], Class::Rnic)?;
            if kind == "ats-off" {
                Fault::AtsOff { rnic }
            } else {
                Fault::SlowStart { rnic }
            }
        }
        "tx-window" => {
            arity(2, 2)?;
            let rnic = component(host, args[0], Class::Rnic)?;
            let bytes = limits::whole("tx-window bytes", args[1], 1, limits::TX_WINDOW_BYTES)
                .map_err(|e| e.to_string())?;
            Fault::TxWindow { rnic, bytes }
        }
        "service" => {
            arity(2, 3)?;
            let rnic = component(host, args[0], Class::Rnic)?;
            let gbps = number("gbps", args[1])?;
            if gbps <= 0.0 {
                return Err(format!("gbps must be above 0, got {}", args[1]));
            }
            // Above the RNIC's line rate is meaningful: the wire carries line rate and the
            // senders are paused for the rest (a saturated RNIC). Only the cap is refused.
            limits::at_most("service gbps", gbps, limits::SERVICE_GBPS).map_err(cap)?;
            let endpoint = match args.get(2) {
                Some(e) => Some(component(host, e, Class::Endpoint)?),
                None => None,
            };
            Fault::Service {
                rnic,
                gbps,
                endpoint,
            }
        }
        "iommu" => {
            arity(2, 3)?;
            let rnic = component(host, args[0], Class::Rnic)?;
            let working_set_mib = number("working_set_mib", args[1])?;
            if working_set_mib <= 0.0 {
                return Err(format!("working_set_mib must be above 0, got {}", args[1]));
            }
            limits::at_most(
                "iommu working set MiB",
                working_set_mib,
                limits::IOMMU_WORKING_SET_MIB,
            )
            .map_err(cap)?;
            let page = match args.get(2).copied() {
                None | Some("4k") => PageSize::K4,
                Some("2m") => PageSize::M2,
                Some(other) => {
                    return Err(format!("page size must be `4k` or `2m`, got `{other}`"));
                }
            };
            Fault::Iommu {
                rnic,
                working_set_mib,
                page,
            }
        }
        "membw" => {
            arity(2, 2)?;
            let mem = component(host, args[0], Class::Memory)?;
            let fraction = number("fraction", args[1])?;
            if !(0.0..=1.0).contains(&fraction) {
                return Err(format!("fraction must be in [0, 1], got {}", args[1]));
            }
            Fault::MemBw { mem, fraction }
        }
        "odp" => {
            arity(2, 3)?;
            let rnic = component(host, args[0], Class::Rnic)?;
            let pitfall = match (args[1], args.get(2)) {
                ("damming", None) => OdpPitfall::Damming,
                ("damming", Some(_)) => {
                    return Err("damming takes no QP count (only flood does)".into());
                }
                ("flood", None) => OdpPitfall::Flood {
                    qps: FLOOD_DEFAULT_QPS,
                },
                ("flood", Some(q)) => {
                    let qps = limits::whole("odp flood QPs", q, 1, limits::ODP_FLOOD_QPS)
                        .map_err(|e| e.to_string())?;
                    OdpPitfall::Flood {
                        qps: u32::try_from(qps).expect("the cap fits a u32"),
                    }
                }
                (other, _) => {
                    return Err(format!(
                        "pitfall must be `damming` or `flood`, got `{other}`"
                    ));
                }
            };
            Fault::Odp { rnic, pitfall }
        }
        _ => unreachable!("every kind of KINDS is matched"),
    })
}

/// A value above its cap, as a reason.
fn cap(e: limits::AboveCap) -> String {
    e.to_string()
}

/// A finite number; `what` names it in the error.
fn number(what: &str, text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(v) if v.is_finite() => Ok(v),
        _ => Err(format!("{what} `{text}` is not a number")),
    }
}

/// `ids` joined, cut after [`LISTED`].
fn short_list<'a>(ids: impl Iterator<Item = &'a str>) -> String {
    let ids: Vec<&str> = ids.collect();
    let mut out = ids
        .iter()
        .take(LISTED)
        .copied()
        .collect::<Vec<_>>()
        .join(", ");
    if ids.len() > LISTED {
        out.push_str(", ...");
    }
    out
}

fn link(host: &HostTopology, name: &str) -> Result<LinkId, String> {
    let id = LinkId::from(name);
    if host.link(&id).is_some() {
        return Ok(id);
    }
    let links = short_list(host.links().iter().map(|l| l.id.as_str()));
    Err(format!(
        "no link `{name}` in {} (links: {links})",
        host.name
    ))
}

/// The component classes a fault may name.
#[derive(Clone, Copy)]
enum Class {
    Switch,
    Rnic,
    Endpoint,
    Memory,
}

impl Class {
    fn admits(self, c: ComponentClass) -> bool {
        match self {
            Class::Switch => c == ComponentClass::PcieSwitch,
            Class::Rnic => c == ComponentClass::Rnic,
            Class::Endpoint => c.is_endpoint(),
            Class::Memory => c == ComponentClass::Memory,
        }
    }

    /// With its article, and the plural, for messages.
    fn names(self) -> (&'static str, &'static str) {
        match self {
            Class::Switch => ("a pcie switch", "switches"),
            Class::Rnic => ("an rnic", "rnics"),
            Class::Endpoint => ("an endpoint", "endpoints"),
            Class::Memory => ("a memory node", "memory nodes"),
        }
    }
}

/// A component class with its article, for messages.
fn a_class(c: ComponentClass) -> &'static str {
    match c {
        ComponentClass::Cpu => "a cpu",
        ComponentClass::Memory => "a memory node",
        ComponentClass::PcieSwitch => "a pcie switch",
        ComponentClass::Gpu => "a gpu",
        ComponentClass::Rnic => "an rnic",
    }
}

fn component(host: &HostTopology, name: &str, class: Class) -> Result<ComponentId, String> {
    let id = ComponentId::from(name);
    let (one, many) = class.names();
    let candidates = short_list(
        host.components()
            .iter()
            .filter(|c| class.admits(c.class()))
            .map(|c| c.id.as_str()),
    );
    match host.component(&id) {
        Some(c) if class.admits(c.class()) => Ok(id),
        Some(c) => Err(format!(
            "`{name}` is {}, not {one} ({many}: {candidates})",
            a_class(c.class())
        )),
        None => {
            let one = one.split_once(' ').map_or(one, |(_, noun)| noun);
            Err(format!(
                "no {one} `{name}` in {} ({many}: {candidates})",
                host.name
            ))
        }
    }
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Fault::Degrade { link, fraction } => write!(f, "degrade:{link}:{fraction}"),
            Fault::Flap { link, fraction } => write!(f, "flap:{link}:{fraction}"),
            Fault::Overload { link, utilization } => write!(f, "overload:{link}:{utilization}"),
            Fault::Acs { switch: Some(s) } => write!(f, "acs:{s}"),
            Fault::Acs { switch: None } => f.write_str("acs:all"),
            Fault::AtsOff { rnic } => write!(f, "ats-off:{rnic}"),
            Fault::SlowStart { rnic } => write!(f, "slow-start:{rnic}"),
            Fault::TxWindow { rnic, bytes } => write!(f, "tx-window:{rnic}:{bytes}"),
            Fault::Service {
                rnic,
                gbps,
                endpoint: None,
            } => write!(f, "service:{rnic}:{gbps}"),
            Fault::Service {
                rnic,
                gbps,
                endpoint: Some(e),
            } => write!(f, "service:{rnic}:{gbps}:{e}"),
            Fault::Iommu {
                rnic,
                working_set_mib,
                page,
            } => write!(f, "iommu:{rnic}:{working_set_mib}:{}", page.as_str()),
            Fault::MemBw { mem, fraction } => write!(f, "membw:{mem}:{fraction}"),
            Fault::Odp {
                rnic,
                pitfall: OdpPitfall::Damming,
            } => write!(f, "odp:{rnic}:damming"),
            Fault::Odp {
                rnic,
                pitfall: OdpPitfall::Flood { qps },
            } => write!(f, "odp:{rnic}:flood:{qps}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dgx() -> HostTopology {
        model::builtin::load("dgx-a100").unwrap().unwrap()
    }

    fn ok(text: &str) -> Fault {
        let f = Fault::parse(text, &dgx()).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(f.to_string(), text, "canonical form");
        f
    }

    fn err(text: &str) -> FaultError {
        let e = Fault::parse(text, &dgx()).unwrap_err();
        assert_eq!(e.input, text);
        let line = e.to_string();
        assert!(!line.contains('\n'), "{line}");
        assert!(line.starts_with(&format!("bad fault `{text}`: ")), "{line}");
        e
    }

    #[test]
    fn every_kind_parses_and_prints_back() {
        assert_eq!(
            ok("degrade:rnic0--lsw0:0.5"),
            Fault::Degrade {
                link: "rnic0--lsw0".into(),
                fraction: 0.5
            }
        );
        assert_eq!(
            ok("degrade:cpu0--cpu1:1"),
            Fault::Degrade {
                link: "cpu0--cpu1".into(),
                fraction: 1.0
            }
        );
        assert_eq!(
            ok("flap:mem1--cpu1:0.15"),
            Fault::Flap {
                link: "mem1--cpu1".into(),
                fraction: 0.15
            }
        );
        assert_eq!(
            ok("overload:cpu0--cpu1:0.95"),
            Fault::Overload {
                link: "cpu0--cpu1".into(),
                utilization: 0.95
            }
        );
        assert_eq!(
            ok("overload:mem0--cpu0:0"),
            Fault::Overload {
                link: "mem0--cpu0".into(),
                utilization: 0.0
            }
        );
        assert_eq!(
            ok("acs:lsw0"),
            Fault::Acs {
                switch: Some("lsw0".into())
            }
        );
        assert_eq!(
            ok("acs:usw3"),
            Fault::Acs {
                switch: Some("usw3".into())
            }
        );
        assert_eq!(ok("acs:all"), Fault::Acs { switch: None });
        assert_eq!(
            ok("ats-off:rnic0"),
            Fault::AtsOff {
                rnic: "rnic0".into()
            }
        );
        assert_eq!(
            ok("slow-start:rnic3"),
            Fault::SlowStart {
                rnic: "rnic3".into()
            }
        );
        assert_eq!(
            ok("tx-window:rnic0:16384"),
            Fault::TxWindow {
                rnic: "rnic0".into(),
                bytes: 16384
            }
        );
        assert_eq!(
            ok("service:rnic0:150"),
            Fault::Service {
                rnic: "rnic0".into(),
                gbps: 150.0,
                endpoint: None
            }
        );
        assert_eq!(
            ok("service:rnic2:80.5:mem1"),
            Fault::Service {
                rnic: "rnic2".into(),
                gbps: 80.5,
                endpoint: Some("mem1".into())
            }
        );
        assert_eq!(
            ok("service:rnic1:20:gpu7"),
            Fault::Service {
                rnic: "rnic1".into(),
                gbps: 20.0,
                endpoint: Some("gpu7".into())
            }
        );
    }

    #[test]
    fn host_interconnect_faults_parse_and_print_back() {
        assert_eq!(
            ok("iommu:rnic1:4096:4k"),
            Fault::Iommu {
                rnic: "rnic1".into(),
                working_set_mib: 4096.0,
                page: PageSize::K4
            }
        );
        assert_eq!(
            ok("iommu:rnic0:0.5:2m"),
            Fault::Iommu {
                rnic: "rnic0".into(),
                working_set_mib: 0.5,
                page: PageSize::M2
            }
        );
        assert_eq!(
            ok("membw:mem1:0.9"),
            Fault::MemBw {
                mem: "mem1".into(),
                fraction: 0.9
            }
        );
        assert_eq!(
            ok("membw:mem0:0"),
            Fault::MemBw {
                mem: "mem0".into(),
                fraction: 0.0
            }
        );
        assert_eq!(
            ok("odp:rnic2:damming"),
            Fault::Odp {
                rnic: "rnic2".into(),
                pitfall: OdpPitfall::Damming
            }
        );
        assert_eq!(
            ok("odp:rnic2:flood:16"),
            Fault::Odp {
                rnic: "rnic2".into(),
                pitfall: OdpPitfall::Flood { qps: 16 }
            }
        );
    }

    #[test]
    fn defaults_print_in_full() {
        let f = Fault::parse("iommu:rnic1:128", &dgx()).unwrap();
        assert_eq!(f.to_string(), "iommu:rnic1:128:4k");
        let f = Fault::parse("odp:rnic3:flood", &dgx()).unwrap();
        assert_eq!(f.to_string(), "odp:rnic3:flood:8");
    }

    #[test]
    fn host_interconnect_faults_are_strict() {
        assert!(err("iommu:rnic1")
            .reason
            .contains("expected `iommu:<rnic>:<working_set_mib>[:4k|2m]`"));
        assert!(err("iommu:rnic1:64:2m:x")
            .reason
            .contains("expected `iommu:"));
        assert!(err("iommu:gpu0:64")
            .reason
            .contains("`gpu0` is a gpu, not an rnic"));
        assert!(err("iommu:rnic1:0")
            .reason
            .contains("working_set_mib must be above 0, got 0"));
        assert!(err("iommu:rnic1:lots")
            .reason
            .contains("working_set_mib `lots` is not a number"));
        assert!(err("iommu:rnic1:64:1g")
            .reason
            .contains("page size must be `4k` or `2m`, got `1g`"));
        assert!(err("membw:mem1")
            .reason
            .contains("expected `membw:<mem>:<fraction>`"));
        let e = err("membw:cpu1:0.5");
        assert!(
            e.reason
                .starts_with("`cpu1` is a cpu, not a memory node (memory nodes: mem0, mem1)"),
            "{e}"
        );
        assert!(err("membw:mem7:0.5")
            .reason
            .starts_with("no memory node `mem7` in dgx-a100"));
        for bad in ["-0.1", "1.5"] {
            let e = err(&format!("membw:mem0:{bad}"));
            assert!(e.reason.contains("fraction must be in [0, 1]"), "{e}");
        }
        assert!(err("odp:rnic2")
            .reason
            .contains("expected `odp:<rnic>:damming|flood[:<qps>]`"));
        assert!(err("odp:rnic2:storm")
            .reason
            .contains("pitfall must be `damming` or `flood`, got `storm`"));
        assert!(err("odp:rnic2:damming:4")
            .reason
            .contains("damming takes no QP count"));
        for bad in ["0", "-1", "1.5", "many"] {
            let e = err(&format!("odp:rnic2:flood:{bad}"));
            assert!(
                e.reason
                    .contains("odp flood QPs must be a whole number from 1"),
                "{e}"
            );
        }
        assert!(err("odp:mem0:damming")
            .reason
            .contains("`mem0` is a memory node, not an rnic"));
    }

    fn any_fault_text() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        let rnic = (0u32..4).prop_map(|r| format!("rnic{r}"));
        let mem = (0u32..2).prop_map(|m| format!("mem{m}"));
        prop_oneof![
            (rnic.clone(), 1e-3f64..1e6, any::<bool>()).prop_map(|(r, ws, huge)| format!(
                "iommu:{r}:{ws}:{}",
                if huge { "2m" } else { "4k" }
            )),
            (mem, 0.0f64..=1.0).prop_map(|(m, f)| format!("membw:{m}:{f}")),
            rnic.clone().prop_map(|r| format!("odp:{r}:damming")),
            (rnic, 1u32..=4096).prop_map(|(r, q)| format!("odp:{r}:flood:{q}")),
        ]
    }

    proptest::proptest! {
        /// Display is canonical: every valid fault prints as the text it was parsed from,
        /// and parsing the printed text gives the same fault.
        #[test]
        fn new_faults_round_trip(text in any_fault_text()) {
            let host = dgx();
            let f = Fault::parse(&text, &host).unwrap();
            proptest::prop_assert_eq!(f.to_string(), text.clone());
            proptest::prop_assert_eq!(Fault::parse(&f.to_string(), &host).unwrap(), f);
        }

        /// Any text either parses to a fault that prints back to a parseable form, or gives
        /// an error naming the input; nothing panics.
        #[test]
        fn arbitrary_text_never_panics(text in "(iommu|membw|odp|degrade)(:[a-z0-9.]{0,8}){0,4}") {
            let host = dgx();
            match Fault::parse(&text, &host) {
                Ok(f) => proptest::prop_assert_eq!(Fault::parse(&f.to_string(), &host).unwrap(), f),
                Err(e) => {
                    proptest::prop_assert_eq!(&e.input, &text);
                    let prefix = format!("bad fault `{text}`: ");
                    let named = e.to_string().starts_with(&prefix);
                    proptest::prop_assert!(named, "{}", e);
                }
            }
        }
    }

    #[test]
    fn non_canonical_numbers_print_canonically() {
        let f = Fault::parse("degrade:rnic0--lsw0:0.50", &dgx()).unwrap();
        assert_eq!(f.to_string(), "degrade:rnic0--lsw0:0.5");
        let f = Fault::parse("service:rnic0:1.5e2", &dgx()).unwrap();
        assert_eq!(f.to_string(), "service:rnic0:150");
    }

    #[test]
    fn unknown_kind_lists_the_known_ones() {
        let e = err("degrade-ish:rnic0--lsw0:0.5");
        assert!(e.reason.contains("unknown fault kind `degrade-ish`"), "{e}");
        for k in [
            "degrade",
            "flap",
            "overload",
            "acs",
            "ats-off",
            "slow-start",
            "tx-window",
            "service",
            "iommu",
            "membw",
            "odp",
        ] {
            assert!(e.reason.contains(k), "{e}");
        }
        assert!(err("").reason.contains("unknown fault kind ``"));
        assert!(err("Degrade:rnic0--lsw0:0.5")
            .reason
            .contains("unknown fault kind"));
    }

    #[test]
    fn missing_link_is_named_with_a_short_list() {
        let e = err("degrade:foo:0.5");
        assert!(
            e.reason
                .starts_with("no link `foo` in dgx-a100 (links: mem0--cpu0, "),
            "{e}"
        );
        assert!(e.reason.ends_with(", ...)"), "{e}");
        assert_eq!(e.reason.matches("--").count(), LISTED, "{e}");
        // A component is not a link, and link ids are `<down>--<up>`, not the reverse.
        assert!(err("flap:lsw0--rnic0:0.5")
            .reason
            .contains("no link `lsw0--rnic0`"));
        assert!(err("overload:rnic0:0.5").reason.contains("no link `rnic0`"));
    }

    #[test]
    fn short_lists_are_complete_and_long_ones_cut() {
        assert_eq!(short_list(["a", "b"].into_iter()), "a, b");
        let eight: Vec<String> = (0..8).map(|i| i.to_string()).collect();
        assert_eq!(
            short_list(eight.iter().map(String::as_str)),
            "0, 1, 2, 3, 4, 5, 6, 7"
        );
        let nine: Vec<String> = (0..9).map(|i| i.to_string()).collect();
        assert_eq!(
            short_list(nine.iter().map(String::as_str)),
            "0, 1, 2, 3, 4, 5, 6, 7, ..."
        );
        // Four RNICs fit in full.
        let e = err("slow-start:gpu0");
        assert!(
            e.reason.ends_with("(rnics: rnic0, rnic1, rnic2, rnic3)"),
            "{e}"
        );
    }

    #[test]
    fn fractions_are_range_checked() {
        for bad in ["0", "-0.1", "1.01", "2"] {
            let e = err(&format!("degrade:rnic0--lsw0:{bad}"));
            assert!(e.reason.contains("fraction must be in (0, 1]"), "{e}");
            let e = err(&format!("flap:rnic0--lsw0:{bad}"));
            assert!(e.reason.contains("fraction must be in (0, 1]"), "{e}");
        }
        for bad in ["-0.01", "1.5"] {
            let e = err(&format!("overload:rnic0--lsw0:{bad}"));
            assert!(e.reason.contains("utilization must be in [0, 1]"), "{e}");
        }
    }

    #[test]
    fn numbers_must_be_finite_numbers() {
        for bad in ["", "half", "nan", "inf", "0.5x", "NaN"] {
            let e = err(&format!("degrade:rnic0--lsw0:{bad}"));
            assert!(
                e.reason
                    .contains(&format!("fraction `{bad}` is not a number")),
                "{e}"
            );
        }
        assert!(err("overload:cpu0--cpu1:lots")
            .reason
            .contains("utilization `lots` is not a number"));
        assert!(err("service:rnic0:fast")
            .reason
            .contains("gbps `fast` is not a number"));
        assert!(err("service:rnic0:infinity")
            .reason
            .contains("is not a number"));
    }

    #[test]
    fn wrong_field_count_shows_the_shape() {
        let e = err("degrade:rnic0--lsw0");
        assert!(
            e.reason.contains("expected `degrade:<link>:<fraction>`"),
            "{e}"
        );
        assert!(err("degrade:rnic0--lsw0:0.5:0.6")
            .reason
            .contains("expected `degrade:"));
        assert!(err("acs").reason.contains("expected `acs:<switch>|all`"));
        assert!(err("acs:lsw0:lsw1").reason.contains("expected `acs:"));
        assert!(err("ats-off:rnic0:1")
            .reason
            .contains("expected `ats-off:<rnic>`"));
        assert!(err("slow-start")
            .reason
            .contains("expected `slow-start:<rnic>`"));
        assert!(err("tx-window:rnic0")
            .reason
            .contains("expected `tx-window:<rnic>:<bytes>`"));
        assert!(err("service:rnic0")
            .reason
            .contains("expected `service:<rnic>:<gbps>[:<endpoint>]`"));
        assert!(err("service:rnic0:10:mem0:x")
            .reason
            .contains("expected `service:"));
    }

    #[test]
    fn components_must_exist_and_be_of_the_right_class() {
        let e = err("acs:gpu0");
        assert!(
            e.reason
                .starts_with("`gpu0` is a gpu, not a pcie switch (switches: usw0, "),
            "{e}"
        );
        let e = err("acs:lsw9");
        assert!(
            e.reason
                .starts_with("no pcie switch `lsw9` in dgx-a100 (switches: "),
            "{e}"
        );
        let e = err("ats-off:gpu1");
        assert!(
            e.reason
                .starts_with("`gpu1` is a gpu, not an rnic (rnics: rnic0, rnic1, rnic2, rnic3)"),
            "{e}"
        );
        let e = err("slow-start:rnic4");
        assert!(e.reason.starts_with("no rnic `rnic4` in dgx-a100"), "{e}");
        assert!(err("tx-window:lsw0:4096")
            .reason
            .contains("`lsw0` is a pcie switch, not an rnic"));
        assert!(err("service:mem0:10")
            .reason
            .contains("`mem0` is a memory node, not an rnic"));
        let e = err("service:rnic0:10:lsw0");
        assert!(
            e.reason.starts_with(
                "`lsw0` is a pcie switch, not an endpoint (endpoints: mem0, mem1, gpu0"
            ),
            "{e}"
        );
        assert!(err("service:rnic0:10:gpu8")
            .reason
            .contains("no endpoint `gpu8`"));
        assert!(err("acs:ALL").reason.contains("no pcie switch `ALL`"));
    }

    #[test]
    fn window_bytes_are_positive_whole_numbers() {
        for bad in ["0", "-1", "1.5", "", "4k", "1e4"] {
            let e = err(&format!("tx-window:rnic0:{bad}"));
            assert!(
                e.reason
                    .contains("tx-window bytes must be a whole number from 1"),
                "{e}"
            );
        }
    }

    #[test]
    fn service_rate_must_be_positive() {
        assert!(err("service:rnic0:0")
            .reason
            .contains("gbps must be above 0"));
        assert!(err("service:rnic0:-5")
            .reason
            .contains("gbps must be above 0"));
    }

    #[test]
    fn check_applies_the_grammar_to_hand_built_faults() {
        let host = dgx();
        assert!(Fault::Degrade {
            link: "rnic0--lsw0".into(),
            fraction: 0.3
        }
        .check(&host)
        .is_ok());
        let e = Fault::Degrade {
            link: "nope".into(),
            fraction: 0.3,
        }
        .check(&host)
        .unwrap_err();
        assert!(e.reason.contains("no link `nope`"), "{e}");
        let e = Fault::Flap {
            link: "rnic0--lsw0".into(),
            fraction: f64::NAN,
        }
        .check(&host)
        .unwrap_err();
        assert!(e.reason.contains("not a number"), "{e}");
        let e = Fault::TxWindow {
            rnic: "rnic0".into(),
            bytes: 0,
        }
        .check(&host)
        .unwrap_err();
        assert!(e.reason.contains("from 1"), "{e}");
    }

    #[test]
    fn sizes_above_their_caps_are_refused_naming_the_cap() {
        let e = err("odp:rnic0:flood:4294967295");
        assert_eq!(
            e.reason,
            "odp flood QPs 4294967295 is above the cap of 4096"
        );
        // Too large even for a u64: still the cap, not "not a number".
        let e = err("odp:rnic0:flood:99999999999999999999999");
        assert!(e.reason.ends_with("is above the cap of 4096"), "{e}");
        assert_eq!(
            ok("odp:rnic0:flood:4096"),
            Fault::Odp {
                rnic: "rnic0".into(),
                pitfall: OdpPitfall::Flood { qps: 4096 }
            }
        );
        let e = err("tx-window:rnic0:1073741825");
        assert_eq!(
            e.reason,
            "tx-window bytes 1073741825 is above the cap of 1073741824"
        );
        let e = err("service:rnic0:1600.5");
        assert_eq!(e.reason, "service gbps 1600.5 is above the cap of 1600");
        let e = err("iommu:rnic0:2000000");
        assert_eq!(
            e.reason,
            "iommu working set MiB 2000000 is above the cap of 1048576"
        );
        // Offered above line rate (200 Gb/s) but within the cap: a saturated RNIC.
        assert!(Fault::parse("service:rnic0:250", &dgx()).is_ok());
    }

    fn set(texts: &[&str]) -> Result<Vec<Fault>, FaultError> {
        parse_faults(texts, &dgx())
    }

    #[test]
    fn two_faults_setting_one_thing_are_refused_naming_both() {
        let e = set(&["degrade:gpu4--lsw4:0.5", "degrade:gpu4--lsw4:0.3"]).unwrap_err();
        assert_eq!(e.input, "degrade:gpu4--lsw4:0.3");
        assert!(
            e.reason.starts_with(
                "link gpu4--lsw4 already keeps a share of its capacity by `degrade:gpu4--lsw4:0.5`"
            ),
            "{e}"
        );
        // A degraded link does not also flap: flap says it is healthy half the time.
        let e = set(&["flap:mem1--cpu1:0.15", "degrade:mem1--cpu1:0.5"]).unwrap_err();
        assert!(e.reason.contains("one degrade or flap per link"), "{e}");
        for (a, b, says) in [
            (
                "overload:cpu0--cpu1:0.5",
                "overload:cpu0--cpu1:0.6",
                "one overload per link",
            ),
            (
                "membw:mem0:0.5",
                "membw:mem0:0.2",
                "one membw per memory node",
            ),
            (
                "tx-window:rnic0:4096",
                "tx-window:rnic0:8192",
                "one tx-window per RNIC",
            ),
            ("odp:rnic1:damming", "odp:rnic1:flood", "one odp per RNIC"),
            (
                "iommu:rnic1:64:4k",
                "iommu:rnic1:128:2m",
                "one iommu per RNIC",
            ),
            (
                "slow-start:rnic2",
                "slow-start:rnic2",
                "one slow-start per RNIC",
            ),
            ("ats-off:rnic2", "ats-off:rnic2", "one ats-off per RNIC"),
            (
                "service:rnic0:100:mem1",
                "service:rnic0:50:mem1",
                "with the total rate",
            ),
            (
                "service:rnic0:100",
                "service:rnic0:50",
                "with the total rate",
            ),
            ("acs:all", "acs:lsw0", "acs:all covers every switch"),
            ("acs:lsw0", "acs:all", "acs:all covers every switch"),
            ("acs:lsw0", "acs:lsw0", "is already given"),
        ] {
            let e = set(&[a, b]).unwrap_err();
            assert_eq!(e.input, b);
            assert!(e.reason.contains(says), "{a} + {b}: {e}");
            assert!(e.reason.contains(&format!("`{a}`")), "{a} + {b}: {e}");
        }
    }

    #[test]
    fn faults_on_different_targets_or_of_different_settings_go_together() {
        let faults = set(&[
            "degrade:gpu4--lsw4:0.5",
            "degrade:gpu5--lsw5:0.5",
            "overload:gpu4--lsw4:0.3",
            "service:rnic0:150:mem1",
            "service:rnic0:20:gpu0",
            "service:rnic0:10",
            "acs:lsw0",
            "acs:lsw1",
            "ats-off:rnic0",
            "slow-start:rnic0",
            "odp:rnic0:damming",
            "odp:rnic1:flood:16",
            "membw:mem1:0.9",
            "degrade:mem0--cpu0:0.15",
        ])
        .unwrap();
        assert_eq!(faults.len(), 14);
    }

    fn any_number() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        prop_oneof![
            any::<u64>().prop_map(|n| n.to_string()),
            any::<f64>().prop_map(|f| f.to_string()),
            "[0-9]{1,30}",
            (0u32..5000).prop_map(|n| n.to_string()),
        ]
    }

    proptest::proptest! {
        /// Every fault that parses is within the caps of `model::limits`, whatever the
        /// numbers given.
        #[test]
        fn any_parsed_fault_is_within_the_caps(
            kind in proptest::sample::select(vec![
                "tx-window:rnic0:", "service:rnic1:", "iommu:rnic2:", "odp:rnic3:flood:",
                "degrade:rnic0--lsw0:", "flap:gpu0--lsw0:", "overload:cpu0--cpu1:", "membw:mem0:",
            ]),
            number in any_number(),
        ) {
            use model::limits;
            let text = format!("{kind}{number}");
            if let Ok(f) = Fault::parse(&text, &dgx()) {
                let within = match f {
                    Fault::TxWindow { bytes, .. } => (1..=limits::TX_WINDOW_BYTES).contains(&bytes),
                    Fault::Service { gbps, .. } => gbps > 0.0 && gbps <= limits::SERVICE_GBPS,
                    Fault::Iommu { working_set_mib, .. } =>
                        working_set_mib > 0.0 && working_set_mib <= limits::IOMMU_WORKING_SET_MIB,
                    Fault::Odp { pitfall: OdpPitfall::Flood { qps }, .. } =>
                        (1..=limits::ODP_FLOOD_QPS).contains(&u64::from(qps)),
                    Fault::Degrade { fraction, .. } | Fault::Flap { fraction, .. } =>
                        fraction > 0.0 && fraction <= 1.0,
                    Fault::Overload { utilization: u, .. } | Fault::MemBw { fraction: u, .. } =>
                        (0.0..=1.0).contains(&u),
                    _ => false,
                };
                proptest::prop_assert!(within, "{} parsed to {:?}", text, f);
            }
        }

        /// Parsing any string, alone or as a set, never panics: a fault or an error that
        /// names the input.
        #[test]
        fn parse_never_panics_on_any_string(texts in proptest::collection::vec("\\PC{0,40}", 1..4)) {
            match parse_faults(&texts, &dgx()) {
                Ok(faults) => proptest::prop_assert_eq!(faults.len(), texts.len()),
                Err(e) => proptest::prop_assert!(texts.contains(&e.input), "{}", e),
            }
        }
    }
}
