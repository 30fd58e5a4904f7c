//! UTC timestamps in RFC 3339, without a calendar crate.
//!
//! Journal events, session ids and reports only ever need "now, in UTC, as text", so a
//! forty-line civil-date conversion is cheaper than a dependency and has no time-zone database.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A point in time, in whole seconds and milliseconds since the Unix epoch (UTC).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Timestamp {
    millis: u64,
}

impl Timestamp {
    /// The current time; a clock before 1970 reads as the epoch rather than failing.
    pub fn now() -> Self {
        let since = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or(Duration::ZERO);
        Timestamp {
            millis: since.as_millis() as u64,
        }
    }

    /// A timestamp from seconds since the epoch.
    pub fn from_secs(secs: u64) -> Self {
        Timestamp {
            millis: secs * 1000,
        }
    }

    /// Seconds since the epoch.
    pub fn secs(&self) -> u64 {
        self.millis / 1000
    }

    /// Milliseconds since the epoch.
    pub fn millis(&self) -> u64 {
        self.millis
    }

    /// `2026-11-22T10:15:00Z`: RFC 3339, second precision, always UTC.
    pub fn rfc3339(&self) -> String {
        let (y, mo, d, h, mi, s) = self.civil();
        format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}Z")
    }

    /// `20261122-101500`: the compact form used in session ids.
    pub fn compact(&self) -> String {
        let (y, mo, d, h, mi, s) = self.civil();
        format!("{y:04}{mo:02}{d:02}-{h:02}{mi:02}{s:02}")
    }

    /// (year, month, day, hour, minute, second) in UTC.
    fn civil(&self) -> (i64, u32, u32, u32, u32, u32) {
        let secs = self.secs() as i64;
        let days = secs.div_euclid(86_400);
        let rem = secs.rem_euclid(86_400);
        // Howard Hinnant's days-to-civil algorithm.
        let z = days + 719_468;
        let era = z.div_euclid(146_097);
        let doe = z.rem_euclid(146_097);
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
        let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
        let year = yoe + era * 400 + i64::from(month <= 2);
        (
            year,
            month,
            day,
            (rem / 3600) as u32,
            ((rem % 3600) / 60) as u32,
            (rem % 60) as u32,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::Timestamp;

    #[test]
    fn formats_known_instants() {
        assert_eq!(Timestamp::from_secs(0).rfc3339(), "1970-01-01T00:00:00Z");
        // 2000-02-29 is a leap day in a century leap year.
        assert_eq!(
            Timestamp::from_secs(951_782_400).rfc3339(),
            "2000-02-29T00:00:00Z"
        );
        assert_eq!(
            Timestamp::from_secs(1_795_342_500).rfc3339(),
            "2026-11-22T10:15:00Z"
        );
        assert_eq!(
            Timestamp::from_secs(1_795_342_500).compact(),
            "20261122-101500"
        );
    }
}
