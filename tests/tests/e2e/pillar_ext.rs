//! Pillar secrets, external pillar and masterless pillar (issue #33), end to end:
//! `saltq-minion call --local` compiling its own pillar from `pillar_roots`, `pillar:`,
//! `cmd_json`, `file_tree` and `stack` compared with what `salt-call --local` 3007.8 gave
//! for the same files (`data/pillar_ext/salt3007_masterless.json`, how it was recorded is
//! in its `_recorded`), `state.apply` with a `pillar=` override; a `#!yaml|gpg` pillar value
//! decrypted with a key pair the test makes with the real gpg, and one that cannot be
//! decrypted giving an error naming the file while the secret never shows; and through a
//! master, a state reading a gpg-encrypted pillar value and an `ext_pillar` from the real
//! PostgreSQL.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use saltq_tests::{Master, Scratch, bin};
use serde_json::{Value, json};

const FIXTURE: &str = include_str!("data/pillar_ext/salt3007_masterless.json");

fn write(dir: &Path, rel: &str, text: &str) {
    let p = dir.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

/// Writes the recorded tree under `root` (the recording's `/tmp/ext33rec` replaced).
fn recorded_tree(root: &Path) -> Value {
    let doc: Value = serde_json::from_str(FIXTURE).unwrap();
    for (rel, text) in doc["files"].as_object().unwrap() {
        let text = text
            .as_str()
            .unwrap()
            .replace("/tmp/ext33rec", &root.display().to_string());
        // saltq's minion has no log_file key; root_dir is the scratch dir already.
        let text: String = text
            .lines()
            .filter(|l| !l.starts_with("log_file:") && !l.starts_with("root_dir:"))
            .map(|l| format!("{l}\n"))
            .collect();
        write(root, rel, &text);
    }
    doc
}

/// `saltq-minion -c DIR call ARGS --out json`: the `local` value and the exit code.
fn call_local(conf: &Path, args: &[&str]) -> (Value, i32, String) {
    let out = Command::new(bin("saltq-minion"))
        .arg("-c")
        .arg(conf)
        .arg("call")
        .args(args)
        .args(["--out", "json"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let v: Value =
        serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}\n{stderr}"));
    (v["local"].clone(), out.status.code().unwrap_or(-1), stderr)
}

/// A key pair made by the real gpg in `home`, and `value` encrypted to it (armored).
fn gpg_keyring_and_cipher(home: &Path, value: &str) -> String {
    std::fs::create_dir_all(home).unwrap();
    let gpg = |args: &[&str], input: Option<&str>| {
        let mut child = Command::new("gpg")
            .arg("--homedir")
            .arg(home)
            .args([
                "--batch",
                "--no-tty",
                "--pinentry-mode",
                "loopback",
                "--passphrase",
                "",
            ])
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("gpg is installed (.ci/run installs gnupg)");
        if let Some(i) = input {
            child.stdin.take().unwrap().write_all(i.as_bytes()).unwrap();
        }
        drop(child.stdin.take());
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    gpg(
        &[
            "--quick-gen-key",
            "saltq e2e <e2e@saltq.invalid>",
            "future-default",
            "default",
            "never",
        ],
        None,
    );
    gpg(
        &[
            "--armor",
            "--trust-model",
            "always",
            "-r",
            "e2e@saltq.invalid",
            "-e",
        ],
        Some(value),
    )
}

/// The SLS text of a `#!yaml|gpg` pillar with `key: <cipher>`.
fn gpg_sls(key: &str, cipher: &str) -> String {
    let indented = cipher.trim_end().replace('\n', "\n    ");
    format!("#!yaml|gpg\n{key}:\n  password: |\n    {indented}\n  user: app\n")
}

#[test]
fn masterless_pillar_items_and_state_apply_match_salt_call_local() {
    let dir = Scratch::new("pillar-masterless");
    let doc = recorded_tree(&dir.0);
    let conf = dir.0.join("conf");
    let (items, code, err) = call_local(&conf, &["--local", "pillar.items"]);
    assert_eq!(code, 0, "{err}");
    // Salt's file_tree gives bytes, printed by salt-call's json as b'...'; saltq the text.
    let mut want = doc["pillar_items"].clone();
    want["app"]["port"] = json!("8080");
    want["name"] = json!("x");
    assert_eq!(items, want);
    assert_eq!(
        serde_json::to_string(&items).unwrap(),
        serde_json::to_string(&want).unwrap(),
        "key order as Salt's"
    );

    // file_client: local in the config is masterless without --local, and `pillar=` is
    // merged over the compiled pillar as Salt's.
    let (mut ret, code, err) = call_local(
        &conf,
        &[
            "state.apply",
            r#"pillar={"override": "cli", "shared": {"a": "cli"}}"#,
        ],
    );
    assert_eq!(code, 0, "{err}");
    for v in ret.as_object_mut().unwrap().values_mut() {
        let m = v.as_object_mut().unwrap();
        m.remove("start_time");
        m.remove("duration");
    }
    assert_eq!(ret, doc["state_apply"]);
}

#[test]
fn masterless_gpg_pillar_decrypts_and_an_undecryptable_value_names_the_file_not_the_secret() {
    let dir = Scratch::new("pillar-gpg-local");
    let root = &dir.0;
    let keys = root.join("conf/gpgkeys");
    let cipher = gpg_keyring_and_cipher(&keys, "hunter2-e2e-secret");
    write(
        root,
        "pillar/top.sls",
        "base:\n  '*':\n    - secrets\n    - plain\n",
    );
    write(root, "pillar/secrets.sls", &gpg_sls("db", &cipher));
    write(root, "pillar/plain.sls", "plain: {{ grains['id'] }}\n");
    write(root, "states/top.sls", "base:\n  '*':\n    - usedb\n");
    write(
        root,
        "states/usedb.sls",
        &format!(
            "{}/out:\n  file.managed:\n    - contents: {{{{ pillar['db']['password'] }}}}\n",
            root.display()
        ),
    );
    let conf = format!(
        "id: gpg-local\nfile_client: local\ncachedir: {r}/cache\npki_dir: {r}/pki\n\
         file_roots: {{base: [{r}/states]}}\npillar_roots: {{base: [{r}/pillar]}}\n",
        r = root.display()
    );
    write(root, "conf/minion", &conf);
    let (items, code, err) = call_local(&root.join("conf"), &["pillar.items"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        items,
        json!({"db": {"password": "hunter2-e2e-secret", "user": "app"}, "plain": "gpg-local"})
    );
    let (ret, code, err) = call_local(&root.join("conf"), &["state.apply"]);
    assert_eq!(code, 0, "{ret} {err}");
    assert_eq!(
        std::fs::read_to_string(root.join("out"))
            .unwrap()
            .trim_end(),
        "hunter2-e2e-secret"
    );

    // Another key pair: the value cannot be decrypted with the configured keys.
    let other = Scratch::new("pillar-gpg-other");
    let foreign = gpg_keyring_and_cipher(&other.0.join("keys"), "other-secret-never-shown");
    write(root, "pillar/secrets.sls", &gpg_sls("db", &foreign));
    let (items, code, err) = call_local(&root.join("conf"), &["pillar.items"]);
    assert_eq!(code, 0, "{err}");
    // `_errors` in Salt's words (pillar_safe_render_error, the default); the full error,
    // naming the file, the key path and the key directory, in the log.
    let errors = items["_errors"].to_string();
    assert!(
        errors.contains("Rendering SLS 'secrets' failed"),
        "{errors}"
    );
    assert!(err.contains("secrets.sls"), "{err}");
    assert!(err.contains(&keys.display().to_string()), "{err}");
    assert!(err.contains("db:password"), "{err}");
    assert_eq!(items["plain"], "gpg-local", "the other files still compile");
    let everything = format!("{items}{err}");
    assert!(
        !everything.contains("other-secret-never-shown"),
        "{everything}"
    );
    assert!(!everything.contains("hunter2"), "{everything}");
}

#[test]
fn master_serves_gpg_pillar_to_a_state_and_ext_pillar_from_postgresql() {
    if std::env::var_os("SALTQ_TEST_POSTGRES").is_none() {
        eprintln!("skipped: SALTQ_TEST_POSTGRES is not set");
        return;
    }
    let out = Scratch::new("pillar-ext-out");
    let target = out.0.join("secret.txt");
    let psql = Command::new("psql")
        .args([
            "-h",
            "127.0.0.1",
            "-U",
            "postgres",
            "-d",
            "test",
            "-v",
            "ON_ERROR_STOP=1",
            "-c",
        ])
        .arg(
            "CREATE TABLE IF NOT EXISTS e2e_ext_pillar (minion text, k text, v text); \
             DELETE FROM e2e_ext_pillar WHERE minion = 'pgx-1'; \
             INSERT INTO e2e_ext_pillar VALUES ('pgx-1', 'role', 'db'), ('pgx-1', 'zone', 'eu')",
        )
        .output()
        .expect("psql runs");
    assert!(
        psql.status.success(),
        "{}",
        String::from_utf8_lossy(&psql.stderr)
    );
    let master = Master::start_with(|dir| {
        let keys = dir.join("gpgkeys");
        let cipher = gpg_keyring_and_cipher(&keys, "master-side-secret");
        let pillar = dir.join("pillar");
        write(&pillar, "top.sls", "base:\n  '*':\n    - secrets\n");
        write(&pillar, "secrets.sls", &gpg_sls("db", &cipher));
        let tree = dir.join("tree");
        write(
            &tree,
            "secret.sls",
            &format!(
                "{}:\n  file.managed:\n    - contents: \"{{{{ pillar['db']['password'] }}}} {{{{ pillar['fromdb']['role'] }}}}\"\n",
                target.display()
            ),
        );
        format!(
            "auto_accept: true\ngpg_keydir: {keys}\npillar_roots:\n  base:\n    - {p}\nfile_roots:\n  base:\n    - {t}\n\
             postgres:\n  host: 127.0.0.1\n  user: postgres\n  pass: ''\n  db: test\n\
             ext_pillar:\n  - postgres:\n      fromdb:\n        query: \"SELECT k, v FROM e2e_ext_pillar WHERE minion = %s ORDER BY k\"\n",
            keys = keys.display(),
            p = pillar.display(),
            t = tree.display()
        )
    });
    let _m = master.minion("pgx-1", "");
    master.wait_for("pgx-1");
    let o = master.saltq(&[
        "-L",
        "pgx-1",
        "pillar.items",
        "--out",
        "json",
        "--static",
        "-t",
        "30",
    ]);
    let items = o.json()["pgx-1"].clone();
    assert_eq!(
        items["fromdb"],
        json!({"role": "db", "zone": "eu"}),
        "{items}"
    );
    assert_eq!(items["db"]["password"], "master-side-secret", "{items}");
    let o = master.saltq(&[
        "-L",
        "pgx-1",
        "state.apply",
        "secret",
        "--out",
        "json",
        "--static",
        "-t",
        "30",
    ]);
    assert_eq!(o.code, 0, "{}", o.stdout);
    assert_eq!(
        std::fs::read_to_string(&target).unwrap().trim_end(),
        "master-side-secret db"
    );
}

/// Through a master: `ext_pillar_first` (the SLS Jinja sees the external pillar),
/// `salt[...]` in pillar Jinja run on the master with the minion's grains, `pillar.ext` with
/// a source `on_demand_ext_pillar` allows (and `pillar=` merged last), the refusal in Salt's
/// words for one it does not; and bad files beside good ones: a 100 MB SLS, an include cycle
/// and a macro that recurses forever each end as an error naming the SLS while the other
/// files compile and the other minion is served.
#[test]
fn master_pillar_ext_on_demand_first_and_bad_files_beside_good_ones() {
    let master = Master::start_with(|dir| {
        let pillar = dir.join("pillar");
        write(
            &pillar,
            "top.sls",
            "base:\n  '*':\n    - good\n    - huge\n    - cyc1\n    - rec\n",
        );
        write(
            &pillar,
            "good.sls",
            "seen: {{ pillar.get('from_ext', 'none') }}\nwho: {{ salt['grains.get']('id') }}\n",
        );
        write(&pillar, "cyc1.sls", "include: [cyc2]\ncyc1: 1\n");
        write(&pillar, "cyc2.sls", "include: [cyc1]\ncyc2: 2\n");
        write(
            &pillar,
            "rec.sls",
            "{% macro f(n) %}{{ f(n) }}{% endmacro %}rec: {{ f(1) }}\n",
        );
        // 100 MB of YAML, past the 32 MiB bound.
        let line = format!("k: {}\n", "x".repeat(1021));
        let mut f = std::fs::File::create(pillar.join("huge.sls")).unwrap();
        for _ in 0..(100 * 1024) {
            f.write_all(line.as_bytes()).unwrap();
        }
        format!(
            "auto_accept: true\npillar_roots:\n  base:\n    - {}\next_pillar_first: true\n\
             ext_pillar:\n  - cmd_json: >-\n      echo '{{\"from_ext\": \"e\"}}'\n\
             on_demand_ext_pillar:\n  - cmd_yaml\n",
            pillar.display()
        )
    });
    let _a = master.minion("pext-a", "");
    let _b = master.minion("pext-b", "");
    master.wait_for("pext-a");
    master.wait_for("pext-b");
    let call = |tgt: &str, args: &[&str]| {
        let mut full = vec!["-L", tgt];
        full.extend_from_slice(args);
        full.extend_from_slice(&["--out", "json", "--static", "-t", "60"]);
        master.saltq(&full)
    };
    let items = call("pext-a", &["pillar.items"]).json()["pext-a"].clone();
    assert_eq!(items["from_ext"], "e", "{items}");
    assert_eq!(items["seen"], "e", "ext_pillar_first: {items}");
    assert_eq!(items["who"], "pext-a", "{items}");
    assert_eq!(
        (items["cyc1"].clone(), items["cyc2"].clone()),
        (json!(1), json!(2))
    );
    let errors = items["_errors"].as_array().cloned().unwrap_or_default();
    let text = serde_json::to_string(&errors).unwrap();
    assert_eq!(errors.len(), 2, "{text}");
    assert!(text.contains("'huge'") && text.contains("'rec'"), "{text}");
    assert!(!text.contains("xxxxxxxx"), "{text}");

    // The other minion is served all the while.
    let o = call("pext-b", &["test.ping"]);
    assert_eq!(o.json()["pext-b"], json!(true), "{}", o.stdout);
    let b = call("pext-b", &["pillar.item", "who"]).json()["pext-b"].clone();
    assert_eq!(b["who"], "pext-b");

    let ext = call(
        "pext-a",
        &["pillar.ext", "{cmd_yaml: 'echo od: 1'}", "pillar={over: 2}"],
    )
    .json()["pext-a"]
        .clone();
    assert_eq!(ext["od"], 1, "{ext}");
    assert_eq!(ext["over"], 2, "{ext}");
    assert_eq!(ext["seen"], "e", "{ext}");
    let o = call("pext-a", &["pillar.ext", "{cmd_json: 'echo {}'}"]);
    assert!(
        o.stdout.contains(
            "The following ext_pillar modules are not allowed for on-demand pillar data: \
             cmd_json. Valid on-demand ext_pillar modules are: cmd_yaml."
        ),
        "{}",
        o.stdout
    );
}

/// Masterless `pillar.ext` (`saltq-minion call --local`, as `salt-call --local`): Salt's
/// default `on_demand_ext_pillar` (libvirt, virtkey) refuses `cmd_yaml` in Salt's words
/// (salt-call --local 3007.8 printed the same message as an `[ERROR ]` log line and answered
/// the plain pillar; saltq answers it as the call's error); an argument that is not a
/// mapping is refused with Salt's message too.
#[test]
fn masterless_pillar_ext_refuses_what_on_demand_ext_pillar_does_not_list() {
    let dir = Scratch::new("pillar-ext-local");
    let pillar = dir.0.join("pillar");
    write(&pillar, "top.sls", "base:\n  '*':\n    - a\n");
    write(&pillar, "a.sls", "a: 1\n");
    let conf = dir.0.join("conf");
    write(
        &conf,
        "minion",
        &format!(
            "id: web1\nfile_client: local\nroot_dir: {}\npillar_roots:\n  base:\n    - {}\n",
            dir.0.display(),
            pillar.display()
        ),
    );
    let (items, code, err) = call_local(&conf, &["pillar.items"]);
    assert_eq!((items, code), (json!({"a": 1}), 0), "{err}");
    let (ret, code, _) = call_local(&conf, &["pillar.ext", "{cmd_yaml: 'echo od: 1'}"]);
    assert_ne!(code, 0);
    assert!(
        ret.as_str().unwrap_or_default().contains(
            "The following ext_pillar modules are not allowed for on-demand pillar data: \
             cmd_yaml. Valid on-demand ext_pillar modules are: libvirt, virtkey. The valid \
             modules can be adjusted by setting the 'on_demand_ext_pillar' config option."
        ),
        "{ret}"
    );
    let (ret, code, _) = call_local(&conf, &["pillar.ext", "[1]"]);
    assert_ne!(code, 0);
    assert!(
        ret.as_str()
            .unwrap_or_default()
            .contains("On-demand pillar [1] is not formatted as a dictionary"),
        "{ret}"
    );
}
