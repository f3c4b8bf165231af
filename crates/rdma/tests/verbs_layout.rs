//! The hand-written verbs ABI (`rdma::verbs::ffi`) against the real `<infiniband/verbs.h>`:
//! a C program compiled against the header prints every offset and size the Rust side
//! relies on, and each must match. The header is a test-time dependency only (Debian
//! `libibverbs-dev`); `./test.sh` installs it and sets `HOSTPING_REQUIRE_VERBS_HEADERS=1`,
//! so in CI a missing header fails instead of skipping.

use std::process::Command;

const HEADER: &str = "/usr/include/infiniband/verbs.h";

/// `ibv_send_wr.wr.rdma.rkey` -> `offsetof(struct ibv_send_wr, wr.rdma.rkey)`; a
/// distance `a - b` is the difference of the two (`verbs_context.sz -
/// verbs_context.query_device_ex`: the mirrored tail of a struct that grows at its front).
fn c_expression(name: &str) -> String {
    if let Some((a, b)) = name.split_once(" - ") {
        return format!("({} - {})", c_expression(a), c_expression(b));
    }
    match name.strip_prefix("sizeof ") {
        Some(t) => format!("sizeof(struct {t})"),
        None => {
            let (t, member) = name.split_once('.').expect("struct.member");
            format!("offsetof(struct {t}, {member})")
        }
    }
}

#[test]
fn every_mirrored_offset_and_size_matches_the_header() {
    if !std::path::Path::new(HEADER).exists() {
        assert!(
            std::env::var_os("HOSTPING_REQUIRE_VERBS_HEADERS").is_none(),
            "{HEADER} is missing (install libibverbs-dev)"
        );
        eprintln!("skipped: {HEADER} not installed");
        return;
    }
    let layout = rdma::verbs::ffi::layout();
    let mut c = String::from(
        "#include <stddef.h>\n#include <stdio.h>\n#include <infiniband/verbs.h>\nint main(void) {\n",
    );
    for (name, _) in &layout {
        c.push_str(&format!(
            "  printf(\"%s %zu\\n\", \"{name}\", (size_t){});\n",
            c_expression(name)
        ));
    }
    c.push_str("  return 0;\n}\n");
    let dir = std::env::temp_dir().join(format!("hostping-verbs-layout-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join("layout.c");
    let bin = dir.join("layout");
    std::fs::write(&src, c).unwrap();
    let cc = Command::new("cc")
        .arg(&src)
        .arg("-o")
        .arg(&bin)
        .output()
        .unwrap();
    assert!(
        cc.status.success(),
        "cc: {}",
        String::from_utf8_lossy(&cc.stderr)
    );
    let out = Command::new(&bin).output().unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    let printed = String::from_utf8(out.stdout).unwrap();
    let header: Vec<(String, usize)> = printed
        .lines()
        .map(|l| {
            let (n, v) = l.rsplit_once(' ').unwrap();
            (n.to_string(), v.parse().unwrap())
        })
        .collect();
    let rust: Vec<(String, usize)> = layout.iter().map(|(n, v)| (n.to_string(), *v)).collect();
    assert_eq!(rust, header);
}
