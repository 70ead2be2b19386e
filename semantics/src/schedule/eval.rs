//! One job's evaluation, step by step as Salt's `eval` takes it: explicit runs, the timing
//! option (interval, `once`, `when`, `cron`), the splay, then — only when the job would
//! run — `range`, `skip_during_range`, `skip_explicit`, `until`, `after`, `enabled` and
//! `maxrunning`.

use chrono::{Duration, NaiveDateTime};
use serde_json::{Map, Value};

use super::{
    Eval, Fire, Globals, Opts, ReturnJob, Rng, Runtime, Step, Stop, Timing, chop, cron, err,
    job_function, py_int, when,
};
use crate::python::truthy;

/// What `range`/`skip_during_range`/`skip_explicit` decided.
struct Gate<'s> {
    run: bool,
    /// `skip_function`, when a range or skip swapped it in.
    func: Option<&'s str>,
}

fn explicit_times(list: Option<&Value>) -> Vec<NaiveDateTime> {
    let Some(Value::Array(items)) = list else {
        return Vec::new();
    };
    items
        .iter()
        .filter_map(|i| match i {
            Value::Object(m) => when::strptime(
                m.get("time")?.as_str()?,
                m.get("time_fmt")
                    .and_then(Value::as_str)
                    .unwrap_or(super::TIME_FMT),
            ),
            Value::String(s) => when::strptime(s, super::TIME_FMT),
            _ => None,
        })
        .collect()
}

