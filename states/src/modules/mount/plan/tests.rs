//! Unit tests of `mount.mounted`'s pure plan, fed with `mount.active`-shaped facts.

use serde_json::json;

use super::*;

fn s(v: &[&str]) -> Vec<String> {
    v.iter().map(|x| (*x).to_owned()).collect()
}

fn active(v: Value) -> Map<String, Value> {
    v.as_object().cloned().unwrap_or_default()
}

#[test]
fn missing_arguments_are_named_in_order() {
    let (dev, fs) = (json!("/dev/sda1"), json!("ext4"));
    assert_eq!(
        missing_arg("", &Value::Null, &Value::Null),
        Some("Must provide name to mount.mounted")
    );
    assert_eq!(
        missing_arg("/mnt", &json!(""), &fs),
        Some("Must provide device to mount.mounted")
    );
    assert_eq!(
        missing_arg("/mnt", &dev, &Value::Null),
        Some("Must provide fstype to mount.mounted")
    );
    assert_eq!(missing_arg("/mnt", &dev, &fs), None);
    assert_eq!(mount_point("/mnt/data//"), "/mnt/data");
    assert_eq!(mount_point("/"), "/");
}

#[test]
fn bind_source_walks_up_to_the_holding_mount() {
    let facts = active(json!({
        "/": {"device": "/dev/sda1", "opts": ["rw"]},
        "/srv": {"device": "/dev/sdb1", "opts": ["rw", "noatime"]},
        "/mnt/bind": {"device": "/dev/sdb1", "opts": ["rw"]},
    }));
    let bind = s(&["bind"]);
    assert_eq!(
        bind_source("/srv/www/data", &bind, "/mnt/bind", &facts),
        Some(("/dev/sdb1".to_owned(), Some("/srv".to_owned())))
    );
    // Not a bind mount, or the point is not mounted: the device is used as it is.
    assert_eq!(
        bind_source("/srv/www", &s(&["rw"]), "/mnt/bind", &facts),
        None
    );
    assert_eq!(bind_source("/srv/www", &bind, "/mnt/other", &facts), None);
    // A point whose device is not a path (tmpfs) keeps its device.
    let tmp = active(json!({
        "/mnt/bind": {"device": "tmpfs", "opts": ["rw"]},
        "/data": {"device": "tmpfs", "opts": ["rw"]},
    }));
    assert_eq!(
        bind_source("/data", &bind, "/mnt/bind", &tmp),
        Some(("tmpfs".to_owned(), Some("/data".to_owned())))
    );
    assert_eq!(
        bind_source("/elsewhere", &bind, "/mnt/bind", &tmp),
        Some(("tmpfs".to_owned(), None))
    );
}

#[test]
fn device_spellings() {
    assert_eq!(
        uuid_device("UUID=\"ABCD-1234\"").as_deref(),
        Some("abcd-1234")
    );
    assert_eq!(uuid_device("/dev/sda1"), None);
    assert_eq!(label_of("label=data"), Some("data"));
    assert_eq!(label_of("UUID=x"), None);
    assert_eq!(
        mapper_path("/dev/vg-0/lv_root").as_deref(),
        Some("/dev/mapper/vg--0-lv_root")
    );
    assert_eq!(mapper_path("/dev/sda1"), None);
    assert_eq!(
        fuse_device("sshfs#user@host:/srv").as_deref(),
        Some("user@host:/srv")
    );
    assert_eq!(fuse_device("/dev/sda1"), None);
}

#[test]
fn devices_compare_with_aliases_and_regexes() {
    let facts = active(json!({
        "/mnt": {"device": "/dev/sda1", "alt_device": "/dev/disk/by-id/x",
                 "device_uuid": "u-1", "device_label": ""},
    }));
    let mut known = s(&["/dev/sda1", "/dev/sda1"]);
    add_aliases(&mut known, &facts, "/mnt");
    assert_eq!(
        known,
        s(&["/dev/sda1", "/dev/sda1", "/dev/disk/by-id/x", "u-1"])
    );
    assert_eq!(compare_devices(&known, "u-1", &[]), Devices::Same);
    assert_eq!(compare_devices(&known, "/dev/sdb1", &[]), Devices::Differ);
    assert_eq!(
        compare_devices(&known, "/dev/sdb1", &s(&["/dev/sd", "/dev/disk"])),
        Devices::Ignored("/dev/disk/by-id/x".into())
    );
    assert_eq!(
        unmount_reason("LABEL=x", "/dev/sdb1", &s(&["/dev/sda1"])),
        "Forced unmount because devices don't match. Wanted: LABEL=x (/dev/sdb1), current: /dev/sda1"
    );
}

#[test]
fn cached_options_dropped() {
    assert_eq!(dropped_opts(&json!({}), &s(&["rw"])), None);
    assert_eq!(
        dropped_opts(&json!({"opts": ["rw", "noexec"]}), &s(&["rw"])),
        Some(s(&["noexec"]))
    );
    assert_eq!(
        dropped_opts(&json!({"opts": ["rw"]}), &s(&["rw"])),
        Some(vec![])
    );
}

#[test]
fn inactive_targets() {
    let note = |test, comment: &str| Inactive::Note {
        test,
        comment: comment.into(),
    };
    assert_eq!(
        plan_inactive("/mnt", true, true, false, true),
        Inactive::Stop(None, "/mnt would be mounted".into())
    );
    assert_eq!(
        plan_inactive("/mnt", false, true, true, true),
        Inactive::Stop(None, "/mnt would be created and mounted".into())
    );
    assert_eq!(
        plan_inactive("/mnt", false, true, false, false),
        Inactive::Stop(Some(false), "Mount directory is not present".into())
    );
    assert_eq!(
        plan_inactive("/mnt", false, true, true, false),
        Inactive::Mount
    );
    assert_eq!(
        plan_inactive("/mnt", false, false, true, false),
        Inactive::Mkdir("/mnt was created, not mounted".into())
    );
    assert_eq!(
        plan_inactive("/mnt", false, false, false, true),
        note(
            true,
            "/mnt does not exist and would neither be created nor mounted"
        )
    );
    assert_eq!(
        plan_inactive("/mnt", true, false, false, true),
        note(false, "/mnt would not be mounted")
    );
    assert_eq!(
        plan_inactive("/mnt", true, false, false, false),
        note(false, "/mnt not mounted")
    );
}

#[test]
fn fstab_answers() {
    assert_eq!(
        fstab_test("new", "/mnt", true),
        (
            None,
            "/mnt is mounted, but needs to be written to the fstab in order to be made persistent."
                .into()
        )
    );
    assert_eq!(
        fstab_test("change", "/mnt", false),
        (None, "The /mnt fstab entry must be updated.".into())
    );
    assert_eq!(fstab_test("bad config", "/mnt", true).0, Some(false));
    assert_eq!(
        fstab_done("new"),
        (Some("new"), ". Added new entry to the fstab.", false)
    );
    assert_eq!(
        fstab_done("bad config"),
        (None, ". However, the fstab was not found.", true)
    );
    assert_eq!(fstab_done("odd"), (None, "", false));
}
