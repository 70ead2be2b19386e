//! The job cache's behaviour, written once and run against every backend.

use std::collections::HashSet;

use chrono::Duration;
use saltq_jobcache::{CacheError, JobFilter, StoreOutcome};
use serde_json::json;

use crate::support::{Fixture, jid_at, jids, job, ping_job, ret, t0};

/// A saved job reads back as saved; a reused jid is refused, naming the jid.
pub async fn save_and_get_job(fx: &Fixture) {
    let cache = fx.open().await;
    let j = job(
        t0(),
        json!(["test.ping", "test.echo"]),
        json!(["web1", "web2"]),
        &["web1", "web2"],
    );
    cache.save_job(&j).await.expect("save");
    assert_eq!(cache.get_job(&j.jid).await.expect("get"), Some(j.clone()));
    assert_eq!(
        cache
            .get_job("20000101000000000000")
            .await
            .expect("get missing"),
        None
    );

    let mut again = j.clone();
    again.load = json!({"fun": "other"});
    let err = cache
        .save_job(&again)
        .await
        .expect_err("a reused jid is refused");
    assert!(
        matches!(err, CacheError::DuplicateJid { ref jid, .. } if *jid == j.jid),
        "{err:?}"
    );
    assert!(err.to_string().contains(&j.jid), "{err}");
    assert_eq!(
        cache.get_job(&j.jid).await.expect("get"),
        Some(j),
        "the first job is kept"
    );
    cache.check_writable().await.expect("writable");
}

/// Returns read back whole, in the order they were stored.
pub async fn returns_in_stored_order(fx: &Fixture) {
    let cache = fx.open().await;
    let j = ping_job(t0(), &["m3", "m1", "m2"]);
    cache.save_job(&j).await.expect("save");
    let mut stored = Vec::new();
    for (n, id) in ["m3", "m1", "m2"].into_iter().enumerate() {
        let mut r = ret(
            &j.jid,
            id,
            json!({"n": n, "nested": {"z": 1, "a": [true, null]}}),
        );
        r.stored_at = t0() + Duration::microseconds(n as i64 + 1);
        if id == "m1" {
            r.retcode = 1;
            r.success = false;
            r.out = Some("nested".to_owned());
            r.metadata = Some(json!({"ticket": "T-1"}));
            r.fun_args = json!(["a", {"__kwarg__": true, "k": "v"}]);
        }
        assert_eq!(
            cache.store_return(r.clone()).await.expect("store"),
            StoreOutcome::Stored
        );
        stored.push(r);
    }
    assert_eq!(cache.get_returns(&j.jid).await.expect("returns"), stored);
    assert!(
        cache
            .get_returns("20000101000000000000")
            .await
            .expect("returns")
            .is_empty()
    );
}

/// A second return from the same minion for the same job is dropped, not stored twice.
pub async fn duplicate_return_dropped(fx: &Fixture) {
    let cache = fx.open().await;
    let j = ping_job(t0(), &["m1"]);
    cache.save_job(&j).await.expect("save");
    let first = ret(&j.jid, "m1", json!(true));
    assert_eq!(
        cache.store_return(first.clone()).await.expect("store"),
        StoreOutcome::Stored
    );
    let replay = ret(&j.jid, "m1", json!("replayed"));
    assert_eq!(
        cache.store_return(replay).await.expect("store"),
        StoreOutcome::Duplicate
    );
    assert_eq!(
        cache.get_returns(&j.jid).await.expect("returns"),
        vec![first]
    );

    // Repeats inside one batch: exactly one of them is stored.
    let k = ping_job(t0() + Duration::seconds(1), &["m1"]);
    cache.save_job(&k).await.expect("save");
    let tasks: Vec<_> = (0..50)
        .map(|n| {
            let cache = cache.clone();
            let r = ret(&k.jid, "m1", json!(n));
            tokio::spawn(async move { cache.store_return(r).await })
        })
        .collect();
    let mut stored = 0;
    for task in tasks {
        if task.await.expect("task").expect("store") == StoreOutcome::Stored {
            stored += 1;
        }
    }
    assert_eq!(stored, 1);
    assert_eq!(cache.get_returns(&k.jid).await.expect("returns").len(), 1);
    let stats = cache.stats();
    assert_eq!((stats.returns_stored, stats.duplicate_returns), (2, 50));
}