/// One job's evaluation at `ev.now`: the fire, if it runs.
pub(super) fn eval_job(
    rt: &mut Runtime,
    rng: &mut Rng,
    loop_interval: i64,
    key: &str,
    data: &Map<String, Value>,
    ev: &Eval,
    g: &Globals,
) -> Option<Fire> {
    let li = Duration::seconds(loop_interval);
    let now = ev.now;
    let shape = rt.shape;
    let name = data.opt("name").and_then(Value::as_str).unwrap_or(key);
    let splay_cfg = if shape.splay {
        data.opt("splay")
    } else {
        g.splay
    };
    rt.error = None;
    rt.skip_reason = None;
    rt.skipped_time = None;
    if rt.run_on_start.is_none() && shape.run_on_start {
        rt.run_on_start = Some(true);
    }
    if shape.kinds > 1 {
        rt.error =
            Some(r#"Unable to use "when", "cron", "once" options together. Ignoring."#.into());
        return None;
    }
    let mut run = false;
    if shape.run_explicit || !rt.run_after.is_empty() {
        let mut times = explicit_times(data.opt("run_explicit"));
        times.extend(rt.run_after.iter().copied());
        if times.len() > 1 {
            times.retain(|t| *t >= now - li);
        }
        if let Some(first) = times.first()
            && *first <= now
            && now < *first + li
        {
            run = true;
            rt.next_fire = Some(*first);
        }
    }
    let timing = match shape.timing {
        Timing::Interval => time_elements(rt, data, now, name),
        Timing::Once => once(rt, data, now, li, name),
        Timing::When => when_(rt, data, ev, li, run, name),
        Timing::Cron => cron_(rt, data, now, name),
        Timing::None => return None,
    };
    if let Err(stop) = timing {
        if let Stop::Error(e) = stop {
            rt.error = Some(e);
        }
        return None;
    }
    let next_fire = rt.next_fire?;
    let mut seconds = (chop(next_fire) - chop(now)).num_seconds() as f64;
    let is_when = shape.when;
    if let Some(cfg) = splay_cfg.filter(|v| truthy(v)) {
        if rt.splay.is_none()
            && let Some(s) = rng.splay(cfg)
        {
            if now < next_fire + Duration::seconds(s) {
                rt.splay = Some(next_fire + Duration::seconds(s));
                if is_when {
                    rt.when_run = Some(true);
                }
            } else {
                run = true;
            }
        }
        if let Some(sp) = rt.splay {
            seconds = (sp - now).num_milliseconds() as f64 / 1000.0;
            if is_when {
                rt.next_fire = Some(sp);
            }
        }
    }
    let next_fire = rt.next_fire?;
    if rt.seconds.is_some() {
        run |= seconds <= 0.0;
    } else if is_when && rt.when_run == Some(true) {
        if next_fire <= now && now <= next_fire + li {
            rt.when_run = Some(false);
            run = true;
        }
    } else if shape.cron {
        if seconds <= 0.0 {
            rt.next_fire = None;
            run = true;
        }
    } else if shape.once {
        // Salt would fire a second time when two ticks land in the window; once is once.
        run |=
            next_fire <= now && now <= next_fire + li && rt.last_run.is_none_or(|l| l < next_fire);
    } else {
        run |= seconds == 0.0;
    }
    let mut func = job_function(data);
    if rt.run_on_start == Some(true) {
        run = true;
        rt.run_on_start = Some(false);
    } else if run {
        match gates(rt, data, now, li, g, name) {
            Ok(gate) => {
                run = gate.run;
                if gate.func.is_some() {
                    func = gate.func;
                }
            }
            Err(Stop::Error(e)) => {
                rt.error = Some(e);
                return None;
            }
            Err(Stop::Continue) => return None,
        }
    }
    if !g.enabled || !shape.enabled {
        skip(rt, "disabled", now);
        run = false;
    }
    if run && shape.jid_include && (ev.running)(name) as i64 >= shape.maxrunning {
        skip(rt, "maxrunning", now);
        run = false;
    }
    let fire = run.then(|| {
        let template = rt.template.get_or_insert_with(|| {
            let func = job_function(data).unwrap_or_default().to_owned();
            fire(data, name.to_owned(), func, shape.jid_include, 0.0)
        });
        let mut f = template.clone();
        // `skip_function` swapped in by a range or a skip.
        if func != job_function(data) {
            func.unwrap_or_default().clone_into(&mut f.func);
        }
        f.missed_by = missed_by(seconds);
        f
    });
    if run {
        rt.last_run = Some(now);
        rt.splay = None;
    }
    if let Some(secs) = rt.seconds {
        let due_again = if rt.skip_reason.is_some() {
            rt.next_fire.is_none_or(|t| t <= now)
        } else {
            run
        };
        if due_again {
            rt.next_fire = Some(now + Duration::seconds(secs));
        }
    }
    fire
}

fn skip(rt: &mut Runtime, reason: &'static str, now: NaiveDateTime) {
    rt.skip_reason = Some(reason);
    rt.skipped_time = Some(now);
}

pub(super) fn fire(
    data: &Map<String, Value>,
    name: String,
    func: String,
    jid_include: bool,
    seconds: f64,
) -> Fire {
    let returners = match data.opt("returner") {
        Some(Value::String(s)) => vec![s.clone()],
        Some(Value::Array(a)) => a
            .iter()
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect(),
        _ => Vec::new(),
    };
    let return_job = match data.opt("return_job") {
        Some(Value::String(s)) if s == "nocache" => ReturnJob::NoCache,
        Some(v) if !truthy(v) => ReturnJob::No,
        _ => ReturnJob::Master,
    };
    Fire {
        name,
        func,
        args: match data.opt("args") {
            Some(Value::Array(a)) => a.clone(),
            _ => Vec::new(),
        },
        kwargs: match data.opt("kwargs") {
            Some(Value::Object(m)) => m.clone(),
            _ => Map::new(),
        },
        jid_include,
        returners,
        return_config: data.opt("return_config").cloned(),
        return_kwargs: data.opt("return_kwargs").cloned(),
        return_job,
        metadata: data.opt("metadata").and_then(Value::as_object).cloned(),
        missed_by: missed_by(seconds),
    }
}

/// Seconds a run is late by (Salt's "runtime missed by N seconds"), 0 when on time.
fn missed_by(seconds: f64) -> i64 {
    if seconds < 0.0 { -(seconds as i64) } else { 0 }
}

/// `seconds`/`minutes`/`hours`/`days`: the interval, fixed at the first evaluation; the
/// first run one interval after it.
fn time_elements(
    rt: &mut Runtime,
    data: &Map<String, Value>,
    now: NaiveDateTime,
    name: &str,
) -> Step<()> {
    if rt.seconds.is_none() {
        let mut total = 0;
        for (k, mult) in [
            ("seconds", 1),
            ("minutes", 60),
            ("hours", 3600),
            ("days", 86400),
        ] {
            if let Some(v) = data.opt(k) {
                let Some(n) = py_int(v) else {
                    return err(format!(
                        "invalid literal for int() with base 10: {}. Ignoring job {name}.",
                        crate::python::repr(v)
                    ));
                };
                total += n * mult;
            }
        }
        rt.seconds = Some(total);
        if rt.next_fire.is_none() {
            rt.next_fire = Some(now + Duration::seconds(total));
        }
        rt.next_scheduled = Some(now + Duration::seconds(total));
    }
    Ok(())
}

fn once(
    rt: &mut Runtime,
    data: &Map<String, Value>,
    now: NaiveDateTime,
    li: Duration,
    name: &str,
) -> Step<()> {
    if let Some(t) = rt.next_fire
        && (t < now - li || (t > now && rt.splay.is_none()))
    {
        return Err(Stop::Continue);
    }
    if rt.next_fire.is_none() && rt.splay.is_none() {
        let fmt = data
            .opt("once_fmt")
            .and_then(Value::as_str)
            .unwrap_or(super::TIME_FMT);
        let raw = data.opt("once").cloned().unwrap_or(Value::Null);
        let Some(t) = raw.as_str().and_then(|s| when::strptime(s, fmt)) else {
            return err(format!(
                "Date string could not be parsed: {}, {fmt}. Ignoring job {name}.",
                crate::python::str(&raw)
            ));
        };
        rt.next_fire = Some(t);
        rt.next_scheduled = Some(t);
        if t < now - li {
            return Err(Stop::Continue);
        }
    }
    Ok(())
}

/// Looks a `when` item up in the pillar's, then the grains' `whens` (Salt's `i in whens`:
/// a dict's key, a list's item, a string's substring); the text to parse, `None` when it is
/// not a string.
fn lookup_when<'v>(
    item: &'v Value,
    pillar: Option<&'v Value>,
    grains: Option<&'v Value>,
    name: &str,
) -> Step<Option<&'v str>> {
    let key = item.as_str().unwrap_or_default();
    for (whens, what) in [(pillar, "Pillar item"), (grains, "Grain")] {
        let Some(whens) = whens else { continue };
        match whens {
            Value::Object(m) => match m.opt(key) {
                Some(v) => return Ok(v.as_str()),
                None => continue,
            },
            Value::Array(a) if a.iter().any(|v| v.as_str() == Some(key)) => {}
            Value::String(s) if s.contains(key) => {}
            _ => continue,
        }
        return err(format!(
            "{what} \"whens\" must be a dict. Ignoring job {name}."
        ));
    }
    Ok(item.as_str())
}

