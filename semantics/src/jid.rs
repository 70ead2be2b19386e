//! Salt job ids (`salt/utils/jid.py`): validation, display, and a strictly
//! increasing sans-IO generator fed with the current time.

use std::fmt;

use chrono::{DateTime, NaiveDate, Utc};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Length of the time part of a jid: `%Y%m%d%H%M%S%f`, microseconds last.
const TIME_DIGITS: usize = 20;

/// Month abbreviations as Python's `calendar.month_abbr` (index 0 is empty).
const MONTHS: [&str; 13] = [
    "", "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

/// Why a string is not a job id.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JidError {
    /// The length is neither 20 nor more than 21 with `_` at index 20.
    #[error("invalid jid \"{0}\": expected 20 digits, optionally followed by \"_\" and a suffix")]
    Length(String),
    /// The first 20 characters are not all decimal digits.
    #[error("invalid jid \"{0}\": the first 20 characters must be decimal digits")]
    NotDigits(String),
}

/// A validated Salt job id such as `20131219110700123489`.
///
/// Ordering is the string's: for the 20-digit time part that is time order.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Jid(String);

impl Jid {
    /// Validates `s` with Salt's `is_jid` rule: 20 characters, or more than 21
    /// with `_` at index 20, the first 20 being digits.
    ///
    /// Salt checks the digits with Python's `int()`, which would also accept a
    /// sign, blanks or `_`; saltq accepts ASCII digits only.
    pub fn parse(s: &str) -> Result<Jid, JidError> {
        let bytes = s.as_bytes();
        let len_ok = bytes.len() == TIME_DIGITS
            || (bytes.len() > TIME_DIGITS + 1 && bytes[TIME_DIGITS] == b'_');
        if !len_ok {
            return Err(JidError::Length(s.to_owned()));
        }
        if !bytes[..TIME_DIGITS].iter().all(u8::is_ascii_digit) {
            return Err(JidError::NotDigits(s.to_owned()));
        }
        Ok(Jid(s.to_owned()))
    }

    /// The jid for `time`: UTC `%Y%m%d%H%M%S%f`.
    pub fn from_time(time: DateTime<Utc>) -> Jid {
        Jid(time.format("%Y%m%d%H%M%S%6f").to_string())
    }

    /// The jid as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Salt's `jid_to_time`: `"2013, Dec 19 11:07:00.123489"` for `20131219110700123489`.
    ///
    /// A month outside 1..=12 is shown as its two digits (Salt would raise).
    pub fn to_time_string(&self) -> String {
        let d = &self.0;
        let month = d[4..6]
            .parse::<usize>()
            .ok()
            .and_then(|m| MONTHS.get(m).copied())
            .unwrap_or(&d[4..6]);
        format!(
            "{}, {} {} {}:{}:{}.{}",
            &d[..4],
            month,
            &d[6..8],
            &d[8..10],
            &d[10..12],
            &d[12..14],
            &d[14..20]
        )
    }

    /// The UTC time the jid encodes, or `None` when its digits are not a real date.
    pub fn timestamp(&self) -> Option<DateTime<Utc>> {
        let d = &self.0;
        let num = |r: std::ops::Range<usize>| d[r].parse::<u32>().ok();
        let year = i32::try_from(num(0..4)?).ok()?;
        let date = NaiveDate::from_ymd_opt(year, num(4..6)?, num(6..8)?)?;
        let time = date.and_hms_micro_opt(num(8..10)?, num(10..12)?, num(12..14)?, num(14..20)?)?;
        Some(time.and_utc())
    }
}

impl fmt::Display for Jid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::str::FromStr for Jid {
    type Err = JidError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Jid::parse(s)
    }
}

impl Serialize for Jid {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for Jid {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let s = String::deserialize(deserializer)?;
        Jid::parse(&s).map_err(serde::de::Error::custom)
    }
}

/// Issues strictly increasing jids from the times it is given (sans-IO: the
/// caller reads the clock and persists [`JidGenerator::last`]).
#[derive(Debug, Clone, Default)]
pub struct JidGenerator {
    /// Microseconds since the Unix epoch of the last jid issued, so the next
    /// one can be made later even when the clock stands still or steps back.
    last: Option<i64>,
}

impl JidGenerator {
    /// A generator that will only issue jids after `last_issued` (the value
    /// persisted before a restart). A jid whose digits are not a real date is
    /// ignored, as no time can be computed from it.
    pub fn new(last_issued: Option<&Jid>) -> JidGenerator {
        let last = last_issued
            .and_then(Jid::timestamp)
            .map(|t| t.timestamp_micros());
        JidGenerator { last }
    }

    /// The jid for `now`, or the last jid plus one microsecond when `now` is not
    /// past it (the arithmetic is on the time, so seconds and days carry).
    pub fn next(&mut self, now: DateTime<Utc>) -> Jid {
        let now_micros = now.timestamp_micros();
        let micros = match self.last {
            Some(last) if now_micros <= last => last.saturating_add(1),
            _ => now_micros,
        };
        self.last = Some(micros);
        Jid::from_time(DateTime::from_timestamp_micros(micros).unwrap_or(now))
    }