/// A return for a job the cache does not hold is refused, naming the jid and the minion.
pub async fn unknown_jid_refused(fx: &Fixture) {
    let cache = fx.open().await;
    let err = cache
        .store_return(ret("20000101000000000000", "m1", json!(true)))
        .await
        .expect_err("refused");
    assert!(matches!(err, CacheError::UnknownJid { .. }), "{err:?}");
    let text = err.to_string();
    assert!(
        text.contains("20000101000000000000") && text.contains("m1"),
        "{text}"
    );

    // In a batch with good returns, only the bad one is refused.
    let j = ping_job(t0(), &["m1", "m2"]);
    cache.save_job(&j).await.expect("save");
    let (a, b, c) = tokio::join!(
        cache.store_return(ret(&j.jid, "m1", json!(true))),
        cache.store_return(ret("20000101000000000001", "m1", json!(true))),
        cache.store_return(ret(&j.jid, "m2", json!(true))),
    );
    assert_eq!(a.expect("m1"), StoreOutcome::Stored);
    assert!(matches!(b, Err(CacheError::UnknownJid { .. })), "{b:?}");
    assert_eq!(c.expect("m2"), StoreOutcome::Stored);
}

/// `jobs.list_jobs` filters: function globs (any function of a multi-function job, several
/// globs separated by commas), target globs (any entry of a list target), an inclusive time
/// range, a limit, newest first, with return counts.
pub async fn list_jobs_filters(fx: &Fixture) {
    let cache = fx.open().await;
    let h = Duration::hours(1);
    let j1 = job(t0(), json!("test.ping"), json!("web*"), &["web1", "web2"]);
    let j2 = job(
        t0() + h,
        json!(["test.ping", "cmd.run"]),
        json!("db1"),
        &["db1"],
    );
    let j3 = job(
        t0() + h * 2,
        json!("state.apply"),
        json!(["web1", "db2"]),
        &["web1", "db2"],
    );
    let j4 = job(
        t0() + h * 3,
        json!("cmd.run"),
        json!("*"),
        &["web1", "web2", "db1", "db2"],
    );
    // Saved out of time order: the list is sorted by start time, not by insertion.
    for j in [&j3, &j1, &j4, &j2] {
        cache.save_job(j).await.expect("save");
    }
    for id in ["db1", "x"] {
        cache
            .store_return(ret(&j2.jid, id, json!("ok")))
            .await
            .expect("store");
    }
    let (a1, a2, a3, a4) = (
        j1.jid.as_str(),
        j2.jid.as_str(),
        j3.jid.as_str(),
        j4.jid.as_str(),
    );

    let list = |filter: JobFilter| {
        let cache = cache.clone();
        async move { cache.list_jobs(&filter).await.expect("list") }
    };
    let all = list(JobFilter::default()).await;
    assert_eq!(jids(&all), [a4, a3, a2, a1]);
    assert_eq!(all[2].job, j2);
    assert_eq!(
        all.iter().map(|s| s.returned).collect::<Vec<_>>(),
        [0, 0, 2, 0]
    );

    let function = |f: &str| JobFilter {
        function: Some(f.to_owned()),
        ..JobFilter::default()
    };
    let target = |t: &str| JobFilter {
        target: Some(t.to_owned()),
        ..JobFilter::default()
    };
    assert_eq!(jids(&list(function("cmd.*")).await), [a4, a2]);
    assert_eq!(jids(&list(function("test.ping")).await), [a2, a1]);
    assert_eq!(
        jids(&list(function("state.*, test.p?ng")).await),
        [a3, a2, a1]
    );
    assert_eq!(jids(&list(function("pkg.*")).await), Vec::<&str>::new());
    assert_eq!(jids(&list(target("db*")).await), [a3, a2]);
    assert_eq!(jids(&list(target("web*")).await), [a3, a1]);
    assert_eq!(jids(&list(target("web[2-9]")).await), Vec::<&str>::new());
    let both = JobFilter {
        function: Some("test.*".to_owned()),
        target: Some("db*".to_owned()),
        ..JobFilter::default()
    };
    assert_eq!(jids(&list(both).await), [a2]);

    let range = JobFilter {
        start_time: Some(t0() + h),
        end_time: Some(t0() + h * 2),
        ..JobFilter::default()
    };
    assert_eq!(
        jids(&list(range).await),
        [a3, a2],
        "both ends are inclusive"
    );
    let since = JobFilter {
        start_time: Some(t0() + h * 2),
        ..JobFilter::default()
    };
    assert_eq!(jids(&list(since).await), [a4, a3]);
    let until = JobFilter {
        end_time: Some(t0() + h - Duration::microseconds(1)),
        ..JobFilter::default()
    };
    assert_eq!(jids(&list(until).await), [a1]);

    let limit = |n: usize, f: JobFilter| JobFilter {
        limit: Some(n),
        ..f
    };
    assert_eq!(jids(&list(limit(2, JobFilter::default())).await), [a4, a3]);
    assert_eq!(jids(&list(limit(1, function("test.ping"))).await), [a2]);
    assert_eq!(
        jids(&list(limit(0, JobFilter::default())).await),
        Vec::<&str>::new()
    );
    assert_eq!(jids(&list(limit(10, JobFilter::default())).await).len(), 4);
}

