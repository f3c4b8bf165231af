/*!
CPU packages and whether the host is a virtual machine, from
`sys/devices/system/cpu/cpu<C>/topology/` (`Documentation/ABI/stable/sysfs-devices-system-cpu`,
`drivers/base/topology.c`) and `proc/cpuinfo` (`arch/x86/kernel/cpu/proc.c`).

| file | policy |
|---|---|
| `sys/devices/system/cpu/cpu<C>/topology/physical_package_id` | optional: absent for an offline CPU or an old capture; `-1` (no package: some s390 and virtual CPUs) gives none; malformed is an error |
| `proc/cpuinfo` | optional: a `flags` line naming `hypervisor` (CPUID leaf 1, ECX bit 31, which hypervisors set for their guests: `X86_FEATURE_HYPERVISOR`) says the host is a virtual machine |
*/

use super::pci::parse_decimal_u32;
use super::{DiscoverError, ParseError, SysRoot};

/// Parses `physical_package_id` (`%d`): `-1` is no package.
pub fn parse_package_id(s: &str) -> Result<Option<u32>, ParseError> {
    if s == "-1" {
        return Ok(None);
    }
    parse_decimal_u32(s)
        .map(Some)
        .ok_or_else(|| ParseError::new(s, "a CPU package number or -1"))
}

/// The distinct packages of `cpus`, ascending; CPUs without a package are left out.
pub(crate) fn packages(root: &SysRoot, cpus: &[u32]) -> Result<Vec<u32>, DiscoverError> {
    let mut packages = Vec::new();
    for cpu in cpus {
        let file = root.path(&format!(
            "sys/devices/system/cpu/cpu{cpu}/topology/physical_package_id"
        ));
        if let Some(package) = root.parse_optional(&file, parse_package_id)?.flatten() {
            packages.push(package);
        }
    }
    packages.sort_unstable();
    packages.dedup();
    Ok(packages)
}

/// Whether `proc/cpuinfo` has a `flags` line with `hypervisor`; `false` without one.
pub fn cpuinfo_says_hypervisor(cpuinfo: &str) -> bool {
    cpuinfo
        .lines()
        .filter_map(|line| line.split_once(':'))
        .filter(|(key, _)| key.trim() == "flags")
        .any(|(_, flags)| flags.split_whitespace().any(|f| f == "hypervisor"))
}

/// Whether this host is a virtual machine, as `proc/cpuinfo` says.
pub(crate) fn is_virtual_machine(root: &SysRoot) -> Result<bool, DiscoverError> {
    Ok(root
        .read_optional(&root.path("proc/cpuinfo"))?
        .is_some_and(|text| cpuinfo_says_hypervisor(&text)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn package_ids_follow_topology_show() {
        assert_eq!(parse_package_id("0"), Ok(Some(0)));
        assert_eq!(parse_package_id("3"), Ok(Some(3)));
        assert_eq!(parse_package_id("-1"), Ok(None));
        for bad in ["", "-2", "one", " 1", "1.0"] {
            assert!(parse_package_id(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_hypervisor_flag_is_a_whole_word_of_a_flags_line() {
        let guest = "processor\t: 0\nflags\t\t: fpu vme de pse hypervisor lahf_lm\n";
        assert!(cpuinfo_says_hypervisor(guest));
        let metal = "processor\t: 0\nflags\t\t: fpu vme de pse lahf_lm\nbugs\t\t: spectre_v1\n";
        assert!(!cpuinfo_says_hypervisor(metal));
        // Only the flags line counts, and only the whole word.
        assert!(!cpuinfo_says_hypervisor("model name\t: hypervisor\n"));
        assert!(!cpuinfo_says_hypervisor("flags\t\t: fpu hypervisor_x\n"));
        assert!(!cpuinfo_says_hypervisor(""));
    }

    proptest! {
        #[test]
        fn parsers_never_panic(s in "\\PC*") {
            let _ = parse_package_id(&s);
            let _ = cpuinfo_says_hypervisor(&s);
        }

        #[test]
        fn package_ids_round_trip(p: u32) {
            prop_assert_eq!(parse_package_id(&p.to_string()), Ok(Some(p)));
        }
    }
}
