//! Who may fire which event tag, end to end (issue #31): a client certificate through
//! `EventService.FireEvent` and the `event.send` runner, a minion through
//! `MinionService.SendEvent`, and salt-api's `/hook`, against a real master and minions, with a
//! reactor on `salt/minion/*/start` that must not run for a refused event.

use std::path::Path;
use std::time::Duration;

use saltq_proto::v1::{
    self as pb, event_service_client::EventServiceClient,
    minion_service_client::MinionServiceClient, runner_service_client::RunnerServiceClient,
};
use saltq_tests::{Master, eventually, watched_until};
use saltq_transport::{Channel, TransportKind, value};
use serde_json::{Value, json};
use tonic::Code;

use crate::saltapi::Api;

/// Connects over QUIC as the holder of `cert`/`key`, trusting the master's CA.
async fn dial(master: &Master, cert: &Path, key: &Path) -> Channel {
    crate::fuzz_grpc::dial(master, TransportKind::Quic, cert, key).await
}

/// A channel as the client certificate `saltq pki issue name` made.
async fn as_client(master: &Master, name: &str) -> Channel {
    let dir = master.pki_dir().join("issued");
    dial(
        master,
        &dir.join(format!("{name}.crt")),
        &dir.join(format!("{name}.key")),
    )
    .await
}

/// Asserts a refusal's code and exact message.
#[track_caller]
fn refused<T: std::fmt::Debug>(r: Result<T, tonic::Status>, code: Code, message: &str) {
    match r {
        Ok(v) => panic!("accepted ({v:?}), expected {code:?} {message:?}"),
        Err(s) => assert_eq!((s.code(), s.message()), (code, message), "{s:?}"),
    }
}

fn fire(tag: &str, data: Value) -> pb::FireEventRequest {
    pb::FireEventRequest {
        tag: tag.into(),
        data: Some(value::json_to_struct(&data)),
    }
}

const HOOK_ONLY: &str =
    "without the right to run the event.send runner a client fires only under salt/netapi/hook/";
const ADMIN_ONLY: &str = "only the master's admin certificate may fire them";

