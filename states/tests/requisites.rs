//! Salt's requisite tests (`tests/pytests/functional/modules/state/requisites/` in Salt
//! 3007.8, Apache-2.0), replayed against our compiler and runner. The inputs (SLS files and
//! the call) were extracted by `data/requisites/extract.py` into
//! `../shared/third-party/salt-tests/requisites-cases.json` (read from there); what Salt
//! answered was recorded from the real Salt by `data/requisites/gen.py` into
//! `recorded.json`. Each case compares, per state, `result`, `comment`, `changes`,
//! `__run_num__`, `name`, `__id__`, `__sls__` and the extra keys Salt adds; timings and
//! process ids are not compared.

mod common;

use saltq_states::run::retcode;

use common::{compare, load_requisite_cases, run_case};

/// Cases we do not replay yet, with the reason.
const PENDING: &[(&str, &str)] = &[(
    "test_prereq.py::test_requisites_prereq_simple_ordering_and_errors_10",
    "Salt itself dies with a RecursionError on this tree: nothing to compare against",
)];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requisites_match_salt() {
    let (cases, recorded) = load_requisite_cases();
    let mut failures = Vec::new();
    let mut passed = 0;
    for case in &cases {
        if PENDING.iter().any(|(n, _)| *n == case.name) {
            continue;
        }
        let Some(expected) = recorded.get(&case.name) else {
            failures.push(format!("{}: no recording", case.name));
            continue;
        };
        let got = run_case(case).await;
        let code = i64::from(retcode(&got, None));
        let want_code = expected["retcode"].as_i64().unwrap_or(-1);
        let verdict = compare(&expected["return"], &got).and_then(|()| {
            if code == want_code {
                Ok(())
            } else {
                Err(format!("  retcode: salt {want_code}, ours {code}"))
            }
        });
        match verdict {
            Ok(()) => passed += 1,
            Err(e) => failures.push(format!("{}:\n{e}", case.name)),
        }
    }
    assert!(
        failures.is_empty(),
        "{} passed, {} failed:\n\n{}",
        passed,
        failures.len(),
        failures.join("\n\n")
    );
    assert!(passed >= 81, "only {passed} cases ran");
}
