//! Prometheus's HTTP API answers (`/api/v1/query`, `/api/v1/query_range`), as its
//! documentation "HTTP API" gives them: an envelope `{"status": "success"|"error", "data":
//! {"resultType": "matrix", "result": [...]}, "errorType", "error", "warnings"}`, and a
//! matrix result of series `{"metric": {LABEL: VALUE, ...}, "values": [[UNIX_S, "VALUE"],
//! ...]}`. Sample values are strings (`"1.5"`, `"NaN"`, `"+Inf"`, `"-Inf"`), times are
//! Unix seconds as JSON numbers (to the millisecond).
//!
//! Parsing never panics on what a server (or something posing as one) sends: a body that
//! is not the envelope is an error; inside a matrix, a series that is not a series, and
//! samples that are not finite numbers, are skipped and counted ([`Skipped`]), and series
//! past the caller's cap are counted and not read.

use serde::Deserialize;
use serde_json::value::RawValue;
use std::collections::BTreeMap;

/// One series of a matrix: its labels (`__name__` included) and its samples in the order
/// given, (Unix ms, value), finite values only.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    /// The labels.
    pub labels: BTreeMap<String, String>,
    /// The samples, (Unix ms, value).
    pub samples: Vec<(i64, f64)>,
}

/// What a matrix held that was not read, by why.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Skipped {
    /// Results that are not a series (no `metric` object of strings, no `values` array of
    /// `[time, "value"]` pairs).
    pub bad_series: u64,
    /// Samples whose value is not a finite number (`NaN`, `+Inf`, `-Inf`, text), or whose
    /// time is not a finite number of seconds.
    pub bad_samples: u64,
    /// Series past the cap, not read.
    pub over_cap: u64,
}

/// A matrix read: the series, and what was skipped.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Matrix {
    /// The series read, in the answer's order.
    pub series: Vec<Series>,
    /// What was not.
    pub skipped: Skipped,
}

/// Why an answer is not a matrix.
#[derive(Debug, thiserror::Error)]
pub enum ResponseError {
    /// Not the API's JSON envelope.
    #[error("not Prometheus's API answer: {0}")]
    NotJson(#[from] serde_json::Error),
    /// The server answered with an error.
    #[error("Prometheus answered {error_type}: {error}")]
    Failed {
        /// `errorType` (`bad_data`, `timeout`, `execution`, ...).
        error_type: String,
        /// `error`, its words.
        error: String,
    },
    /// A successful answer that is not a matrix.
    #[error("Prometheus answered a {0} where a matrix was asked for")]
    NotMatrix(String),
}

/// The envelope, its result left raw so that each series is read on its own.
#[derive(Deserialize)]
struct Envelope<'a> {
    status: String,
    #[serde(default, borrow)]
    data: Option<Data<'a>>,
    #[serde(default, rename = "errorType")]
    error_type: Option<String>,
    #[serde(default)]
    error: Option<String>,
}

#[derive(Deserialize)]
struct Data<'a> {
    #[serde(rename = "resultType")]
    result_type: String,
    #[serde(borrow)]
    result: Vec<&'a RawValue>,
}

/// A series as sent, before its samples are checked.
#[derive(Deserialize)]
struct RawSeries {
    metric: BTreeMap<String, String>,
    values: Vec<(f64, String)>,
}

/// Reads a matrix answer, at most `max_series` of its series.
pub fn parse_matrix(body: &[u8], max_series: usize) -> Result<Matrix, ResponseError> {
    let envelope: Envelope<'_> = serde_json::from_slice(body)?;
    if envelope.status != "success" {
        return Err(ResponseError::Failed {
            error_type: envelope
                .error_type
                .unwrap_or_else(|| envelope.status.clone()),
            error: envelope.error.unwrap_or_default(),
        });
    }
    let Some(data) = envelope.data else {
        return Err(ResponseError::NotMatrix("success without data".into()));
    };
    if data.result_type != "matrix" {
        return Err(ResponseError::NotMatrix(data.result_type));
    }
    let mut matrix = Matrix::default();
    matrix.skipped.over_cap = data.result.len().saturating_sub(max_series) as u64;
    for raw in data.result.into_iter().take(max_series) {
        let Ok(series) = serde_json::from_str::<RawSeries>(raw.get()) else {
            matrix.skipped.bad_series += 1;
            continue;
        };
        let mut samples = Vec::with_capacity(series.values.len());
        for (time_s, value) in series.values {
            match (ms(time_s), number(&value)) {
                (Some(at), Some(v)) => samples.push((at, v)),
                _ => matrix.skipped.bad_samples += 1,
            }
        }
        matrix.series.push(Series {
            labels: series.metric,
            samples,
        });
    }
    Ok(matrix)
}

