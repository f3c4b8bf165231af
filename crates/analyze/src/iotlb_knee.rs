//! Where an IOTLB sweep's throughput falls off (HotNets'22, "Understanding Host
//! Interconnect Congestion", section 3.1 and Figures 3-5): once the working set of an RNIC's
//! DMA exceeds the IOTLB's reach (`entries * page`), every DMA write waits for page-table
//! walks and the NIC-to-memory bound `C * pkt_size / (T_base + M * T_miss)` drops. The
//! sweep (`check::iotlb`) measures the curve; this module decides where its knee is.
//!
//! A knee is a judgement, so it lives here: `check` passes the points in and serialises the
//! [`Knee`] it gets back into the `iotlb` field of `check --iotlb`'s report.

use model::iommu::IotlbPoint;
use serde::Serialize;

/// Where a curve falls off: between the last working set at its plateau and the first one
/// below it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Knee {
    /// The largest working set still at the plateau, bytes.
    pub last_full_bytes: u64,
    /// The first working set below the plateau, bytes.
    pub first_low_bytes: u64,
    /// Throughput at the plateau, Gb/s.
    pub plateau_gbps: f64,
    /// Throughput at the largest working set, Gb/s.
    pub floor_gbps: f64,
}

/// Share of the plateau a point must lose to count as fallen off (10 %: well above the
/// virtual host's 2 % noise, well below the 4 KiB drop of HotNets'22 Fig. 3).
pub const KNEE_DROP: f64 = 0.10;

/// The knee of a curve: the first point more than `drop` below the best throughput of the
/// points before it; `None` for a curve that never falls off.
///
/// ```
/// use analyze::iotlb_knee::{find_knee, KNEE_DROP};
/// use model::iommu::IotlbPoint;
///
/// let curve = [(16 << 10, 197.0), (64 << 10, 196.0), (1 << 20, 120.0), (4 << 20, 90.0)]
///     .map(|(working_set_bytes, gbps)| IotlbPoint { working_set_bytes, gbps });
/// let knee = find_knee(&curve, KNEE_DROP).unwrap();
/// assert_eq!((knee.last_full_bytes, knee.first_low_bytes), (64 << 10, 1 << 20));
/// assert_eq!((knee.plateau_gbps, knee.floor_gbps), (197.0, 90.0));
/// ```
pub fn find_knee(points: &[IotlbPoint], drop: f64) -> Option<Knee> {
    let mut plateau: Option<(f64, u64)> = None;
    for p in points {
        match plateau {
            Some((best, last_full)) if p.gbps < best * (1.0 - drop) => {
                return Some(Knee {
                    last_full_bytes: last_full,
                    first_low_bytes: p.working_set_bytes,
                    plateau_gbps: best,
                    floor_gbps: points.last().map_or(p.gbps, |l| l.gbps),
                });
            }
            Some((best, _)) => plateau = Some((best.max(p.gbps), p.working_set_bytes)),
            None => plateau = Some((p.gbps, p.working_set_bytes)),
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn curve(points: &[(u64, f64)]) -> Vec<IotlbPoint> {
        points
            .iter()
            .map(|&(working_set_bytes, gbps)| IotlbPoint {
                working_set_bytes,
                gbps,
            })
            .collect()
    }

    #[test]
    fn the_knee_is_the_first_point_well_below_the_plateau() {
        let points = curve(&[(1, 196.0), (2, 197.0), (4, 195.5), (8, 120.0), (16, 87.0)]);
        let knee = find_knee(&points, KNEE_DROP).unwrap();
        assert_eq!(knee.last_full_bytes, 4);
        assert_eq!(knee.first_low_bytes, 8);
        assert_eq!(knee.plateau_gbps, 197.0);
        assert_eq!(knee.floor_gbps, 87.0);
    }

    #[test]
    fn noise_and_flat_curves_have_no_knee() {
        let points = curve(&[(1, 196.0), (2, 190.0), (4, 199.0), (8, 181.0)]);
        assert_eq!(find_knee(&points, KNEE_DROP), None);
        assert_eq!(find_knee(&[], KNEE_DROP), None);
    }
}