fn when_(
    rt: &mut Runtime,
    data: &Map<String, Value>,
    ev: &Eval,
    li: Duration,
    run: bool,
    name: &str,
) -> Step<()> {
    let now = ev.now;
    let today = now.date();
    let items: &[Value] = match data.opt("when") {
        Some(Value::Array(a)) => a,
        Some(v) => std::slice::from_ref(v),
        None => &[],
    };
    // Each item parsed once a day (a time without a date is today's), again only when its
    // text changes (a `whens` lookup may).
    if !matches!(&rt.when_cache, Some((d, c)) if *d == today && c.len() == items.len()) {
        rt.when_cache = Some((today, Vec::with_capacity(items.len())));
    }
    let Some((_, cache)) = rt.when_cache.as_mut() else {
        return Err(Stop::Continue);
    };
    // Salt sorts the times and keeps those not yet past, or the latest one when all are
    // past (it tells whether it was run); the first of them is what counts.
    let mut count = 0;
    let (mut first_ahead, mut latest) = (None::<NaiveDateTime>, None::<NaiveDateTime>);
    let mut note = |t: NaiveDateTime| {
        count += 1;
        if t >= now - li {
            first_ahead = Some(first_ahead.map_or(t, |f| f.min(t)));
        }
        latest = Some(latest.map_or(t, |l| l.max(t)));
    };
    for (i, item) in items.iter().enumerate() {
        let text = lookup_when(item, ev.pillar_whens, ev.grain_whens, name)?;
        let t = match cache.get(i) {
            Some((c, t)) if Some(c.as_str()) == text => *t,
            _ => {
                let t = text.and_then(|s| when::parse(s, today));
                let entry = (text.unwrap_or_default().to_owned(), t);
                match cache.get_mut(i) {
                    Some(slot) => *slot = entry,
                    None => cache.push(entry),
                }
                t
            }
        };
        let Some(t) = t else {
            return err(format!(
                "Invalid date string {}. Ignoring job {name}.",
                crate::python::str(item)
            ));
        };
        note(t);
    }
    if let Some(s) = rt.splay {
        note(s);
    }
    let first = if count > 1 {
        first_ahead.or(latest)
    } else {
        latest
    };
    let Some(first) = first else {
        if !rt.when_run.unwrap_or(false) {
            rt.next_fire = None;
            return Err(Stop::Continue);
        }
        return Ok(());
    };
    if first < now - li && !rt.when_run.unwrap_or(false) && !run && rt.splay.is_none() {
        rt.next_fire = None;
        return Err(Stop::Continue);
    }
    if rt.when_run.is_none() {
        rt.when_run = Some(first >= now - li);
    }
    if rt.next_fire.is_none() {
        rt.next_fire = Some(first);
    }
    rt.next_scheduled = Some(first);
    if rt.next_fire.is_some_and(|t| t < first) && !run && rt.when_run != Some(true) {
        rt.next_fire = Some(first);
        rt.when_run = Some(true);
    }
    Ok(())
}

