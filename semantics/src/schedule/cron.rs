//! Five-field cron expressions as croniter reads them for Salt's `cron` schedule option:
//! `minute hour day-of-month month day-of-week`, with `*`, lists, ranges, steps and the
//! month and weekday names; day-of-month and day-of-week both restricted means either
//! matches (Vixie cron's rule, which croniter keeps). Times are naive local wall times.

use chrono::{Datelike, Duration, NaiveDate, NaiveDateTime, NaiveTime, Timelike};

/// A parsed cron expression.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cron {
    minutes: u64,
    hours: u32,
    days: u32,
    months: u16,
    weekdays: u8,
    dom_star: bool,
    dow_star: bool,
}

const MONTHS: [&str; 12] = [
    "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
];
const WEEKDAYS: [&str; 7] = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"];

/// One field: the bit set of allowed values and whether it was `*`.
fn field(text: &str, lo: u32, hi: u32, names: &[&str]) -> Option<(u64, bool)> {
    let value = |s: &str| -> Option<u32> {
        let s = s.to_ascii_lowercase();
        if let Some(i) = names.iter().position(|n| *n == s) {
            return Some(i as u32 + if names.len() == 12 { 1 } else { 0 });
        }
        s.parse().ok()
    };
    let mut bits = 0u64;
    for part in text.split(',') {
        let (range, step) = match part.split_once('/') {
            Some((r, s)) => (r, s.parse::<u32>().ok().filter(|s| *s > 0)?),
            None => (part, 1),
        };
        let (a, b) = if range == "*" {
            (lo, hi)
        } else if let Some((a, b)) = range.split_once('-') {
            (value(a)?, value(b)?)
        } else {
            let a = value(range)?;
            (a, if part.contains('/') { hi } else { a })
        };
        if a < lo || b > hi || a > b {
            return None;
        }
        let mut v = a;
        while v <= b {
            bits |= 1 << v;
            v += step;
        }
    }
    Some((bits, text == "*"))
}

impl Cron {
    /// Parses `m h dom mon dow`; `None` when croniter would raise (Salt then reports
    /// "Invalid cron string. Ignoring job <name>.").
    pub fn parse(text: &str) -> Option<Cron> {
        let parts: Vec<&str> = text.split_whitespace().collect();
        if parts.len() != 5 {
            return None;
        }
        let (minutes, _) = field(parts[0], 0, 59, &[])?;
        let (hours, _) = field(parts[1], 0, 23, &[])?;
        let (days, dom_star) = field(parts[2], 1, 31, &[])?;
        let (months, _) = field(parts[3], 1, 12, &MONTHS)?;
        // Sunday may be written 0 or 7.
        let (mut weekdays, dow_star) = field(parts[4], 0, 7, &WEEKDAYS)?;
        if weekdays & (1 << 7) != 0 {
            weekdays = (weekdays & !(1 << 7)) | 1;
        }
        Some(Cron {
            minutes,
            hours: hours as u32,
            days: days as u32,
            months: months as u16,
            weekdays: weekdays as u8,
            dom_star,
            dow_star,
        })
    }

    fn day_matches(&self, d: NaiveDate) -> bool {
        if self.months & (1 << d.month()) == 0 {
            return false;
        }
        let dom = self.days & (1 << d.day()) != 0;
        let dow = self.weekdays & (1 << d.weekday().num_days_from_sunday()) != 0;
        match (self.dom_star, self.dow_star) {
            (true, true) => true,
            (false, true) => dom,
            (true, false) => dow,
            (false, false) => dom || dow,
        }
    }

    /// The first matching minute strictly after `now` (croniter's `get_next`), or `None`
    /// when nothing matches within eight years (`0 0 30 2 *`).
    pub fn next_after(&self, now: NaiveDateTime) -> Option<NaiveDateTime> {
        let start = now.with_second(0)?.with_nanosecond(0)? + Duration::minutes(1);
        let mut day = start.date();
        let mut from = start.time();
        for _ in 0..(366 * 8) {
            if self.day_matches(day) {
                for h in from.hour()..24 {
                    if self.hours & (1 << h) == 0 {
                        continue;
                    }
                    let m0 = if h == from.hour() { from.minute() } else { 0 };
                    if let Some(m) = (m0..60).find(|m| self.minutes & (1 << m) != 0) {
                        return Some(day.and_time(NaiveTime::from_hms_opt(h, m, 0)?));
                    }
                }
            }
            day = day.succ_opt()?;
            from = NaiveTime::MIN;
        }
        None
    }
}
