//! Deserialising settings written the way the rest of skywave writes them ("4s", "250ms").

use std::time::Duration;

use serde::{Deserialize, Deserializer};

/// An optional duration such as `"4s"` or `"250ms"`.
pub(crate) fn opt_duration<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
    let s: Option<String> = Option::deserialize(d)?;
    s.map(|s| skywave_sim::config::parse_duration(&s).map_err(serde::de::Error::custom))
        .transpose()
}

/// A duration such as `"4s"` or `"250ms"`.
pub(crate) fn duration<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
    let s = String::deserialize(d)?;
    skywave_sim::config::parse_duration(&s).map_err(serde::de::Error::custom)
}
