//! The line lexer of the topology-file reader: splits a file into numbered lines at any line
//! end a capture carries (LF, CRLF, and lone CR, mixed in one file when it passed through
//! several tools), and says what each line is, so that the block parser only sees node
//! blocks. The TABs `ibnetdiscover` writes are not needed: a line is told by its first
//! characters, and its fields by quotes and brackets, so that a capture whose TABs became
//! spaces, or were dropped (`Switch41 "S-..."# "..."`), reads the same.

use super::super::NodeKind;
use super::SkipKind;

/// The file's lines, numbered from 1, a byte-order mark dropped; a line ends at LF, at
/// CRLF, or at a CR that no LF follows.
pub(super) fn lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut rest = Some(text).filter(|t| !t.is_empty());
    std::iter::from_fn(move || {
        let s = rest?;
        match s.find(['\r', '\n']) {
            Some(end) => {
                let skip = if s[end..].starts_with("\r\n") { 2 } else { 1 };
                rest = Some(&s[end + skip..]).filter(|r| !r.is_empty());
                Some(&s[..end])
            }
            None => {
                rest = None;
                Some(s)
            }
        }
    })
    .enumerate()
    .map(|(i, line)| (i + 1, line))
}

/// What one line of a topology file is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Line<'a> {
    /// Nothing but white space: the end of a node block.
    Blank,
    /// `# Initiated from node <guid> ...`: where discovery started.
    Origin(Option<u64>),
    /// Any other comment.
    Comment,
    /// Not topology, passed over wherever it is.
    Skip(SkipKind),
    /// `vendid=`, `devid=`, `sysimgguid=`, `switchguid=`, `caguid=` or `rtguid=`: the key and
    /// its value (the first word after `=`; `-g` appends a chassis comment).
    Field(&'static str, &'a str),
    /// `Switch|Ca|Rt <ports> "<id>" # "<description>" ...`: the kind, the port count as
    /// written, and what follows it.
    Header(NodeKind, &'a str, &'a str),
    /// `[<port>]...`: a port's line.
    Port,
    /// None of these.
    Other,
}

/// What `line` (a line of [`lines`]) is.
pub(super) fn classify(line: &str) -> Line<'_> {
    let line = line.trim();
    if line.is_empty() {
        return Line::Blank;
    }
    if let Some(rest) = line.strip_prefix("# Initiated from node ") {
        return Line::Origin(rest.split_whitespace().next().and_then(hex));
    }
    if line.starts_with('#') {
        return Line::Comment;
    }
    if let Some(kind) = skip_kind(line) {
        return Line::Skip(kind);
    }
    for key in FIELDS {
        if let Some(value) = line.strip_prefix(key).and_then(|r| r.strip_prefix('=')) {
            return Line::Field(key, value.split_whitespace().next().unwrap_or(""));
        }
    }
    if let Some((kind, ports, rest)) = header(line) {
        return Line::Header(kind, ports, rest);
    }
    if line.starts_with('[') {
        return Line::Port;
    }
    Line::Other
}

const FIELDS: [&str; 6] = [
    "vendid",
    "devid",
    "sysimgguid",
    "switchguid",
    "caguid",
    "rtguid",
];

/// `Switch`, `Ca` or `Rt` and the port count, with or without white space between them
/// (`Switch\t41`, `Switch 41`, `Switch41`): the kind, the count's digits and the rest.
pub(super) fn header(line: &str) -> Option<(NodeKind, &str, &str)> {
    let (kind, rest) = [
        ("Switch", NodeKind::Switch),
        ("Ca", NodeKind::Ca),
        ("Rt", NodeKind::Router),
    ]
    .into_iter()
    .find_map(|(word, kind)| line.strip_prefix(word).map(|rest| (kind, rest)))?;
    let rest = rest.trim_start();
    let digits = rest
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(rest.len());
    (digits > 0).then(|| (kind, &rest[..digits], &rest[digits..]))
}

