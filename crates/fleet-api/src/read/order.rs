//! Serialising a value as the `serde_json::Value` it used to be built as.
//!
//! The read API's answers were built with `json!` and `to_value`, so the keys of every
//! object came out in `serde_json::Map`'s order: sorted, this workspace's serde_json having no
//! `preserve_order`. The types of this module's parent declare their own fields in that
//! order; a type they embed from `model` or `analyze`, declared in the order that reads best
//! there, is serialised through here instead, so that its bytes stay what they were.

use serde::ser::Error as _;
use serde::{Serialize, Serializer};

/// `#[serde(serialize_with = "via_value")]`: `value` serialised as its `serde_json::Value`.
pub fn via_value<T: Serialize, S: Serializer>(value: &T, s: S) -> Result<S::Ok, S::Error> {
    serde_json::to_value(value)
        .map_err(S::Error::custom)?
        .serialize(s)
}
