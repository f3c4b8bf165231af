//! The 1-bit hash of the probabilistic variants (thesis 5.2 and 5.4): a packet stores
//! `H(packet id, d)` instead of the (switch ID, port) tuple `d`, and the receiver compares it
//! with `H(packet id, d)` for every candidate `d`.

use crate::topology::PortRef;

/// The random 31-bit prime of `H_mult'` (thesis 5.4). Multiplying by it keeps `id * d` from
/// staying below 2^31 when `id` or `d` is small, which would bias the hash towards 0.
pub const HASH_MULTIPLIER: u32 = 1_846_571_429;

/// The integer `d` that stands for an output port in the hash (thesis 5.4):
/// `switch ID * 2^15 + port * 2^9 + 509`. The offset keeps `d` above 500 (509 is the largest
/// prime that fits in 9 bits), away from the small arguments for which `H_mult'` of two ids
/// is correlated (the counterexample to Theorem 5.2). Distinct for ports below 64.
pub fn port_key(port: PortRef) -> u32 {
    (port.switch.0 << 15)
        .wrapping_add(u32::from(port.port) << 9)
        .wrapping_add(509)
}

/// `H_mult'(id, d)`: bit 31 of `1 846 571 429 * id * d mod 2^32` (thesis 5.4), as 0 or 1.
pub fn hash_bit(packet_id: u32, key: u32) -> u32 {
    id_factor(packet_id).wrapping_mul(key) >> 31
}

/// `1 846 571 429 * id mod 2^32`: the part of [`hash_bit`] that a receiver computes once per
/// packet before comparing against every candidate port (algorithm 7 line 3).
pub fn id_factor(packet_id: u32) -> u32 {
    HASH_MULTIPLIER.wrapping_mul(packet_id)
}

/// [`hash_bit`] from a precomputed [`id_factor`].
pub fn hash_bit_with(id_factor: u32, key: u32) -> u32 {
    id_factor.wrapping_mul(key) >> 31
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::SwitchId;

    #[test]
    fn key_follows_the_thesis_layout() {
        let key = port_key(PortRef {
            switch: SwitchId(3),
            port: 5,
        });
        assert_eq!(key, 3 * 32768 + 5 * 512 + 509);
    }

    #[test]
    fn hash_is_bit_31_of_the_product() {
        let (id, d) = (44_974_351u32, 1234u32);
        let product = u128::from(HASH_MULTIPLIER) * u128::from(id) * u128::from(d) % (1 << 32);
        assert_eq!(hash_bit(id, d), (product >> 31) as u32);
        assert_eq!(hash_bit_with(id_factor(id), d), hash_bit(id, d));
        // Id 0 hashes to 0 for every port: the receiver learns nothing from such a packet.
        assert_eq!(hash_bit(0, d), 0);
    }

    /// Figure 5.1a: for id 44 974 351 the point turns 1/r ~ 1/6.4 of the circle per step of d,
    /// so the hash runs in blocks of 3 or 4 equal bits.
    #[test]
    fn figure_5_1_runs_of_three_or_four() {
        let bits: Vec<u32> = (1..=900).map(|d| hash_bit(44_974_351, d)).collect();
        let mut runs = Vec::new();
        let mut length = 1;
        for pair in bits.windows(2) {
            if pair[0] == pair[1] {
                length += 1;
            } else {
                runs.push(length);
                length = 1;
            }
        }
        // The first run may be cut by d = 1.
        assert!(runs[1..].iter().all(|&r| r == 3 || r == 4), "{runs:?}");
    }
}
