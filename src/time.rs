//! UTC timestamps, as the journal, session ids and reports write them.
//!
//! The calendar arithmetic is jiff's (already compiled in through gix); this type only fixes
//! the two text forms git-bmad uses, always in UTC, so no time-zone database is read. The one
//! local time is [`local_offset`], the C library's, which commits are dated with as git's are.

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

    /// A timestamp from milliseconds since the epoch.
    pub fn from_millis(millis: u64) -> Self {
        Timestamp { millis }
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
        self.civil().strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
    }

    /// `2026-11-22T10:15:00Z` (any RFC 3339 offset) back to a timestamp; `None` when it is
    /// not one, or before 1970.
    pub fn parse_rfc3339(text: &str) -> Option<Timestamp> {
        let at: jiff::Timestamp = text.trim().parse().ok()?;
        let millis = u64::try_from(at.as_millisecond()).ok()?;
        Some(Timestamp { millis })
    }

    /// `20261122-101500`: the compact form used in session ids.
    pub fn compact(&self) -> String {
        self.civil().strftime("%Y%m%d-%H%M%S").to_string()
    }

    /// The same instant in jiff's calendar, in UTC.
    fn civil(&self) -> jiff::civil::DateTime {
        let at = jiff::Timestamp::from_millisecond(self.millis as i64)
            .unwrap_or(jiff::Timestamp::UNIX_EPOCH);
        at.to_zoned(jiff::tz::TimeZone::UTC).datetime()
    }
}

/// The local time zone's offset from UTC at `seconds` since the epoch, in seconds east, as
/// the C library reckons it (`TZ`, else `/etc/localtime`): the offset git records in a
/// commit made at that instant. UTC when the C library cannot tell.
pub fn local_offset(seconds: i64) -> i32 {
    let at: libc::time_t = seconds;
    // SAFETY: `tm` is plain integers (and a pointer `localtime_r` sets), all zero is a
    // valid value of it, and `localtime_r` writes only into it; on a null return (a time
    // it cannot represent) it is not read.
    let gmtoff = unsafe {
        let mut tm: libc::tm = std::mem::zeroed();
        if libc::localtime_r(&at, &mut tm).is_null() {
            return 0;
        }
        tm.tm_gmtoff
    };
    i32::try_from(gmtoff).unwrap_or(0)
}

/// `90s`, `30m`, `2h`, `1h30m`, or plain seconds; zero is not a duration.
pub fn parse_duration(text: &str) -> Option<Duration> {
    let text = text.trim();
    if let Ok(secs) = text.parse::<u64>() {
        return (secs > 0).then(|| Duration::from_secs(secs));
    }
    let mut total = 0u64;
    let mut number = String::new();
    for c in text.chars() {
        if c.is_ascii_digit() {
            number.push(c);
            continue;
        }
        let unit = match c {
            's' => 1,
            'm' => 60,
            'h' => 3600,
            'd' => 86400,
            _ => return None,
        };
        let n: u64 = number.parse().ok()?;
        total = total.checked_add(n.checked_mul(unit)?)?;
        number.clear();
    }
    (number.is_empty() && total > 0).then(|| Duration::from_secs(total))
}

#[cfg(test)]
mod tests {
    use super::Timestamp;

    #[test]
    fn parses_what_it_formats() {
        let at = Timestamp::from_secs(1_795_342_500);
        assert_eq!(Timestamp::parse_rfc3339(&at.rfc3339()), Some(at));
        assert_eq!(
            Timestamp::parse_rfc3339("2026-11-22T11:15:00+01:00"),
            Some(at)
        );
        assert_eq!(Timestamp::parse_rfc3339("yesterday"), None);
        assert_eq!(Timestamp::parse_rfc3339("1969-12-31T23:59:59Z"), None);
    }

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