/// The last jid only ever grows, and saving a job raises it.
pub async fn last_jid_only_grows(fx: &Fixture) {
    let cache = fx.open().await;
    assert_eq!(cache.last_jid().await.expect("last"), None);
    let later = jid_at(t0() + Duration::seconds(10));
    cache.record_jid(&later).await.expect("record");
    cache
        .record_jid(&jid_at(t0()))
        .await
        .expect("record an older one");
    assert_eq!(cache.last_jid().await.expect("last"), Some(later));
    let newest = ping_job(t0() + Duration::seconds(20), &["m1"]);
    cache.save_job(&newest).await.expect("save");
    assert_eq!(cache.last_jid().await.expect("last"), Some(newest.jid));
}

/// Pruning deletes old jobs with their returns; the last jid survives it.
pub async fn prune_keeps_last_jid(fx: &Fixture) {
    let cache = fx.open().await;
    let old = ping_job(t0(), &["m1", "m2"]);
    let new = ping_job(t0() + Duration::days(2), &["m1"]);
    for j in [&old, &new] {
        cache.save_job(j).await.expect("save");
    }
    for (jid, id) in [(&old.jid, "m1"), (&old.jid, "m2"), (&new.jid, "m1")] {
        cache
            .store_return(ret(jid, id, json!(true)))
            .await
            .expect("store");
    }
    let issued = jid_at(t0() + Duration::days(3));
    cache.record_jid(&issued).await.expect("record");

    assert_eq!(
        cache.prune(t0() + Duration::days(1)).await.expect("prune"),
        1
    );
    assert_eq!(cache.get_job(&old.jid).await.expect("get"), None);
    assert!(
        cache
            .get_returns(&old.jid)
            .await
            .expect("returns")
            .is_empty()
    );
    assert_eq!(
        cache.get_job(&new.jid).await.expect("get"),
        Some(new.clone())
    );
    assert_eq!(cache.get_returns(&new.jid).await.expect("returns").len(), 1);
    assert_eq!(
        jids(&cache.list_jobs(&JobFilter::default()).await.expect("list")),
        [new.jid.as_str()]
    );
    assert_eq!(cache.last_jid().await.expect("last"), Some(issued.clone()));
    let late = cache.store_return(ret(&old.jid, "m3", json!(true))).await;
    assert!(
        matches!(late, Err(CacheError::UnknownJid { .. })),
        "{late:?}"
    );

    assert_eq!(
        cache.prune(t0() + Duration::days(10)).await.expect("prune"),
        1
    );
    assert_eq!(
        cache
            .prune(t0() + Duration::days(10))
            .await
            .expect("prune again"),
        0
    );
    assert!(
        cache
            .list_jobs(&JobFilter::default())
            .await
            .expect("list")
            .is_empty()
    );
    assert_eq!(cache.last_jid().await.expect("last"), Some(issued));
}

