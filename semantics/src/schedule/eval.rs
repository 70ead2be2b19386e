//! One job's evaluation, step by step as Salt's `eval` takes it: explicit runs, the timing
//! option (interval, `once`, `when`, `cron`), the splay, then — only when the job would
//! run — `range`, `skip_during_range`, `skip_explicit`, `until`, `after`, `enabled` and
//! `maxrunning`.

use chrono::{Duration, NaiveDateTime};
use serde_json::{Map, Value};

use super::{
    Eval, Fire, Globals, Opts, ReturnJob, Runtime, Scheduler, Step, Stop, TIME_ELEMENTS, chop,
    cron, err, job_function, py_int, when,
};
use crate::python::truthy;

/// What `range`/`skip_during_range`/`skip_explicit` decided.
struct Gate {
    run: bool,
    func: Option<String>,
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

impl Scheduler {
    pub(super) fn eval_job(
        &mut self,
        key: &str,
        data: &Map<String, Value>,
        ev: &Eval,
        g: &Globals,
    ) -> Option<Fire> {
        let li = Duration::seconds(self.loop_interval);
        let now = ev.now;
        let name = data
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or(key)
            .to_owned();
        let splay_cfg = data.opt("splay").cloned().or_else(|| g.splay.clone());
        let rt = self.runtime(key, data);
        rt.error = None;
        rt.skip_reason = None;
        rt.skipped_time = None;
        if rt.run_on_start.is_none() && data.opt("run_on_start").is_some_and(truthy) {
            rt.run_on_start = Some(true);
        }
        let kinds = ["when", "cron", "once"]
            .iter()
            .filter(|k| data.has(k))
            .count();
        if kinds > 1 {
            rt.error =
                Some(r#"Unable to use "when", "cron", "once" options together. Ignoring."#.into());
            return None;
        }
        let mut run = false;
        if data.has("run_explicit") || !rt.run_after.is_empty() {
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
        let timing = if TIME_ELEMENTS.iter().any(|k| data.has(k)) {
            time_elements(rt, data, now, &name)
        } else if data.has("once") {
            once(rt, data, now, li, &name)
        } else if data.has("when") {
            when_(rt, data, ev, li, run, &name)
        } else if data.has("cron") {
            cron_(rt, data, now, &name)
        } else {
            return None;
        };
        if let Err(stop) = timing {
            if let Stop::Error(e) = stop {
                rt.error = Some(e);
            }
            return None;
        }
        let next_fire = rt.next_fire?;
        let mut seconds = (chop(next_fire) - chop(now)).num_seconds() as f64;
        let is_when = data.has("when");
        if let Some(cfg) = splay_cfg.filter(truthy) {
            if self.jobs[key].splay.is_none()
                && let Some(s) = self.splay(&cfg)
            {
                let rt = self.jobs.get_mut(key)?;
                if now < next_fire + Duration::seconds(s) {
                    rt.splay = Some(next_fire + Duration::seconds(s));
                    if is_when {
                        rt.when_run = Some(true);
                    }
                } else {
                    run = true;
                }
            }
            let rt = self.jobs.get_mut(key)?;
            if let Some(sp) = rt.splay {
                seconds = (sp - now).num_milliseconds() as f64 / 1000.0;
                if is_when {
                    rt.next_fire = Some(sp);
                }
            }
        }
        let rt = self.jobs.get_mut(key)?;
        let next_fire = rt.next_fire?;
        if rt.seconds.is_some() {
            run |= seconds <= 0.0;
        } else if is_when && rt.when_run == Some(true) {
            if next_fire <= now && now <= next_fire + li {
                rt.when_run = Some(false);
                run = true;
            }
        } else if data.has("cron") {
            if seconds <= 0.0 {
                rt.next_fire = None;
                run = true;
            }
        } else if data.has("once") {
            // Salt would fire a second time when two ticks land in the window; once is once.
            run |= next_fire <= now
                && now <= next_fire + li
                && rt.last_run.is_none_or(|l| l < next_fire);
        } else {
            run |= seconds == 0.0;
        }
        let mut func = job_function(data).map(str::to_owned);
        if rt.run_on_start == Some(true) {
            run = true;
            rt.run_on_start = Some(false);
        } else if run {
            match gates(rt, data, now, li, g, &name) {
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
        if !g.enabled || !data.opt("enabled").is_none_or(truthy) {
            skip(rt, "disabled", now);
            run = false;
        }
        let jid_include = data.opt("jid_include").is_none_or(truthy);
        if run && jid_include {
            let max = data.opt("maxrunning").and_then(py_int).unwrap_or(1);
            if (ev.running)(&name) as i64 >= max {
                skip(rt, "maxrunning", now);
                run = false;
            }
        }
        let fire = run.then(|| fire(data, name, func.unwrap_or_default(), jid_include, seconds));
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
        missed_by: if seconds < 0.0 { -(seconds as i64) } else { 0 },
    }
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
            .get("once_fmt")
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

/// Looks a `when` item up in the pillar's, then the grains' `whens`.
fn lookup_when(item: &Value, ev: &Eval, name: &str) -> Step<Value> {
    let key = item.as_str().unwrap_or_default();
    for (whens, what) in [(ev.pillar_whens, "Pillar item"), (ev.grain_whens, "Grain")] {
        let Some(whens) = whens else { continue };
        let found = match whens {
            Value::Object(m) => m.get(key).cloned(),
            Value::Array(a) if a.iter().any(|v| v.as_str() == Some(key)) => None,
            Value::String(s) if s.contains(key) => None,
            _ => continue,
        };
        match found {
            Some(v) => return Ok(v),
            None => {
                return err(format!(
                    "{what} \"whens\" must be a dict. Ignoring job {name}."
                ));
            }
        }
    }
    Ok(item.clone())
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
    let items = match data.opt("when") {
        Some(Value::Array(a)) => a.clone(),
        Some(v) => vec![v.clone()],
        None => Vec::new(),
    };
    let mut times = Vec::new();
    for item in &items {
        let v = lookup_when(item, ev, name)?;
        let Some(t) = v.as_str().and_then(|s| when::parse(s, now.date())) else {
            return err(format!(
                "Invalid date string {}. Ignoring job {name}.",
                crate::python::str(item)
            ));
        };
        times.push(t);
    }
    if let Some(s) = rt.splay {
        times.push(s);
    }
    times.sort();
    if times.len() > 1 {
        // Keep the latest past time: it tells whether it was run.
        let keep_from = times.iter().rposition(|t| *t < now - li).unwrap_or(0);
        let past: Vec<_> = times.iter().copied().filter(|t| *t < now - li).collect();
        if past.len() == times.len() {
            times = vec![times[keep_from]];
        } else {
            times.retain(|t| *t >= now - li);
        }
    }
    let Some(&first) = times.first() else {
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
        let next = data
            .get("cron")
            .and_then(Value::as_str)
            .and_then(cron::Cron::parse)
            .and_then(|c| c.next_after(now));
        let Some(next) = next else {
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
            .get(*which)
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
fn gates(
    rt: &mut Runtime,
    data: &Map<String, Value>,
    now: NaiveDateTime,
    li: Duration,
    g: &Globals,
    name: &str,
) -> Step<Gate> {
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
        } else if let Some(f) = &g.skip_function {
            gate = Gate {
                run: true,
                func: Some(f.clone()),
            };
        } else {
            rt.skip_reason = Some("not_in_range");
            gate.run = false;
        }
    }
    let sdr = data
        .get("skip_during_range")
        .filter(|v| truthy(v))
        .or(g.skip_during_range.as_ref());
    if let Some(sdr) = sdr {
        let (start, end) = span(sdr, now, name, " in skip_during_range")?;
        if data.opt("run_after_skip_range").is_some_and(truthy) {
            let after = chop(end + li);
            if !rt.run_after.contains(&after) {
                rt.run_after.push(after);
            }
        }
        if start <= now && now <= end {
            if let Some(f) = &g.skip_function {
                gate = Gate {
                    run: true,
                    func: Some(f.clone()),
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
                if let Some(f) = &g.skip_function {
                    gate = Gate {
                        run: true,
                        func: Some(f.clone()),
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