fn cron_(rt: &mut Runtime, data: &Map<String, Value>, now: NaiveDateTime, name: &str) -> Step<()> {
    if rt.next_fire.is_none() {
        let parsed = rt.cron.get_or_insert_with(|| {
            data.opt("cron")
                .and_then(Value::as_str)
                .and_then(cron::Cron::parse)
        });
        let Some(next) = parsed.as_ref().and_then(|c| c.next_after(now)) else {
            return err(format!("Invalid cron string. Ignoring job {name}."));
        };
        rt.next_fire = Some(next);
        rt.next_scheduled = Some(next);
    }
    Ok(())
}

/// A `{start, end}` option read with dateutil; Salt's errors name which end failed.
fn span(
    v: &Value,
    now: NaiveDateTime,
    name: &str,
    suffix: &str,
) -> Step<(NaiveDateTime, NaiveDateTime)> {
    let Value::Object(m) = v else {
        return err(format!(
            "schedule.handle_func: Invalid, range must be specified as a dictionary.{}Ignoring job {name}.",
            if suffix.is_empty() { "" } else { " " }
        ));
    };
    let mut ends = [None, None];
    for (i, which) in ["start", "end"].iter().enumerate() {
        let t = m
            .opt(which)
            .and_then(Value::as_str)
            .and_then(|s| when::parse(s, now.date()));
        let Some(t) = t else {
            return err(format!(
                "Invalid date string for {which}{suffix}. Ignoring job {name}."
            ));
        };
        ends[i] = Some(t);
    }
    let (start, end) = (ends[0].unwrap_or(now), ends[1].unwrap_or(now));
    if end <= start {
        return err(format!(
            "schedule.handle_func: Invalid range, end must be larger than start. Ignoring job {name}."
        ));
    }
    Ok((start, end))
}

/// The checks made only when the job would run.
fn gates<'s>(
    rt: &mut Runtime,
    data: &Map<String, Value>,
    now: NaiveDateTime,
    li: Duration,
    g: &Globals<'s>,
    name: &str,
) -> Step<Gate<'s>> {
    let mut gate = Gate {
        run: true,
        func: None,
    };
    if let Some(range) = data.opt("range") {
        let (start, end) = span(range, now, name, "")?;
        let invert = range.get("invert").is_some_and(truthy);
        let inside = start <= now && now <= end;
        if invert {
            gate.run = now <= start || now >= end;
            if !gate.run {
                rt.skip_reason = Some("in_skip_range");
            }
        } else if inside {
            gate.run = true;
        } else if let Some(f) = g.skip_function {
            gate = Gate {
                run: true,
                func: Some(f),
            };
        } else {
            rt.skip_reason = Some("not_in_range");
            gate.run = false;
        }
    }
    let sdr = data
        .opt("skip_during_range")
        .filter(|v| truthy(v))
        .or(g.skip_during_range);
    if let Some(sdr) = sdr {
        let (start, end) = span(sdr, now, name, " in skip_during_range")?;
        if data.opt("run_after_skip_range").is_some_and(truthy) {
            let after = chop(end + li);
            if !rt.run_after.contains(&after) {
                rt.run_after.push(after);
            }
        }
        if start <= now && now <= end {
            if let Some(f) = g.skip_function {
                gate = Gate {
                    run: true,
                    func: Some(f),
                };
            } else {
                skip(rt, "in_skip_range", now);
                gate.run = false;
            }
        } else {
            gate.run = true;
        }
    }
    if data.has("skip_explicit") {
        let mut times = explicit_times(data.opt("skip_explicit"));
        times.retain(|t| *t >= now - li);
        gate.run = false;
        match times.first() {
            Some(t) if *t <= now && now <= *t + li => {
                if let Some(f) = g.skip_function {
                    gate = Gate {
                        run: true,
                        func: Some(f),
                    };
                } else {
                    skip(rt, "skip_explicit", now);
                }
            }
            // Salt leaves `run` false while a later skip is pending.
            Some(_) => {}
            None => gate.run = true,
        }
    }
    for (key, reason) in [("until", "until_passed"), ("after", "after_not_passed")] {
        let Some(v) = data.opt(key) else { continue };
        let Some(t) = v.as_str().and_then(|s| when::parse(s, now.date())) else {
            return err(format!(
                "Invalid date string {}. Ignoring job {name}.",
                crate::python::str(v)
            ));
        };
        let passed = if key == "until" { t <= now } else { t >= now };
        if passed {
            skip(rt, reason, now);
            gate.run = false;
        } else {
            gate.run = true;
        }
    }
    Ok(gate)
}