/// What a line that is not topology is, when it is one of the kinds a capture carries.
fn skip_kind(line: &str) -> Option<SkipKind> {
    if is_warning(line) {
        Some(SkipKind::Warning)
    } else if line == "Non-Chassis Nodes" || line.starts_with("Chassis ") {
        Some(SkipKind::Grouping)
    } else if is_progress(line) {
        Some(SkipKind::Progress)
    } else if is_terminal(line) {
        Some(SkipKind::Terminal)
    } else {
        None
    }
}

/// A line `ibnetdiscover` or its libraries print among the topology: `ibwarn: ...`,
/// `ibnetdiscover: iberror: ...`, `src/query_smp.c:195; umad ... bad status 110; ...`.
fn is_warning(line: &str) -> bool {
    let first = line.split_whitespace().next().unwrap_or("");
    [
        "ibwarn",
        "ibpanic",
        "ibdebug",
        "iberror",
        "ibnetdiscover",
        "ibnetdisc",
    ]
    .iter()
    .any(|w| first.trim_end_matches(':').starts_with(w))
        || first
            .split_once(".c:")
            .is_some_and(|(_, rest)| rest.trim_end_matches(';').parse::<u32>().is_ok())
}

/// A progress line of `ibnetdiscover -s` (libibnetdisc's `dump_endnode`, printed as each node
/// is reached): `DR path slid 65535; dlid 65535; 0,1 -> new Switch {<guid>} portnum 0 lid
/// 1-1 "<description>"`, the path after `Lid <n>` when the port has a LID.
fn is_progress(line: &str) -> bool {
    (line.starts_with("DR path ") || line.starts_with("Lid "))
        && (line.contains(" -> new ") || line.contains(" -> known "))
}

/// A terminal's line around the command's output: a shell prompt (`[root@host ~]# ...`,
/// `user@host:~$ ...`) or PuTTY's log header (`=~=~=~=~ PuTTY log <date> =~=~=~=~`). No line
/// of the format starts with a word holding `@`, nor with `[` and something other than a
/// port number, nor with `=`.
fn is_terminal(line: &str) -> bool {
    if let Some((inside, after)) = line.strip_prefix('[').and_then(|r| r.split_once(']')) {
        let port = !inside.is_empty() && inside.bytes().all(|b| b.is_ascii_digit());
        return !port && (inside.contains('@') || after.trim_start().starts_with(['#', '$']));
    }
    let first = line.split_whitespace().next().unwrap_or("");
    first.contains('@') || line.starts_with("=~=~=")
}

/// The text between the first pair of double quotes, and the rest.
pub(super) fn quoted(s: &str) -> Option<(&str, &str)> {
    let start = s.find('"')? + 1;
    let len = s[start..].find('"')?;
    Some((&s[start..start + len], &s[start + len + 1..]))
}

pub(super) fn hex(s: &str) -> Option<u64> {
    u64::from_str_radix(s.trim().trim_start_matches("0x"), 16).ok()
}

/// `S-0000000000200001` to its kind and GUID.
pub(super) fn parse_node_id(id: &str) -> Option<(NodeKind, u64)> {
    let (letter, guid) = id.split_once('-')?;
    let kind = match letter {
        "S" => NodeKind::Switch,
        "H" => NodeKind::Ca,
        "R" => NodeKind::Router,
        _ => return None,
    };
    Some((kind, hex(guid)?))
}

/// A rate as `ibnetdiscover` spells it (`dump_linkwidth_compat` then `dump_linkspeed*_compat`):
/// a width `1x`, `2x`, `4x`, `8x`, `12x` (`??` when unknown) and a speed `SDR` ... `XDR`,
/// `FDR10` (`???` when unknown): `4xSDR` to (`4x`, `SDR`).
pub(super) fn parse_rate(token: &str) -> Option<(String, String)> {
    let (width, speed) = match token.strip_prefix("??") {
        Some(speed) => ("??", speed),
        None => {
            let x = token.find('x')?;
            let (width, speed) = token.split_at(x + 1);
            let lanes = &width[..x];
            (!lanes.is_empty() && lanes.bytes().all(|b| b.is_ascii_digit())).then_some(())?;
            (width, speed)
        }
    };
    let speed_ok = speed == "???"
        || (speed.starts_with(|c: char| c.is_ascii_uppercase())
            && speed
                .bytes()
                .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit()));
    speed_ok.then(|| (width.to_string(), speed.to_string()))
}

