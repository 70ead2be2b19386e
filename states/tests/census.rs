//! The formula census (issue #35): every SLS file of every public formula in
//! `../shared/third-party/formulas` rendered through saltq's `state.show_sls`, as a minion runs
//! it, and compared with what Salt 3007.8 rendered from the same files, grains and pillar
//! (`data/census/salt3007.json`, made by `data/census/record.py`).
//!
//! It prints the census table (SLS and main targets identical, state functions and execution
//! functions supported) and, with `SALTQ_CENSUS_OUT=<file>`, writes it as Markdown
//! (CONFORMANCE.md holds the latest). It fails when an SLS listed in `data/census/identical.txt`
//! no longer renders as Salt's: the list only grows, and the test names what to add to it.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::sync::Arc;

use saltq_exec::{CallContext, PubInfo};
use saltq_states::Engine;
use serde_json::{Map, Value, json};

use common::{DirFiles, data_dir, third_party};

/// One formula's figures.
#[derive(Default)]
struct Row {
    formula: String,
    sls: usize,
    salt_rendered: usize,
    identical: usize,
    main: Option<bool>,
    states_used: BTreeMap<String, usize>,
    exec_calls: Vec<String>,
}

/// The state functions (`pkg.installed`) each declaration of Salt's high data uses, counted.
fn state_functions(high: &Value, into: &mut BTreeMap<String, usize>) {
    let Some(ids) = high.as_object() else { return };
    for body in ids.values().filter_map(Value::as_object) {
        for (key, args) in body.iter().filter(|(k, _)| !k.starts_with("__")) {
            let fun = if key.contains('.') {
                Some(key.clone())
            } else {
                args.as_array()
                    .and_then(|a| a.iter().find_map(Value::as_str))
                    .map(|f| format!("{key}.{f}"))
            };
            if let Some(fun) = fun {
                *into.entry(fun).or_default() += 1;
            }
        }
    }
}

async fn show_sls(
    formula_dir: &std::path::Path,
    grains: &Value,
    sls: &str,
    pillar: &Value,
) -> Value {
    let root = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(formula_dir, root.path().join("base")).unwrap();
    let cache = tempfile::tempdir().unwrap();
    let opts = json!({"id": "minion1", "__cli": "salt-minion", "cachedir": cache.path()});
    let ctx = CallContext::local(grains.clone(), opts)
        .with_files(Arc::new(DirFiles {
            root: root.path().to_path_buf(),
        }))
        .with_states(Arc::new(Engine::new()));
    let mut kwargs = Map::new();
    kwargs.insert("pillar".into(), pillar.clone());
    saltq_exec::call(
        &ctx,
        "state.show_sls",
        vec![json!(sls)],
        kwargs,
        &PubInfo::default(),
    )
    .await
    .ret
}