/// A restart (close, open again) keeps jobs, returns and the last jid.
pub async fn reopen_keeps_everything(fx: &Fixture) {
    let cache = fx.open().await;
    let j = ping_job(t0(), &["m1", "m2"]);
    cache.save_job(&j).await.expect("save");
    let r = ret(&j.jid, "m2", json!({"pid": 42}));
    cache.store_return(r.clone()).await.expect("store");
    let issued = jid_at(t0() + Duration::seconds(5));
    cache.record_jid(&issued).await.expect("record");
    cache.close().await;

    let cache = fx.open().await;
    assert_eq!(cache.get_job(&j.jid).await.expect("get"), Some(j.clone()));
    assert_eq!(
        cache.get_returns(&j.jid).await.expect("returns"),
        vec![r.clone()]
    );
    assert_eq!(cache.last_jid().await.expect("last"), Some(issued));
    assert_eq!(
        cache.store_return(r).await.expect("store"),
        StoreOutcome::Duplicate,
        "duplicates survive a restart"
    );
    let listed = cache.list_jobs(&JobFilter::default()).await.expect("list");
    assert_eq!(
        (jids(&listed), listed[0].returned),
        (vec![j.jid.as_str()], 1)
    );
}

/// 5,000 returns sent at once are all stored, in far fewer transactions than returns.
pub async fn burst_is_batched(fx: &Fixture) {
    const RETURNS: usize = 5_000;
    let cache = fx.open().await;
    let ids: Vec<String> = (0..RETURNS).map(|n| format!("minion-{n:05}")).collect();
    let id_refs: Vec<&str> = ids.iter().map(String::as_str).collect();
    let j = ping_job(t0(), &id_refs);
    cache.save_job(&j).await.expect("save");
    let before = cache.stats();

    let tasks: Vec<_> = ids
        .iter()
        .map(|id| {
            let cache = cache.clone();
            let r = ret(&j.jid, id, json!(true));
            tokio::spawn(async move { cache.store_return(r).await })
        })
        .collect();
    for task in tasks {
        assert_eq!(
            task.await.expect("task").expect("store"),
            StoreOutcome::Stored
        );
    }

    let after = cache.stats();
    let transactions = after.transactions - before.transactions;
    assert_eq!(after.returns_stored - before.returns_stored, RETURNS as u64);
    assert!(
        transactions < RETURNS as u64,
        "{RETURNS} returns took {transactions} transactions"
    );
    assert!(
        transactions >= (RETURNS / 512) as u64,
        "a batch holds at most 512: {transactions}"
    );
    crate::support::note(&format!(
        "{RETURNS} concurrent returns committed in {transactions} transactions"
    ));
    let stored = cache.get_returns(&j.jid).await.expect("returns");
    assert_eq!(stored.len(), RETURNS);
    let distinct: HashSet<&str> = stored.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(distinct.len(), RETURNS);
    let listed = cache.list_jobs(&JobFilter::default()).await.expect("list");
    assert_eq!(listed[0].returned, RETURNS);
}

/// Two handles on one cache (two masters) open it at once, see each other's writes, and a
/// return sent through both at once is stored once.
pub async fn two_handles_share(fx: &Fixture) {
    // Opened at once, as two masters starting together: both create the tables.
    let (a, b) = tokio::join!(fx.open(), fx.open());
    let j = ping_job(t0(), &[]);
    a.save_job(&j).await.expect("save through a");
    assert_eq!(
        b.get_job(&j.jid).await.expect("get through b"),
        Some(j.clone())
    );
    let err = b
        .save_job(&j)
        .await
        .expect_err("the jid is taken through a");
    assert!(matches!(err, CacheError::DuplicateJid { .. }), "{err:?}");

    const MINIONS: usize = 300;
    let mut tasks = Vec::new();
    for n in 0..MINIONS {
        for (handle, cache) in [("a", &a), ("b", &b)] {
            let cache = cache.clone();
            let r = ret(&j.jid, &format!("m{n}"), json!(handle));
            tasks.push(tokio::spawn(async move { cache.store_return(r).await }));
        }
    }
    let mut outcomes = Vec::new();
    for task in tasks {
        outcomes.push(task.await.expect("task").expect("store"));
    }
    let stored = outcomes
        .iter()
        .filter(|o| **o == StoreOutcome::Stored)
        .count();
    assert_eq!(stored, MINIONS, "exactly one of each pair is stored");
    assert_eq!(a.get_returns(&j.jid).await.expect("returns").len(), MINIONS);
    assert_eq!(b.get_returns(&j.jid).await.expect("returns").len(), MINIONS);

    let issued = jid_at(t0() + Duration::seconds(9));
    b.record_jid(&issued).await.expect("record through b");
    assert_eq!(a.last_jid().await.expect("last through a"), Some(issued));
}