/// `nobody` (a certificate with no ACL entry) and `alice` (`@runner`) cannot fire the master's
/// or a minion's tags, in any spelling, through FireEvent or `event.send`; `nobody` fires only
/// under `salt/netapi/hook/`; a minion cannot speak for the master or another minion; `/hook`
/// stays under `salt/netapi/hook/`; the reactor on `salt/minion/*/start` runs for the admin's
/// event only; and the admin still fires anything.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_caller_fires_only_what_the_tag_rules_allow() {
    let (master, _db1, p2) = tokio::task::spawn_blocking(|| {
        let master = Master::start_with(|dir| {
            // Sets grain reacted_<who> on the minion the event names, for events carrying `who`
            // (a minion's real start event does not).
            let sls = dir.join("spoof.sls");
            std::fs::write(
                &sls,
                "{% if 'who' in data %}\nreacted:\n  local.grains.setval:\n    - tgt: {{ data['id'] }}\n\
                 \x20   - arg: [reacted_{{ data['who'] }}, true]\n{% endif %}\n",
            )
            .unwrap();
            format!(
                "auto_accept: true\npublisher_acl:\n  alice: ['@runner']\n\
                 reactor:\n  - 'salt/minion/*/start':\n    - {}\n\
                 rest_cherrypy: {{port: 0, host: 127.0.0.1, webhook_disable_auth: true}}\n",
                sls.display()
            )
        });
        let db1 = master.minion("db1", "");
        let p2 = master.minion("p2", "");
        master.wait_for("db1");
        master.wait_for("p2");
        for name in ["nobody", "alice"] {
            let o = master.saltq(&["pki", "issue", name]);
            assert_eq!(o.code, 0, "{o:?}");
        }
        (master, db1, p2)
    })
    .await
    .unwrap();
    let watch = master.watch_all_events("*");

    // nobody: the repro of the issue, and the spellings that slipped past a prefix rule.
    let mut nobody = EventServiceClient::new(as_client(&master, "nobody").await);
    let spoof = |who: &str| json!({"id": "db1", "who": who, "spoof": true});
    for (tag, rule) in [
        (
            "salt/minion/db1/start",
            format!("tags under salt/minion/ belong to the minions; {ADMIN_ONLY}"),
        ),
        (
            "salt//minion/db1/start",
            format!(
                "(read as \"salt/minion/db1/start\"): tags under salt/minion/ belong to the \
                 minions; {ADMIN_ONLY}"
            ),
        ),
        (
            "salt/auth",
            format!("tags under salt/auth/ belong to the master; {ADMIN_ONLY}"),
        ),
        (
            "Salt//Auth",
            format!(
                "(read as \"Salt/Auth\"): tags under salt/auth/ belong to the master; {ADMIN_ONLY}"
            ),
        ),
        (
            "salt/job/20260101000000000000/ret/db1",
            format!("tags under salt/job/ belong to the master; {ADMIN_ONLY}"),
        ),
        (
            "minion_start",
            format!("minion_start belongs to the minions; {ADMIN_ONLY}"),
        ),
        ("myapp/deploy", HOOK_ONLY.to_owned()),
    ] {
        let sep = if rule.starts_with('(') { " " } else { ": " };
        refused(
            nobody.fire_event(fire(tag, spoof("nobody"))).await,
            Code::PermissionDenied,
            &format!("client nobody may not fire {tag:?}{sep}{rule}"),
        );
    }
    refused(
        nobody
            .fire_event(fire("salt/netapi/hook/../../auth", spoof("nobody")))
            .await,
        Code::PermissionDenied,
        "client nobody may not fire \"salt/netapi/hook/../../auth\": event tags may not have a \
         \"..\" segment",
    );
    nobody
        .fire_event(fire("salt/netapi/hook/nobody", json!({"ok": true})))
        .await
        .expect("nobody fires under the hook");
    let mut runner = RunnerServiceClient::new(as_client(&master, "nobody").await);
    let send_with = |tag: &str, data: Value| pb::RunRunnerRequest {
        fun: "event.send".into(),
        arg: vec![value::to_prost(&json!(tag))],
        kwarg: Some(value::json_to_struct(&json!({ "data": data }))),
    };
    let send = |tag: &str| send_with(tag, spoof("runner"));
    refused(
        runner.run_runner(send("salt/minion/db1/start")).await,
        Code::PermissionDenied,
        "client nobody may not run runner event.send: that needs @runner (or a runner_acl entry) \
         in its publisher_acl or client_acl entry",
    );

    // alice may run event.send: any tag outside the master's namespaces, never one inside.
    let alice_channel = as_client(&master, "alice").await;
    let mut alice = EventServiceClient::new(alice_channel.clone());
    refused(
        alice
            .fire_event(fire("salt/minion/db1/start", spoof("alice")))
            .await,
        Code::PermissionDenied,
        &format!(
            "client alice may not fire \"salt/minion/db1/start\": tags under salt/minion/ belong \
             to the minions; {ADMIN_ONLY}"
        ),
    );
    alice
        .fire_event(fire("myapp/alice", json!({"ok": true})))
        .await
        .expect("alice fires her own tag");
    let mut runner = RunnerServiceClient::new(alice_channel);
    for tag in ["salt/minion/db1/start", "salt/minion//db1/start"] {
        let e = runner.run_runner(send(tag)).await.unwrap_err();
        assert_eq!(e.code(), Code::PermissionDenied, "{e:?}");
        assert!(
            e.message()
                .starts_with(&format!("client alice may not fire {tag:?}")),
            "{e:?}"
        );
    }
    let r = runner
        .run_runner(send_with("myapp/alice-runner", json!({"ok": true})))
        .await
        .expect("event.send of her own tag")
        .into_inner();
    assert!(r.success, "{r:?}");

    // A minion speaks for itself only, whatever the spelling.
    let mut minion = MinionServiceClient::new(
        dial(
            &master,
            &p2.pki_dir().join("minion.crt"),
            &p2.pki_dir().join("minion.key"),
        )
        .await,
    );
    let event = |tag: &str| pb::SendEventRequest {
        tag: tag.into(),
        data: Some(value::json_to_struct(&json!({"spoof": true}))),
    };
    for (tag, rule) in [
        (
            "Salt//auth",
            " (read as \"Salt/auth\"): tags under salt/auth/ belong to the master",
        ),
        (
            "salt//minion/db1/start",
            " (read as \"salt/minion/db1/start\"): tags under salt/minion/db1/ belong to minion \
             db1",
        ),
        (
            "salt/beacon/db1/x",
            ": tags under salt/beacon/db1/ belong to minion db1",
        ),
        (
            "salt/minion/p2/../db1/start",
            ": event tags may not have a \"..\" segment",
        ),
    ] {
        refused(
            minion.send_event(event(tag)).await,
            Code::PermissionDenied,
            &format!("minion p2 may not fire {tag:?}{rule}"),
        );
    }
    minion
        .send_event(pb::SendEventRequest {
            tag: "salt/beacon/p2/x".into(),
            data: None,
        })
        .await
        .expect("its own beacon tag");

    // /hook: what the path spells stays under salt/netapi/hook/.
    let hook_result = tokio::task::spawn_blocking({
        let api = Api::new(&master, true);
        move || {
            let mut out = Vec::new();
            for path in ["/hook/..%2F..%2Fauth", "/hook/x%0Atag:%20salt%2Fauth"] {
                let r = api.json("POST", path, None, &json!({"spoof": true}));
                out.push((path, r.status, r.body.clone()));
            }
            let r = api.json("POST", "/hook//deploy/./x/", None, &json!({"ok": true}));
            out.push(("/hook//deploy/./x/", r.status, r.body.clone()));
            out
        }
    })
    .await
    .unwrap();
    assert_eq!(hook_result[0].1, 400, "{hook_result:?}");
    assert!(
        hook_result[0].2.contains("has a") && hook_result[0].2.contains("segment"),
        "{hook_result:?}"
    );
    assert_eq!(hook_result[1].1, 400, "{hook_result:?}");
    assert_eq!(hook_result[2].1, 200, "{hook_result:?}");

    // The admin still fires anything: its spoof runs the reaction, nobody's and alice's did not.
    let mut admin = EventServiceClient::new(
        dial(
            &master,
            &master.pki_dir().join("admin.crt"),
            &master.pki_dir().join("admin.key"),
        )
        .await,
    );
    admin
        .fire_event(fire(
            "salt/minion/db1/start",
            json!({"id": "db1", "who": "admin"}),
        ))
        .await
        .expect("the admin fires a minion's tag");
    admin
        .fire_event(fire("e2e/event_acl/done", json!({})))
        .await
        .expect("marker");

    let lines = tokio::task::spawn_blocking(move || {
        watched_until(watch, Duration::from_secs(30), |lines| {
            lines.iter().any(|l| l.starts_with("e2e/event_acl/done\t"))
        })
    })
    .await
    .unwrap();
    let tags: Vec<&str> = lines.iter().filter_map(|l| l.split('\t').next()).collect();
    for want in [
        "salt/netapi/hook/nobody",
        "myapp/alice",
        "myapp/alice-runner",
        "salt/beacon/p2/x",
        "salt/netapi/hook/deploy/x",
        "e2e/event_acl/done",
    ] {
        assert!(tags.contains(&want), "{want} missing from {tags:?}");
    }
    let leaked: Vec<&String> = lines.iter().filter(|l| l.contains("spoof")).collect();
    assert!(
        leaked.is_empty(),
        "refused events reached the bus: {leaked:#?}"
    );

    tokio::task::spawn_blocking(move || {
        eventually(
            "the reactor ran for the admin's event",
            Duration::from_secs(30),
            || {
                let o = master.saltq(&["db1", "grains.get", "reacted_admin", "--out", "json"]);
                (o.json() == json!({"db1": true})).then_some(())
            },
        );
        for who in ["nobody", "alice", "runner"] {
            let key = format!("reacted_{who}");
            let o = master.saltq(&["db1", "grains.get", &key, "--out", "json"]);
            assert_eq!(
                o.json(),
                json!({"db1": ""}),
                "{who}'s spoof ran the reaction"
            );
        }
    })
    .await
    .unwrap();
}