fn pct(n: usize, d: usize) -> String {
    if d == 0 {
        "–".into()
    } else {
        format!("{:.1} %", 100.0 * n as f64 / d as f64)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_census_of_the_public_formulas() {
    let dir = data_dir("census");
    let recorded: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("salt3007.json")).unwrap()).unwrap();
    let baseline: BTreeSet<String> = std::fs::read_to_string(dir.join("identical.txt"))
        .unwrap_or_default()
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(String::from)
        .collect();
    let grains = recorded["grains"].clone();
    let mut rows = Vec::new();
    let mut identical_now = BTreeSet::new();
    let mut differing = Vec::new();
    for f in recorded["formulas"].as_array().unwrap() {
        let formula = f["formula"].as_str().unwrap();
        let formula_dir = third_party(&format!("formulas/{formula}"));
        let main = f["main"].as_str().unwrap();
        let mut row = Row {
            formula: formula.into(),
            exec_calls: f["exec_calls"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(|c| c.as_str().map(String::from))
                .collect(),
            ..Row::default()
        };
        for case in f["cases"].as_array().unwrap() {
            let sls = case["sls"].as_str().unwrap();
            row.sls += 1;
            if !case["rendered"].as_bool().unwrap() {
                continue;
            }
            row.salt_rendered += 1;
            state_functions(&case["show_sls"], &mut row.states_used);
            let ours = show_sls(&formula_dir, &grains, sls, &f["pillar"]).await;
            let same = ours == case["show_sls"];
            if same {
                row.identical += 1;
                identical_now.insert(format!("{formula} {sls}"));
            } else {
                differing.push(format!(
                    "{formula} {sls}:\n  Salt:  {:.300}\n  saltq: {:.300}",
                    case["show_sls"].to_string(),
                    ours.to_string()
                ));
            }
            if sls == main {
                row.main = Some(same);
            }
        }
        rows.push(row);
    }
    let table = census_table(&rows);
    println!("{table}");
    if let Ok(out) = std::env::var("SALTQ_CENSUS_OUT") {
        std::fs::write(&out, &table).unwrap_or_else(|e| panic!("writing {out}: {e}"));
    }
    let lost: Vec<_> = baseline.difference(&identical_now).collect();
    let gained: Vec<_> = identical_now.difference(&baseline).collect();
    if !gained.is_empty() {
        println!(
            "identical now and not yet in data/census/identical.txt (add them):\n{}",
            gained
                .iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join("\n")
        );
    }
    if std::env::var_os("SALTQ_CENSUS_DIFFS").is_some() {
        println!("{}", differing.join("\n"));
    }
    assert!(
        lost.is_empty(),
        "{} SLS rendered as Salt's before and no longer do (data/census/identical.txt):\n{}",
        lost.len(),
        lost.iter()
            .map(|s| s.as_str())
            .collect::<Vec<_>>()
            .join("\n")
    );
}

/// The census as Markdown: one row per formula, then the totals.
fn census_table(rows: &[Row]) -> String {
    let mut t = String::new();
    t.push_str(
        "| formula | SLS | Salt renders | identical | main target | state functions supported \
         (declarations) | exec calls supported |\n|---|---|---|---|---|---|---|\n",
    );
    let (mut sls, mut rendered, mut identical, mut mains, mut mains_same) = (0, 0, 0, 0, 0);
    let mut all_states: BTreeMap<String, usize> = BTreeMap::new();
    let mut all_calls: BTreeSet<String> = BTreeSet::new();
    for r in rows {
        let supported = |f: &String| saltq_states::modules::lookup(f).is_some();
        let decl: usize = r.states_used.values().sum();
        let decl_ok: usize = r
            .states_used
            .iter()
            .filter(|(f, _)| supported(f))
            .map(|(_, n)| n)
            .sum();
        let funs_ok = r.states_used.keys().filter(|f| supported(f)).count();
        let calls_ok = r
            .exec_calls
            .iter()
            .filter(|c| saltq_exec::lookup(c).is_some())
            .count();
        let main = match r.main {
            Some(true) => "identical",
            Some(false) => "differs",
            None => "Salt fails / none",
        };
        if let Some(m) = r.main {
            mains += 1;
            mains_same += usize::from(m);
        }
        writeln!(
            t,
            "| {} | {} | {} | {} | {} | {}/{} ({}/{}) | {}/{} |",
            r.formula,
            r.sls,
            r.salt_rendered,
            r.identical,
            main,
            funs_ok,
            r.states_used.len(),
            decl_ok,
            decl,
            calls_ok,
            r.exec_calls.len()
        )
        .unwrap();
        sls += r.sls;
        rendered += r.salt_rendered;
        identical += r.identical;
        for (f, n) in &r.states_used {
            *all_states.entry(f.clone()).or_default() += n;
        }
        all_calls.extend(r.exec_calls.iter().cloned());
    }
    let supported = |f: &String| saltq_states::modules::lookup(f).is_some();
    let decl: usize = all_states.values().sum();
    let decl_ok: usize = all_states
        .iter()
        .filter(|(f, _)| supported(f))
        .map(|(_, n)| n)
        .sum();
    let missing_states: Vec<_> = all_states
        .keys()
        .filter(|f| !supported(f))
        .cloned()
        .collect();
    let missing_calls: Vec<_> = all_calls
        .iter()
        .filter(|c| saltq_exec::lookup(c).is_none())
        .cloned()
        .collect();
    writeln!(
        t,
        "| **all {}** | {sls} | {rendered} | {identical} ({}) | {mains_same}/{mains} | {}/{} ({}/{decl}, {}) | {}/{} |",
        rows.len(),
        pct(identical, rendered),
        all_states.len() - missing_states.len(),
        all_states.len(),
        decl_ok,
        pct(decl_ok, decl),
        all_calls.len() - missing_calls.len(),
        all_calls.len(),
    )
    .unwrap();
    writeln!(
        t,
        "\nState functions Salt renders that saltq lacks: {}",
        missing_states.join(", ")
    )
    .unwrap();
    writeln!(
        t,
        "\nExecution functions the formulas call that saltq lacks: {}",
        missing_calls.join(", ")
    )
    .unwrap();
    t
}