/// Jids taken through two handles at once (two masters publishing together), all with the
/// same candidate, are distinct and each a microsecond past the one before, across a second's
/// rollover; a newer candidate is taken as it is; a handle opened later goes on from the last.
pub async fn allocated_jids_are_unique_across_handles(fx: &Fixture) {
    let (a, b) = tokio::join!(fx.open(), fx.open());
    if !a.is_shared() {
        // One master owns a SQLite cache: the candidate is its answer, and it is recorded.
        let c = jid_at(t0());
        assert_eq!(a.allocate_jid(&c).await.expect("allocate"), c);
        assert_eq!(a.last_jid().await.expect("last"), Some(c));
        return;
    }
    // Just before a second's end, so the run crosses into the next second.
    let base = t0() + Duration::microseconds(999_990);
    let candidate = jid_at(base);
    const EACH: usize = 40;
    let mut tasks = Vec::new();
    for n in 0..EACH * 2 {
        let cache = if n % 2 == 0 { a.clone() } else { b.clone() };
        let candidate = candidate.clone();
        tasks.push(tokio::spawn(
            async move { cache.allocate_jid(&candidate).await },
        ));
    }
    let mut got = Vec::new();
    for task in tasks {
        got.push(task.await.expect("task").expect("allocate"));
    }
    got.sort();
    let expected: Vec<String> = (0..EACH * 2)
        .map(|n| jid_at(base + Duration::microseconds(n as i64)))
        .collect();
    assert_eq!(got, expected);
    assert!(got.last().is_some_and(|j| j.starts_with("20260102030406")));

    let newer = jid_at(t0() + Duration::seconds(60));
    assert_eq!(b.allocate_jid(&newer).await.expect("allocate"), newer);
    // A caller's own jid with a suffix raised the last jid: the next one follows its time.
    a.record_jid(&format!("{}_custom", jid_at(t0() + Duration::seconds(61))))
        .await
        .expect("record");
    let c = fx.open().await;
    assert_eq!(
        c.allocate_jid(&candidate).await.expect("allocate"),
        jid_at(t0() + Duration::seconds(61) + Duration::microseconds(1))
    );
}

/// A syndic's minions join a stored job's expected ones once each, in a committed write; an
/// unknown jid is answered false and stores nothing.
pub async fn add_minions_merges(fx: &Fixture) {
    let cache = fx.open().await;
    let j = ping_job(t0(), &["t1"]);
    cache.save_job(&j).await.expect("save");
    let s = |v: &[&str]| v.iter().map(|m| m.to_string()).collect::<Vec<_>>();
    assert!(
        cache
            .add_minions(&j.jid, &s(&["b2", "a1", "t1", "b2"]))
            .await
            .expect("add")
    );
    assert!(
        cache
            .add_minions(&j.jid, &s(&["a1", "c1"]))
            .await
            .expect("add")
    );
    let got = cache.get_job(&j.jid).await.expect("get").expect("job");
    assert_eq!(got.minions, s(&["a1", "b2", "c1", "t1"]));
    assert!(
        !cache
            .add_minions("20000101000000000000", &s(&["x"]))
            .await
            .expect("unknown jid")
    );
    assert_eq!(
        cache.get_job("20000101000000000000").await.expect("get"),
        None
    );
}
