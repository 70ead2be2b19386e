//! Date strings as Salt reads them for `when`, `range`, `skip_during_range`, `until` and
//! `after` (python-dateutil's `parser.parse`, the forms people write in schedules), and
//! `once`/`time_fmt` strings (`datetime.strptime`). Missing date parts default to today, a
//! weekday alone means its next occurrence from today on, a missing time is midnight: all
//! naive local wall times, as Salt has them.

use chrono::{Datelike, Duration, NaiveDate, NaiveDateTime, NaiveTime, Weekday};

const MONTHS: [&str; 12] = [
    "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
];
const WEEKDAYS: [(&str, Weekday); 7] = [
    ("mon", Weekday::Mon),
    ("tue", Weekday::Tue),
    ("wed", Weekday::Wed),
    ("thu", Weekday::Thu),
    ("fri", Weekday::Fri),
    ("sat", Weekday::Sat),
    ("sun", Weekday::Sun),
];

/// What the tokens of a date string said.
#[derive(Default)]
struct Parts {
    year: Option<i32>,
    month: Option<u32>,
    day: Option<u32>,
    weekday: Option<Weekday>,
    time: Option<(u32, u32, u32)>,
    pm: Option<bool>,
}

fn weekday(tok: &str) -> Option<Weekday> {
    let t = tok.to_ascii_lowercase();
    WEEKDAYS
        .iter()
        .find(|(n, _)| {
            t.len() >= 3
                && (t.starts_with(n)
                    && (t.len() == 3
                        || t.ends_with("day")
                        || t == "tues"
                        || t == "thur"
                        || t == "thurs"))
        })
        .map(|(_, w)| *w)
}

fn month(tok: &str) -> Option<u32> {
    let t = tok.to_ascii_lowercase();
    MONTHS
        .iter()
        .position(|m| t.len() >= 3 && t.starts_with(m))
        .map(|i| i as u32 + 1)
}

/// `H`, `H:MM`, `H:MM:SS`, optionally followed by `am`/`pm`.
fn time(tok: &str) -> Option<((u32, u32, u32), Option<bool>)> {
    let t = tok.to_ascii_lowercase();
    let (body, pm) = if let Some(b) = t.strip_suffix("am") {
        (b, Some(false))
    } else if let Some(b) = t.strip_suffix("pm") {
        (b, Some(true))
    } else {
        (t.as_str(), None)
    };
    if !body.contains(':') && pm.is_none() {
        return None;
    }
    let nums: Vec<u32> = body
        .split(':')
        .map(|p| p.split('.').next().unwrap_or(p).parse().ok())
        .collect::<Option<_>>()?;
    let (h, m, s) = match nums[..] {
        [h] => (h, 0, 0),
        [h, m] => (h, m, 0),
        [h, m, s] => (h, m, s),
        _ => return None,
    };
    (h < 24 && m < 60 && s < 60).then_some(((h, m, s), pm))
}

fn date(tok: &str, p: &mut Parts) -> bool {
    let (sep, ymd) = if tok.contains('-') {
        ('-', true)
    } else if tok.contains('/') {
        ('/', false)
    } else {
        return false;
    };
    let n: Vec<&str> = tok.split(sep).collect();
    let Ok(v) = n
        .iter()
        .map(|s| s.parse::<i32>())
        .collect::<Result<Vec<_>, _>>()
    else {
        return false;
    };
    let year = |y: i32, len: usize| if len <= 2 { 2000 + y } else { y };
    match v[..] {
        [a, b, c] if ymd || n[0].len() == 4 => {
            (p.year, p.month, p.day) = (Some(a), Some(b as u32), Some(c as u32));
        }
        [a, b, c] => {
            (p.year, p.month, p.day) = (Some(year(c, n[2].len())), Some(a as u32), Some(b as u32));
        }
        [a, b] if !ymd => (p.month, p.day) = (Some(a as u32), Some(b as u32)),
        _ => return false,
    }
    true
}

/// Parses a date string as dateutil does for the forms schedules use; `None` where dateutil
/// raises `ValueError` (Salt then names the job it ignores).
pub fn parse(text: &str, today: NaiveDate) -> Option<NaiveDateTime> {
    let text = text.trim();
    for fmt in [
        "%Y-%m-%dT%H:%M:%S",
        "%Y-%m-%dT%H:%M",
        "%Y-%m-%d %H:%M:%S",
        "%Y-%m-%d %H:%M",
    ] {
        if let Ok(t) = NaiveDateTime::parse_from_str(text, fmt) {
            return Some(t);
        }
    }
    let mut p = Parts::default();
    let tokens: Vec<&str> = text
        .split(|c: char| c.is_whitespace() || c == ',')
        .filter(|t| !t.is_empty())
        .collect();
    if tokens.is_empty() {
        return None;
    }
    for tok in tokens {
        let lower = tok.to_ascii_lowercase();
        if lower == "am" || lower == "pm" {
            p.pm = Some(lower == "pm");
        } else if let Some((t, pm)) = time(tok) {
            p.time = Some(t);
            p.pm = pm.or(p.pm);
        } else if date(tok, &mut p) {
        } else if let Some(w) = weekday(tok) {
            p.weekday = Some(w);
        } else if let Some(m) = month(tok) {
            p.month = Some(m);
        } else if let Ok(n) = tok.parse::<u32>() {
            match tok.len() {
                4 => p.year = Some(n as i32),
                1 | 2 if p.day.is_none() && n <= 31 => p.day = Some(n),
                1 | 2 if p.time.is_none() && n < 24 => p.time = Some((n, 0, 0)),
                _ => return None,
            }
        } else {
            return None;
        }
    }
    let (mut h, m, s) = p.time.unwrap_or((0, 0, 0));
    match p.pm {
        Some(true) if h < 12 => h += 12,
        Some(true) if h > 12 => return None,
        Some(false) if h == 12 => h = 0,
        Some(false) if h > 12 => return None,
        _ => {}
    }
    let mut d = NaiveDate::from_ymd_opt(
        p.year.unwrap_or(today.year()),
        p.month.unwrap_or(today.month()),
        p.day.unwrap_or(today.day()),
    )?;
    if let Some(w) = p.weekday {
        let ahead =
            (7 + w.num_days_from_monday() as i64 - d.weekday().num_days_from_monday() as i64) % 7;
        d += Duration::days(ahead);
    }
    Some(d.and_time(NaiveTime::from_hms_opt(h, m, s)?))
}

/// `datetime.strptime(text, fmt)` for the formats schedules use (`%Y-%m-%dT%H:%M:%S` by
/// default); a format without a time part gives midnight.
pub fn strptime(text: &str, fmt: &str) -> Option<NaiveDateTime> {
    NaiveDateTime::parse_from_str(text, fmt).ok().or_else(|| {
        NaiveDate::parse_from_str(text, fmt)
            .ok()
            .map(|d| d.and_time(NaiveTime::MIN))
    })
}
