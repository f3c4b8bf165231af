//! The Inspector plugin's series, as Prometheus returns them, made into records by job.
//!
//! Each collective the plugin dumps is three series (`model::inspector::TEXTFILE_METRICS`)
//! with the same labels: `coll_sn` and `timestamp` among them make every collective its own
//! series, which lives for as long as the textfile holding it is served (one dump
//! interval). The three are joined on all their labels but `__name__` (the scrape's
//! `instance` and `job` included, the same for the three), the newest sample of each, and
//! read by the textfile reader's rules (`model::inspector::record_from_labels`).
//!
//! The job is `slurm_job_id`, else the job's name `slurm_job` (the plugin writes `unknown`
//! outside Slurm, which names no job): a collective with neither is not stored, as no job
//! could list it. The same collective read twice (two scrape targets serving one file, two
//! Prometheus jobs scraping one exporter) is kept once.

use super::response::Series;
use model::inspector::{
    reads_textfile_version, record_from_labels, CollectiveRecord, TEXTFILE_METRICS,
};
use std::collections::{BTreeMap, HashMap, HashSet};

/// The records read, by job.
#[derive(Debug, Default, PartialEq)]
pub struct JobRecords {
    /// Each job's records.
    pub jobs: BTreeMap<String, Vec<CollectiveRecord>>,
    /// What was not made a record.
    pub skipped: RecordsSkipped,
}

/// Collectives not made records, by why.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct RecordsSkipped {
    /// A collective that lacks one of its three series (a window that cut it, a metric
    /// missing), or a label the record needs, or one that does not parse.
    pub bad_records: u64,
    /// A collective of no job (`slurm_job_id` and `slurm_job` missing or `unknown`).
    pub no_job: u64,
    /// A collective of a later plugin's layout (`version` not v4: no rank or sequence number
    /// to compare ranks by, `model::inspector`'s textfile reader).
    pub unknown_version: u64,
}

/// One collective's series so far (keyed by their labels, `__name__` left out): each metric's
/// newest sample (Unix ms, value).
type Collective = [Option<(i64, f64)>; 3];

/// The records of `series`, by job.
pub fn job_records(series: &[Series]) -> JobRecords {
    let mut collectives: HashMap<Vec<(&str, &str)>, Collective> = HashMap::new();
    for s in series {
        let Some(metric) = s
            .labels
            .get("__name__")
            .and_then(|name| TEXTFILE_METRICS.iter().position(|m| m == name))
        else {
            continue;
        };
        // Samples come in time order; the newest holds.
        let Some(&newest) = s.samples.last() else {
            continue;
        };
        let key: Vec<(&str, &str)> = s
            .labels
            .iter()
            .filter(|(k, _)| *k != "__name__")
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        let slot = &mut collectives.entry(key).or_default()[metric];
        if slot.is_none_or(|(at, _)| at <= newest.0) {
            *slot = Some(newest);
        }
    }
    let mut read = JobRecords::default();
    let mut seen = HashSet::new();
    // A fixed order whatever the answer's: the first of twins is always the same one.
    let mut collectives: Vec<_> = collectives.into_iter().collect();
    collectives.sort_by(|a, b| a.0.cmp(&b.0));
    for (labels, samples) in collectives {
        let version = labels.iter().find(|(k, _)| *k == "version");
        if version.is_some_and(|(_, v)| !reads_textfile_version(v)) {
            read.skipped.unknown_version += 1;
            continue;
        }
        let [Some(algobw), Some(busbw), Some(exec)] = samples else {
            read.skipped.bad_records += 1;
            continue;
        };
        let newest_ms = algobw.0.max(busbw.0).max(exec.0);
        let values = [algobw.1, busbw.1, exec.1];
        let Some(record) = record_from_labels(labels.iter().copied(), values, Some(newest_ms))
        else {
            read.skipped.bad_records += 1;
            continue;
        };
        let Some(job) = job_of(&record, &labels) else {
            read.skipped.no_job += 1;
            continue;
        };
        let twin = (
            job.clone(),
            record.communicator.clone(),
            record.rank,
            record.collective.clone(),
            record.seq,
        );
        if seen.insert(twin) {
            read.jobs.entry(job).or_default().push(record);
        }
    }
    read
}