    /// The last jid issued, to persist so a restart cannot reuse it.
    pub fn last(&self) -> Option<Jid> {
        self.last
            .and_then(DateTime::from_timestamp_micros)
            .map(Jid::from_time)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{Duration, TimeZone};

    fn at(y: i32, mo: u32, d: u32, h: u32, mi: u32, s: u32, us: u32) -> DateTime<Utc> {
        let base = Utc.with_ymd_and_hms(y, mo, d, h, mi, s).single();
        base.map(|t| t + Duration::microseconds(i64::from(us)))
            .unwrap_or_default()
    }

    #[test]
    fn parse_follows_is_jid() {
        let cases: &[(&str, bool)] = &[
            ("20131219110700123489", true),
            ("20131219110700123489_1234", true),
            ("20131219110700123489_", false),
            ("2013121911070012348", false),
            ("201312191107001234890", false),
            ("2013121911070012348x", false),
            ("x0131219110700123489", false),
            ("", false),
            ("20131219110700123489-12", false),
        ];
        for (input, ok) in cases {
            assert_eq!(Jid::parse(input).is_ok(), *ok, "{input}");
        }
    }

    #[test]
    fn errors_name_the_value() {
        let err = Jid::parse("abc").map(|_| ()).unwrap_err().to_string();
        assert_eq!(
            err,
            "invalid jid \"abc\": expected 20 digits, optionally followed by \"_\" and a suffix"
        );
        let err = Jid::parse("2013121911070012348x")
            .map(|_| ())
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "invalid jid \"2013121911070012348x\": the first 20 characters must be decimal digits"
        );
    }

    #[test]
    fn time_string_is_salts() {
        let jid = Jid::parse("20131219110700123489").ok();
        let text = jid.map(|j| j.to_time_string());
        assert_eq!(text.as_deref(), Some("2013, Dec 19 11:07:00.123489"));
    }

    #[test]
    fn timestamp_round_trips() {
        let t = at(2013, 12, 19, 11, 7, 0, 123_489);
        let jid = Jid::from_time(t);
        assert_eq!(jid.as_str(), "20131219110700123489");
        assert_eq!(jid.timestamp(), Some(t));
        let bad = Jid::parse("20131319110700123489").ok();
        assert_eq!(bad.and_then(|j| j.timestamp()), None);
    }

    #[test]
    fn serde_is_a_validated_string() {
        let jid: Result<Jid, _> = serde_json::from_str("\"20131219110700123489\"");
        assert_eq!(
            jid.as_ref().map(Jid::as_str).ok(),
            Some("20131219110700123489")
        );
        let json = jid.ok().and_then(|j| serde_json::to_string(&j).ok());
        assert_eq!(json.as_deref(), Some("\"20131219110700123489\""));
        assert!(serde_json::from_str::<Jid>("\"nope\"").is_err());
    }

    #[test]
    fn generator_uses_the_clock_when_it_moves() {
        let mut g = JidGenerator::new(None);
        let a = g.next(at(2026, 11, 20, 23, 57, 48, 134_119));
        let b = g.next(at(2026, 11, 20, 23, 57, 49, 0));
        assert_eq!(a.as_str(), "20261120235748134119");
        assert_eq!(b.as_str(), "20261120235749000000");
        assert_eq!(g.last(), Some(b));
    }

    #[test]
    fn generator_carries_across_seconds_minutes_and_years() {
        let mut g = JidGenerator::new(None);
        let t = at(2026, 12, 31, 23, 59, 59, 999_999);
        assert_eq!(g.next(t).as_str(), "20261231235959999999");
        assert_eq!(g.next(t).as_str(), "20270101000000000000");
        assert_eq!(g.next(t).as_str(), "20270101000000000001");
    }

    #[test]
    fn generator_survives_a_clock_step_back() {
        let mut g = JidGenerator::new(None);
        let first = g.next(at(2026, 1, 1, 12, 0, 0, 500));
        let stepped = g.next(at(2026, 1, 1, 11, 0, 0, 0));
        assert_eq!(first.as_str(), "20260101120000000500");
        assert_eq!(stepped.as_str(), "20260101120000000501");
        let later = g.next(at(2026, 1, 1, 12, 0, 1, 0));
        assert_eq!(later.as_str(), "20260101120001000000");
    }

    #[test]
    fn generator_resumes_after_the_persisted_jid() {
        let persisted = Jid::parse("20260101120000999999").ok();
        let mut g = JidGenerator::new(persisted.as_ref());
        let next = g.next(at(2025, 1, 1, 0, 0, 0, 0));
        assert_eq!(next.as_str(), "20260101120001000000");
    }

    #[test]
    fn thousand_jids_in_one_microsecond_are_unique_and_increasing() {
        let mut g = JidGenerator::new(None);
        let now = at(2026, 6, 1, 8, 59, 59, 999_500);
        let jids: Vec<Jid> = (0..1000).map(|_| g.next(now)).collect();
        assert!(jids.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(jids[0].as_str(), "20260601085959999500");
        assert_eq!(jids[499].as_str(), "20260601085959999999");
        assert_eq!(jids[500].as_str(), "20260601090000000000");
        assert_eq!(jids[999].as_str(), "20260601090000000499");
        assert!(jids.iter().all(|j| j.timestamp().is_some()));
    }
}