/// `... <word> <n> ...`: the number after the first `word` of `comment` (`lid`, `lmc`).
pub(super) fn number_after<T: std::str::FromStr>(comment: &str, word: &str) -> Option<T> {
    let mut words = comment.split_whitespace();
    words.find(|w| *w == word)?;
    words.next()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_end_at_lf_crlf_and_a_lone_cr() {
        let got: Vec<(usize, &str)> = lines("\u{feff}a\r\nb\rc\nd\r\r\ne").collect();
        assert_eq!(
            got,
            [(1, "a"), (2, "b"), (3, "c"), (4, "d"), (5, ""), (6, "e")]
        );
        assert_eq!(lines("a\n").count(), 1);
        assert_eq!(lines("").count(), 0);
    }

    #[test]
    fn headers_are_read_with_or_without_white_space_before_the_count() {
        for line in [
            "Switch\t41 \"S-01\"\t\t# \"q\"",
            "Switch 41 \"S-01\" # \"q\"",
            "Switch41 \"S-01\"# \"q\"",
        ] {
            let Line::Header(kind, ports, rest) = classify(line) else {
                panic!("{line}");
            };
            assert_eq!((kind, ports), (NodeKind::Switch, "41"), "{line}");
            assert!(rest.trim_start().starts_with("\"S-01\""), "{line}");
        }
        assert!(matches!(
            classify("    Rt      8 \"R-b8\"   # \"x\""),
            Line::Header(NodeKind::Router, "8", _)
        ));
        assert_eq!(classify("Can't open port"), Line::Other);
        assert_eq!(classify("Switch: 0x0002c9"), Line::Other);
    }

    #[test]
    fn terminal_lines_and_progress_are_told_from_port_lines() {
        for line in [
            "[root@bda01node05 ~]# ibnetdiscover",
            "[root@host ~]# ",
            "root@tj01-h20-node139:/# ibnetdiscover",
            "expert@net21:~$ ibnetdiscover",
            "=~=~=~=~=~=~=~=~=~=~=~= PuTTY log 2019.03.14 10:22:33 =~=~=~=~=~=~=~=~=~=~=~=",
        ] {
            assert_eq!(classify(line), Line::Skip(SkipKind::Terminal), "{line}");
        }
        // libibnetdisc's dump_endnode, through libibmad's portid2str and drpath2str.
        for line in [
            "DR path slid 65535; dlid 65535; 0 -> new Channel Adapter {0002c90300a0b1c0} \
             portnum 1 lid 5-5 \"h1 mlx4_0\"",
            "DR path slid 65535; dlid 65535; 0,1 -> known Switch {0002c90200482d08} portnum 0 \
             lid 1-1 \"sw\"",
        ] {
            assert_eq!(classify(line), Line::Skip(SkipKind::Progress), "{line}");
        }
        assert_eq!(classify("[12]\t\"S-01\"[1]"), Line::Port);
        assert_eq!(classify("[1](5c2573) \t\"S-01\"[1]"), Line::Port);
        assert_eq!(classify("[22][ext 5]\t\"H-01\"[1]"), Line::Port);
    }

    #[test]
    fn every_rate_spelling_of_ibnetdiscover_reads() {
        for width in ["1x", "2x", "4x", "8x", "12x", "??"] {
            for speed in [
                "SDR", "DDR", "QDR", "FDR10", "FDR", "EDR", "HDR", "NDR", "XDR", "???",
            ] {
                let token = format!("{width}{speed}");
                assert_eq!(
                    parse_rate(&token),
                    Some((width.to_string(), speed.to_string())),
                    "{token}"
                );
            }
        }
        for not_a_rate in ["0x98", "x", "4x", "v=8", "lid", "4xhdr"] {
            assert_eq!(parse_rate(not_a_rate), None, "{not_a_rate}");
        }
    }
}