/// The record's job: its `slurm_job_id`, else the `slurm_job` label; neither empty nor
/// `unknown`.
fn job_of(record: &CollectiveRecord, labels: &[(&str, &str)]) -> Option<String> {
    let named = |j: &&str| !j.is_empty() && *j != "unknown";
    record
        .job
        .as_deref()
        .filter(named)
        .or_else(|| {
            labels
                .iter()
                .find(|(k, _)| *k == "slurm_job")
                .map(|(_, v)| *v)
                .filter(named)
        })
        .map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The labels the plugin writes for rank `rank`'s collective `sn`, and the scrape's.
    fn labels(metric: &str, rank: u32, sn: u64, job_id: &str) -> BTreeMap<String, String> {
        [
            ("__name__", metric.to_string()),
            ("comm_id", "0x5a0000000004".into()),
            ("hostname", format!("node00{}", rank / 4 + 1)),
            ("rank", rank.to_string()),
            ("slurm_job", "train".into()),
            ("slurm_job_id", job_id.into()),
            ("nranks", "16".into()),
            ("n_nodes", "4".into()),
            ("gpu_device_id", format!("GPU{}", rank % 4)),
            ("collective", "AllReduce".into()),
            ("coll_sn", sn.to_string()),
            ("timestamp", "2026-11-19T09:46:41Z".into()),
            ("message_size", "256.00MB".into()),
            ("instance", "127.0.0.1:39145".into()),
            ("job", "node".into()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect()
    }

    /// The three series of one collective, each scraped at `at_ms`.
    fn collective(rank: u32, sn: u64, job_id: &str, at_ms: i64) -> Vec<Series> {
        TEXTFILE_METRICS
            .iter()
            .zip([12.5, 23.4, 20_100.0])
            .map(|(m, v)| Series {
                labels: labels(m, rank, sn, job_id),
                samples: vec![(at_ms, v)],
            })
            .collect()
    }

    #[test]
    fn three_series_make_one_record_of_their_job() {
        let series = collective(6, 41, "4646", 1_795_000_002_000);
        let read = job_records(&series);
        assert_eq!(read.skipped, RecordsSkipped::default());
        let records = &read.jobs["4646"];
        assert_eq!(records.len(), 1);
        let r = &records[0];
        assert_eq!(
            (r.rank, r.n_ranks, r.n_nodes, r.seq),
            (6, 16, 4, 41),
            "{r:?}"
        );
        assert_eq!((r.hostname.as_str(), r.gpu), ("node002", Some(2)));
        assert_eq!(r.bytes, 256 << 20);
        assert_eq!(
            (r.algobw_gbs, r.busbw_gbs, r.exec_us),
            (12.5, 23.4, 20_100.0)
        );
        // The `timestamp` label, not the scrape's time.
        assert_eq!(r.at_us, 1_795_081_601.0e6);
    }

    #[test]
    fn a_later_plugins_collective_is_an_unknown_version_not_a_bad_record() {
        // `version="v5.1"` (model's testdata later-textfile.prom): its two series, no rank,
        // comm_id or coll_sn.
        let series: Vec<Series> = [
            ("nccl_bus_bandwidth_gbs", 678.263),
            ("nccl_collective_exec_time_microseconds", 9498.47),
        ]
        .into_iter()
        .map(|(metric, value)| Series {
            labels: [
                ("__name__", metric),
                ("version", "v5.1"),
                ("slurm_job_id", "4646"),
                ("node", "nvl72004-T01"),
                ("gpu", "GPU0"),
                ("comm_name", "DP Group 0"),
                ("n_nodes", "1"),
                ("nranks", "4"),
                ("collective", "AllReduce"),
                ("message_size", "4-5GB"),
                ("algo_proto", "Ring_ll"),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
            samples: vec![(1_795_000_002_000, value)],
        })
        .collect();
        let mut all = series;
        // A v4 collective beside it (which writes no `version`) is read.
        all.extend(collective(6, 41, "4646", 1_795_000_002_000));
        let read = job_records(&all);
        assert_eq!(
            read.skipped,
            RecordsSkipped {
                unknown_version: 1,
                ..RecordsSkipped::default()
            }
        );
        assert_eq!(read.jobs["4646"].len(), 1);
    }

    #[test]
    fn a_collective_missing_a_series_or_a_job_is_counted() {
        let mut series = collective(6, 41, "4646", 1_795_000_002_000);
        series.pop();
        // Outside Slurm: no id, a name `unknown`.
        let mut nameless = collective(7, 41, "unknown", 1_795_000_002_000);
        for s in &mut nameless {
            s.labels.insert("slurm_job".into(), "unknown".into());
        }
        series.extend(nameless);
        // Named but without an id: the name is the job.
        series.extend(collective(8, 41, "unknown", 1_795_000_002_000));
        let read = job_records(&series);
        assert_eq!(
            read.skipped,
            RecordsSkipped {
                bad_records: 1,
                no_job: 1,
                ..RecordsSkipped::default()
            }
        );
        assert_eq!(read.jobs.keys().collect::<Vec<_>>(), ["train"]);
    }

    #[test]
    fn the_same_collective_from_two_targets_is_one_record() {
        let mut series = collective(6, 41, "4646", 1_795_000_002_000);
        let mut twin = collective(6, 41, "4646", 1_795_000_002_500);
        for s in &mut twin {
            s.labels.insert("instance".into(), "10.0.0.2:9100".into());
        }
        series.extend(twin);
        series.extend(collective(6, 42, "4646", 1_795_000_003_000));
        let read = job_records(&series);
        let seqs: Vec<u64> = read.jobs["4646"].iter().map(|r| r.seq).collect();
        assert_eq!(seqs.len(), 2, "{seqs:?}");
        assert!(seqs.contains(&41) && seqs.contains(&42));
    }
}