/// A sample's time, Unix seconds, in ms; `None` when not finite or out of range.
fn ms(time_s: f64) -> Option<i64> {
    let ms = (time_s * 1000.0).round();
    (ms.is_finite() && ms.abs() < 9.0e15).then_some(ms as i64)
}

/// A sample's value when it is a finite number (Prometheus writes `NaN`, `+Inf`, `-Inf`
/// as such: none of them a measurement).
fn number(text: &str) -> Option<f64> {
    text.parse::<f64>().ok().filter(|v| v.is_finite())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// An answer in the shape Prometheus 2.42 gives to `{__name__=~"nccl_.*"}[10s]` (the
    /// labels node_exporter passes on from the plugin's textfile, and the scrape's
    /// `instance` and `job`): one series scraped twice, one once, a third whose value went
    /// `NaN`, then `+Inf`.
    const ANSWER: &str = r#"{"status":"success","data":{"resultType":"matrix","result":[
      {"metric":{"__name__":"nccl_bus_bandwidth_gbs","coll_sn":"41","collective":"AllReduce",
        "comm_id":"0x5a0000000004","gpu_device_id":"GPU2","hostname":"node002",
        "instance":"127.0.0.1:39145","job":"node","message_size":"256.00MB","n_nodes":"4",
        "nranks":"16","rank":"6","slurm_job":"train","slurm_job_id":"4646",
        "timestamp":"2026-11-19T09:46:41Z"},
       "values":[[1795000002.123,"23.4"],[1795000003.123,"23.4"]]},
      {"metric":{"__name__":"nccl_collective_exec_time_microseconds","coll_sn":"41",
        "rank":"6"},
       "values":[[1795000003.124,"20100"]]},
      {"metric":{"__name__":"nccl_algorithm_bandwidth_gbs","rank":"7"},
       "values":[[1795000003.125,"NaN"],[1795000004.125,"+Inf"],[1795000005.125,"12.5"]]}
    ]}}"#;

    #[test]
    fn a_matrix_answer_reads_series_with_their_labels_and_samples() {
        let m = parse_matrix(ANSWER.as_bytes(), 100).unwrap();
        assert_eq!(m.series.len(), 3);
        let first = &m.series[0];
        assert_eq!(first.labels["__name__"], "nccl_bus_bandwidth_gbs");
        assert_eq!(first.labels["slurm_job_id"], "4646");
        assert_eq!(first.labels["gpu_device_id"], "GPU2");
        assert_eq!(first.labels.len(), 15);
        assert_eq!(
            first.samples,
            [(1_795_000_002_123, 23.4), (1_795_000_003_123, 23.4)]
        );
        assert_eq!(m.series[1].samples, [(1_795_000_003_124, 20100.0)]);
        // NaN and +Inf are no measurement: skipped and counted.
        assert_eq!(m.series[2].samples, [(1_795_000_005_125, 12.5)]);
        assert_eq!(
            m.skipped,
            Skipped {
                bad_series: 0,
                bad_samples: 2,
                over_cap: 0
            }
        );
    }

    #[test]
    fn series_past_the_cap_are_counted_not_read() {
        let m = parse_matrix(ANSWER.as_bytes(), 1).unwrap();
        assert_eq!(m.series.len(), 1);
        assert_eq!(m.skipped.over_cap, 2);
        assert_eq!(
            m.skipped.bad_samples, 0,
            "the series not read are not judged"
        );
    }

    #[test]
    fn results_that_are_not_series_are_counted() {
        let body = r#"{"status":"success","data":{"resultType":"matrix","result":[
            {"metric":{"rank":6},"values":[[1,"2"]]},
            {"metric":{"rank":"6"}},
            {"metric":{"rank":"6"},"values":[["soon","2"]]},
            17,
            {"metric":{},"values":[[1795000000,"1"]],"extra":true}
        ]}}"#;
        let m = parse_matrix(body.as_bytes(), 100).unwrap();
        assert_eq!(m.skipped.bad_series, 4);
        assert_eq!(m.series.len(), 1, "unknown fields are taken: {m:?}");
        assert_eq!(m.series[0].samples, [(1_795_000_000_000, 1.0)]);
    }

    #[test]
    fn errors_and_other_shapes_are_errors() {
        let failed = r#"{"status":"error","errorType":"bad_data","error":"parse error at char 3"}"#;
        match parse_matrix(failed.as_bytes(), 10) {
            Err(ResponseError::Failed { error_type, error }) => {
                assert_eq!(error_type, "bad_data");
                assert_eq!(error, "parse error at char 3");
            }
            other => panic!("{other:?}"),
        }
        let vector = r#"{"status":"success","data":{"resultType":"vector","result":[]}}"#;
        assert!(matches!(
            parse_matrix(vector.as_bytes(), 10),
            Err(ResponseError::NotMatrix(t)) if t == "vector"
        ));
        assert!(matches!(
            parse_matrix(b"<html>502 Bad Gateway</html>", 10),
            Err(ResponseError::NotJson(_))
        ));
        let empty = r#"{"status":"success","data":{"resultType":"matrix","result":[]}}"#;
        assert_eq!(
            parse_matrix(empty.as_bytes(), 10).unwrap(),
            Matrix::default()
        );
    }

    /// A sample value as Prometheus may write one, or garbage.
    fn arb_value() -> impl Strategy<Value = String> {
        prop_oneof![
            any::<f64>().prop_map(|v| v.to_string()),
            Just("NaN".to_string()),
            Just("+Inf".to_string()),
            Just("-Inf".to_string()),
            "[a-z0-9.+-]{0,6}",
        ]
    }

    fn arb_labels() -> impl Strategy<Value = BTreeMap<String, String>> {
        proptest::collection::btree_map("[a-z_]{1,8}", "[a-zA-Z0-9.]{0,8}", 0..5)
    }

    /// Samples: finite times (JSON has no others), values as [`arb_value`].
    fn arb_values() -> impl Strategy<Value = Vec<(f64, String)>> {
        let time = any::<f64>().prop_filter("JSON numbers are finite", |t| t.is_finite());
        proptest::collection::vec((time, arb_value()), 0..4)
    }

    /// A result that is a series, or one that is missing a part or has the wrong types.
    fn arb_result() -> impl Strategy<Value = serde_json::Value> {
        prop_oneof![
            (arb_labels(), arb_values())
                .prop_map(|(m, v)| serde_json::json!({"metric": m, "values": v})),
            arb_labels().prop_map(|m| serde_json::json!({"metric": m})),
            arb_values().prop_map(|v| serde_json::json!({"values": v})),
            any::<i64>().prop_map(|n| serde_json::json!(n)),
            Just(serde_json::json!({"metric": {"rank": 6}, "values": [[1, 2]]})),
        ]
    }

    proptest! {
        /// Whatever the series, every result is read or counted, and only finite values
        /// are kept.
        #[test]
        fn every_result_is_read_or_counted(
            results in proptest::collection::vec(arb_result(), 0..8),
            cap in 0usize..10,
        ) {
            let body = serde_json::json!({
                "status": "success",
                "data": {"resultType": "matrix", "result": results},
            });
            let m = parse_matrix(body.to_string().as_bytes(), cap).unwrap();
            let n = results.len() as u64;
            prop_assert_eq!(m.series.len() as u64 + m.skipped.bad_series + m.skipped.over_cap, n);
            prop_assert!(m.series.iter().flat_map(|s| &s.samples).all(|(_, v)| v.is_finite()));
        }

        /// Bytes that are not an answer are an error, never a panic.
        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
            let _ = parse_matrix(&bytes, 10);
        }

        /// Nor are answers cut anywhere, or JSON-like text.
        #[test]
        fn cut_or_garbled_answers_never_panic(
            cut in any::<prop::sample::Index>(),
            text in "[{}\\[\\]\":,0-9a-z \n]{0,200}",
        ) {
            let at = cut.index(ANSWER.len() + 1);
            let _ = parse_matrix(&ANSWER.as_bytes()[..at], 10);
            let _ = parse_matrix(text.as_bytes(), 10);
        }
    }
}
