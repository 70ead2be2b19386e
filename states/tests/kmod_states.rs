//! `kmod.present` and `kmod.absent` replayed against Salt 3007.8 (`data/kmod/cases.json`,
//! recorded by `data/kmod/gen.py`) on a host with no kernel modules to manage: no `lsmod`,
//! no `/proc/modules`, no `/lib/modules` (a container, as this machine and CI's). Salt's
//! module fails the first `kmod.mod_list` there, in test mode too, and so does saltq's, with
//! the same message. A host that can list modules is not covered by the recording: skipped.

mod sysrec;

use serde_json::{Map, json};

fn lsmod_installed() -> bool {
    ["/usr/sbin", "/sbin", "/usr/bin", "/bin"]
        .iter()
        .any(|d| std::path::Path::new(d).join("lsmod").exists())
}

#[tokio::test]
async fn kmod_states_match_salt() {
    if lsmod_installed() || std::path::Path::new("/proc/modules").exists() {
        eprintln!(
            "skipped: this host can list kernel modules; the recording is of one that cannot"
        );
        return;
    }
    let rec = sysrec::load("kmod");
    let dir = sysrec::scratch(&rec);
    let ctx = sysrec::ctx_for(&rec, dir.path(), Map::new(), json!({}));
    let failures = sysrec::replay(&rec, &ctx, dir.path(), &[]).await;
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert_eq!(sysrec::steps(&rec), 6);
}

/// What Salt's `kmod` functions answered on this host: nothing available, nothing persisted,
/// and listing loaded modules fails for want of `lsmod`.
#[tokio::test]
async fn kmod_exec_without_modules() {
    if lsmod_installed() || std::path::Path::new("/lib/modules").exists() {
        eprintln!("skipped: this host has lsmod or /lib/modules");
        return;
    }
    let ctx = saltq_exec::CallContext::local(json!({"os_family": "Debian"}), json!({"id": "m"}));
    let call = |fun: &'static str, args: Vec<serde_json::Value>| {
        let ctx = ctx.clone();
        async move { saltq_exec::call_direct(&ctx, fun, args, Map::new()).await }
    };
    assert_eq!(call("kmod.available", vec![]).await.ok(), Some(json!([])));
    assert_eq!(
        call("kmod.check_available", vec![json!("ext4")]).await.ok(),
        Some(json!(false))
    );
    assert_eq!(
        call("kmod.mod_list", vec![json!(true)]).await.ok(),
        Some(json!([]))
    );
    for fun in ["kmod.lsmod", "kmod.mod_list"] {
        let err = format!("{:?}", call(fun, vec![]).await.expect_err("no lsmod"));
        assert!(
            err.contains("Command 'lsmod' cannot be found"),
            "{fun}: {err}"
        );
    }
    let err = format!(
        "{:?}",
        call("kmod.load", vec![json!("dummy")])
            .await
            .expect_err("no lsmod")
    );
    assert!(err.contains("Command 'lsmod' cannot be found"), "{err}");
}
